//! Runs a probe on a set of CPUs: the lifecycle every probe shares.
//!
//! Process-wide, for the duration of the run: memory locked, a `/dev/cpu_dma_latency`
//! request held, tracefs armed for `--breaktrace`, the coordinating thread moved off
//! the measured CPUs when others exist. Per measuring thread: a small fixed stack,
//! pinned, at the requested policy (or the best one permitted, said loudly), timer
//! slack set, stack prefaulted, then the probe's worker. Every knob is held by a guard
//! and restored on every path out.

use crate::live::LiveStats;
use crate::notice::Notice;
use crate::probe::{Placement, Probe, Window, Worker};
use latlab_model::run::{Conditions, Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::sched::{self, Policy, PolicyGuard};
use latlab_rt::slack::{self, TimerSlackGuard};
use latlab_rt::{affinity, memory, signal, RtError};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{mpsc, Barrier};
use std::time::{Duration, Instant, SystemTime};

/// Stack of each measuring thread: small and fixed, so locking it costs little.
pub const MEASURING_STACK_BYTES: usize = 256 * 1024;
/// How much of it is touched before measuring.
const PREFAULT_BYTES: usize = 32 * 1024;
/// How often the coordinating thread checks for the end or a stop request.
const POLL: Duration = Duration::from_millis(20);

/// What to run, where, and for how long.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// CPUs to measure on, one thread each.
    pub cpus: Vec<usize>,
    /// Requested scheduling policy of the measuring threads.
    pub policy: SchedSpec,
    /// Timer slack for the measuring threads (`None` = leave as is).
    pub timer_slack_ns: Option<u64>,
    /// Measured span (`None` = until stopped).
    pub duration: Option<Nanos>,
    /// Discarded span before it.
    pub warm_up: Nanos,
    /// How much memory to lock (`None` = none).
    pub lock_memory: Option<memory::LockScope>,
    /// `/dev/cpu_dma_latency` request in µs (`None` = leave the system alone).
    pub dma_latency_us: Option<i32>,
    /// The phase name recorded in the streams.
    pub phase: String,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// One stream per thread, in thread order.
    pub streams: Vec<Stream>,
    /// Events (break trace).
    pub events: Vec<Event>,
    /// Warnings, most important first.
    pub notices: Vec<Notice>,
    /// What was in force.
    pub conditions: Conditions,
    /// Wall-clock start.
    pub started_at: SystemTime,
    /// Wall-clock end.
    pub ended_at: SystemTime,
    /// Stopped early by the stop flag.
    pub interrupted: bool,
}

/// Why a run could not happen.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The request cannot work on this system as given (exit code 2).
    #[error("{0}")]
    Config(String),
    /// Something failed while setting up or measuring (exit code 3).
    #[error("{0}")]
    Runtime(String),
}

/// Process-wide guards held for the duration of a run.
pub struct SystemSetup {
    _memory: Option<memory::MemoryLock>,
    _dma: Option<latlab_rt::dma::DmaLatencyGuard>,
    /// Warnings raised while setting up.
    pub notices: Vec<Notice>,
    /// What is in force.
    pub conditions: Conditions,
}

impl SystemSetup {
    /// Locks memory and requests the DMA latency, degrading with a notice when refused.
    pub fn apply(
        lock_memory: Option<memory::LockScope>,
        dma_latency_us: Option<i32>,
    ) -> SystemSetup {
        let mut notices = Vec::new();
        let mut conditions = Conditions {
            euid: effective_uid(),
            ..Conditions::default()
        };
        let memory_lock = if let Some(scope) = lock_memory {
            match memory::MemoryLock::lock(scope) {
                Ok(lock) => {
                    conditions.memory_locked = true;
                    Some(lock)
                }
                Err(e) => {
                    notices.push(Notice::MemoryNotLocked {
                        reason: e.to_string(),
                        limit: memory::memlock_limit(),
                    });
                    None
                }
            }
        } else {
            notices.push(Notice::MemoryLockSkipped);
            None
        };
        let dma = match dma_latency_us {
            Some(us) => match latlab_rt::dma::DmaLatencyGuard::request(us) {
                Ok(g) => {
                    conditions.dma_latency_us = Some(us);
                    Some(g)
                }
                Err(e) => {
                    notices.push(Notice::DmaLatencyUnavailable {
                        reason: e.to_string(),
                    });
                    None
                }
            },
            None => None,
        };
        SystemSetup {
            _memory: memory_lock,
            _dma: dma,
            notices,
            conditions,
        }
    }
}

fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).and_then(|u| u.parse().ok()))
        })
        .unwrap_or(u32::MAX)
}

/// The kernel policy for a spec.
pub fn policy_of(spec: SchedSpec) -> Policy {
    match spec {
        SchedSpec::Other { nice } => Policy::Other { nice },
        SchedSpec::Batch { nice } => Policy::Batch { nice },
        SchedSpec::Idle => Policy::Idle,
        SchedSpec::Fifo { priority } => Policy::Fifo { priority },
        SchedSpec::Rr { priority } => Policy::RoundRobin { priority },
        SchedSpec::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } => Policy::Deadline {
            runtime_ns: runtime_ns.0 as u64,
            deadline_ns: deadline_ns.0 as u64,
            period_ns: period_ns.0 as u64,
        },
    }
}

fn spec_of(policy: Policy) -> SchedSpec {
    match policy {
        Policy::Other { nice } => SchedSpec::Other { nice },
        Policy::Batch { nice } => SchedSpec::Batch { nice },
        Policy::Idle => SchedSpec::Idle,
        Policy::Fifo { priority } => SchedSpec::Fifo { priority },
        Policy::RoundRobin { priority } => SchedSpec::Rr { priority },
        Policy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } => SchedSpec::Deadline {
            runtime_ns: Nanos(runtime_ns as i64),
            deadline_ns: Nanos(deadline_ns as i64),
            period_ns: Nanos(period_ns as i64),
        },
    }
}

/// A measuring thread's report after setting itself up.
struct Ready {
    placement: Placement,
    refused: Option<String>,
}

/// Per-thread guards, dropped (restored) on the measuring thread when it ends.
struct ThreadGuards {
    _policy: Option<PolicyGuard>,
    _slack: Option<TimerSlackGuard>,
}

fn set_up_thread(
    thread: usize,
    cpu: usize,
    request: &RunRequest,
) -> Result<(Ready, ThreadGuards), RunError> {
    let deadline = matches!(request.policy, SchedSpec::Deadline { .. });
    // SCHED_DEADLINE tasks must be allowed on the whole root domain, so they cannot
    // be pinned; the runner says so in a notice.
    if !deadline {
        affinity::pin_current_thread(cpu).map_err(|e| {
            RunError::Config(format!(
                "cannot pin a measuring thread to CPU {cpu} ({}): choose CPUs this \
                 process may use (see `taskset -p $$`)",
                e.source
            ))
        })?;
    }
    let wanted = policy_of(request.policy);
    let (policy_guard, refused) = match PolicyGuard::apply(wanted) {
        Ok(g) => (Some(g), None),
        Err(e) if e.is_permission() => (None, Some(sched::explain_refusal(&wanted, &e))),
        Err(e) => {
            let why = sched::explain_refusal(&wanted, &e);
            return Err(RunError::Config(format!(
                "the kernel refused scheduling policy {} ({}): {why}",
                request.policy, e.source
            )));
        }
    };
    let in_force = sched::current_thread()
        .map(spec_of)
        .unwrap_or(SchedSpec::Other { nice: 0 });
    let slack_guard = match request.timer_slack_ns {
        Some(ns) => Some(TimerSlackGuard::set(ns).map_err(|e| RunError::Runtime(e.to_string()))?),
        None => None,
    };
    memory::prefault_stack::<PREFAULT_BYTES>();
    Ok((
        Ready {
            placement: Placement {
                thread,
                cpu: (!deadline).then_some(cpu),
                policy: in_force,
                timer_slack_ns: slack::current_ns(),
            },
            refused,
        },
        ThreadGuards {
            _policy: policy_guard,
            _slack: slack_guard,
        },
    ))
}

/// Follows a run from the coordinating thread (the live display).
pub trait RunObserver {
    /// Every measuring thread is set up; `notices` are the warnings known so far
    /// (refused policy, memory not locked), to be shown before measuring starts.
    fn ready(&mut self, notices: &[Notice]);

    /// Called every [`refresh_every`](RunObserver::refresh_every) while measuring.
    fn progress(&mut self, live: &[LiveStats], elapsed: Duration);

    /// How often to call [`progress`](RunObserver::progress).
    fn refresh_every(&self) -> Duration;
}

/// Runs `probe` as `request` says. `live` must hold one entry per CPU; `observer`
/// hears from the coordinating thread while measuring.
pub fn run_probe(
    probe: &dyn Probe,
    request: &RunRequest,
    setup: &SystemSetup,
    stop: &AtomicBool,
    live: &[LiveStats],
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    let observe_every = observer.refresh_every();
    let n = request.cpus.len();
    assert_eq!(live.len(), n, "one live entry per measured CPU");
    signal::install_wake_handler().map_err(|e| RunError::Runtime(e.to_string()))?;
    let mut notices = setup.notices.clone();
    let mut conditions = setup.conditions.clone();

    let tids: Vec<AtomicI32> = (0..n).map(|_| AtomicI32::new(0)).collect();
    let start_at = AtomicI64::new(0);
    let abort = AtomicBool::new(false);
    let go = Barrier::new(n + 1);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Ready, RunError>>();
    let clock = probe.clock();
    let period_hint = Nanos::MILLISECOND.0;

    let started_at = SystemTime::now();
    let mut interrupted = false;
    let results = std::thread::scope(|scope| -> Result<Vec<Box<dyn Worker>>, RunError> {
        let mut handles = Vec::with_capacity(n);
        for (thread, &cpu) in request.cpus.iter().enumerate() {
            let ready_tx = ready_tx.clone();
            let (tids, start_at, abort, go, live) = (&tids, &start_at, &abort, &go, &live[thread]);
            let handle = std::thread::Builder::new()
                .name(format!("latlab-m{cpu}"))
                .stack_size(MEASURING_STACK_BYTES)
                .spawn_scoped(
                    scope,
                    move || -> Result<Option<Box<dyn Worker>>, RunError> {
                        tids[thread].store(sched::gettid(), Ordering::Relaxed);
                        let prepared =
                            set_up_thread(thread, cpu, request).and_then(|(ready, guards)| {
                                let worker = probe
                                    .prepare(&ready.placement)
                                    .map_err(|e| RunError::Runtime(e.to_string()))?;
                                Ok((ready, guards, worker))
                            });
                        let (guards, mut worker) = match prepared {
                            Ok((ready, guards, worker)) => {
                                let _ = ready_tx.send(Ok(ready));
                                (guards, worker)
                            }
                            Err(e) => {
                                let _ = ready_tx.send(Err(e));
                                go.wait();
                                return Ok(None);
                            }
                        };
                        go.wait();
                        if abort.load(Ordering::Relaxed) {
                            return Ok(None);
                        }
                        let start = start_at.load(Ordering::Relaxed);
                        let window = Window {
                            start,
                            warm_up_end: start + request.warm_up.0,
                            end: request.duration.map(|d| start + request.warm_up.0 + d.0),
                        };
                        let measured = worker.measure(&window, stop, live);
                        live.finish();
                        drop(guards);
                        measured
                            .map_err(|e| RunError::Runtime(format!("measuring failed: {e}")))?;
                        // Encoding the results needs far more stack than measuring: it
                        // happens on the coordinating thread.
                        Ok(Some(worker))
                    },
                )
                .map_err(|e| RunError::Runtime(format!("cannot start a measuring thread: {e}")))?;
            handles.push(handle);
        }
        drop(ready_tx);

        let mut failure = None;
        for _ in 0..n {
            match ready_rx.recv() {
                Ok(Ok(ready)) => {
                    if let Some(reason) = ready.refused {
                        notices.push(Notice::NotRealtime {
                            wanted: request.policy,
                            got: ready.placement.policy,
                            thread: ready.placement.thread,
                            reason,
                        });
                    }
                }
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(RunError::Runtime(
                        "a measuring thread ended during set-up".to_string(),
                    ));
                }
            }
        }
        if failure.is_some() {
            abort.store(true, Ordering::Relaxed);
        } else {
            observer.ready(&notices);
        }
        // Keep the coordinating thread off the measured CPUs when there are others
        // (only now: threads inherit the affinity of the thread that creates them).
        let others: Vec<usize> = affinity::allowed_cpus()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !request.cpus.contains(c))
            .collect();
        let _main_affinity = if others.is_empty() {
            None
        } else {
            affinity::AffinityGuard::apply(&others).ok()
        };
        // Start shortly after every thread has passed the barrier.
        start_at.store(clock.now_ns() + 2 * period_hint, Ordering::Relaxed);
        go.wait();

        let begun = Instant::now();
        let mut last_observed = Instant::now();
        while !handles.iter().all(|h| h.is_finished()) {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                for tid in &tids {
                    let tid = tid.load(Ordering::Relaxed);
                    if tid > 0 {
                        let _ = signal::interrupt_thread(tid);
                    }
                }
            }
            std::thread::sleep(POLL);
            if last_observed.elapsed() >= observe_every {
                observer.progress(live, begun.elapsed());
                last_observed = Instant::now();
            }
        }

        let mut results = Vec::with_capacity(n);
        for handle in handles {
            match handle.join() {
                Ok(Ok(Some(r))) => results.push(r),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(RunError::Runtime(
                        "a measuring thread panicked (a bug: please report it)".to_string(),
                    ));
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(results),
        }
    })?;
    let ended_at = SystemTime::now();
    interrupted |= stop.load(Ordering::Relaxed);

    let mut streams = Vec::with_capacity(results.len());
    let mut events = Vec::new();
    for worker in results {
        let (stream, ev) = worker.finish(&request.phase);
        streams.push(stream);
        events.extend(ev);
    }
    conditions.realtime_policy = streams.iter().all(|s| s.policy.is_realtime());
    if matches!(request.policy, SchedSpec::Deadline { .. }) {
        notices.push(Notice::DeadlineUnpinned);
    } else if !request.policy.is_realtime() {
        notices.push(Notice::NonRealtimeRequested {
            policy: request.policy,
        });
    }
    notices.extend(Notice::from_streams(&streams));
    Ok(RunOutcome {
        streams,
        events,
        notices,
        conditions,
        started_at,
        ended_at,
        interrupted,
    })
}

/// Reports an unexpected kernel error in user terms.
pub fn runtime(e: RtError) -> RunError {
    RunError::Runtime(e.to_string())
}
