//! Runs a probe on a set of CPUs: the lifecycle every probe shares.
//!
//! Process-wide, for the duration of the run: memory locked, a `/dev/cpu_dma_latency`
//! request held, the coordinating thread moved off the measured CPUs when others
//! exist. Per measuring thread: a small fixed stack, pinned, at the requested policy
//! (or the best one permitted, said loudly), timer slack set, stack prefaulted, the
//! probe's worker prepared and rehearsed — then every thread waits at a gate until
//! all are ready, and all start at one instant. Every knob is held by a guard and
//! restored on every path out; whatever path the coordinator leaves by, the gate
//! opens (to abort), so no thread waits forever.

mod gate;
mod setup;

pub use setup::{mapped_while_locked, policy_of, PhaseFootprint, SystemSetup};

use crate::live::LiveStats;
use crate::notice::Notice;
use crate::probe::{Probe, Window, Worker};
use gate::{AbortOnDrop, Go, StartGate};
use latlab_model::run::{Conditions, Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::wake::{self, WaitError};
use latlab_rt::{affinity, memory, sched, signal};
use setup::{set_up_thread, Ready};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Stack of each measuring thread: small and fixed, so locking it costs little.
pub const MEASURING_STACK_BYTES: usize = 256 * 1024;
/// How much of it is touched before measuring.
pub(crate) const PREFAULT_BYTES: usize = 32 * 1024;
/// How often the coordinating thread checks for the end or a stop request.
const POLL: Duration = Duration::from_millis(20);
/// Time from opening the gate to the common start: every thread must be awake and
/// waiting for the start instant by then.
const START_LEAD: Nanos = Nanos(2_000_000);
/// Extra lead per measuring thread (the gate wakes them one after another).
const START_LEAD_PER_THREAD: Nanos = Nanos(100_000);

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
    /// Stopped early: by the stop flag, a break trace, or a failing thread.
    pub interrupted: bool,
    /// A measuring thread failed while measuring: the others were stopped and what
    /// every thread measured until then is kept (exit code 3).
    pub failure: Option<String>,
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

/// What a measuring thread hands back.
enum ThreadEnd {
    /// Set-up failed or the run was aborted: nothing measured.
    Nothing,
    /// It measured; `failure` says why it stopped early, if it failed.
    Measured {
        worker: Box<dyn Worker>,
        failure: Option<String>,
    },
}

/// Reports a thread's set-up to the coordinator exactly once, even if the thread
/// unwinds before it could.
struct ReadyReport {
    tx: Option<mpsc::Sender<Result<Ready, RunError>>>,
}

impl ReadyReport {
    fn send(&mut self, result: Result<Ready, RunError>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(result);
        }
    }
}

impl Drop for ReadyReport {
    fn drop(&mut self) {
        self.send(Err(RunError::Runtime(
            "a measuring thread ended during set-up (a bug: please report it)".to_string(),
        )));
    }
}

/// What the measuring threads share with the coordinator.
struct Shared<'a> {
    probe: &'a dyn Probe,
    request: &'a RunRequest,
    gate: StartGate,
    /// Raised to stop every thread: Ctrl-C, a break trace, a failing thread.
    halt: AtomicBool,
    tids: Vec<AtomicI32>,
}

/// One measuring thread, from set-up to the end of its measurement.
fn measuring_thread(
    shared: &Shared<'_>,
    thread: usize,
    cpu: usize,
    live: &LiveStats,
    ready_tx: mpsc::Sender<Result<Ready, RunError>>,
) -> ThreadEnd {
    let mut report = ReadyReport { tx: Some(ready_tx) };
    shared.tids[thread].store(sched::gettid(), Ordering::Relaxed);
    let prepared = set_up_thread(thread, cpu, shared.request).and_then(|(ready, guards)| {
        let mut worker = shared
            .probe
            .prepare(&ready.placement)
            .map_err(|e| RunError::Runtime(format!("preparing the probe failed: {e}")))?;
        worker
            .rehearse(live, &shared.halt)
            .map_err(|e| RunError::Runtime(format!("rehearsing the probe failed: {e}")))?;
        Ok((ready, guards, worker))
    });
    let (guards, mut worker) = match prepared {
        Ok((ready, guards, worker)) => {
            report.send(Ok(ready));
            (guards, worker)
        }
        Err(e) => {
            report.send(Err(e));
            return ThreadEnd::Nothing;
        }
    };
    let start = match shared.gate.wait() {
        Go::Abort => return ThreadEnd::Nothing,
        Go::Start(at) => at,
    };
    // Everyone begins at the common start, relative sleepers included.
    match wake::sleep_until(shared.probe.clock(), start) {
        Ok(()) | Err(WaitError::Interrupted) => {}
        Err(WaitError::Failed(e)) => {
            shared.halt.store(true, Ordering::Relaxed);
            return ThreadEnd::Measured {
                worker,
                failure: Some(e.to_string()),
            };
        }
    }
    let request = shared.request;
    let window = Window {
        start,
        warm_up_end: start + request.warm_up.0,
        end: request.duration.map(|d| start + request.warm_up.0 + d.0),
    };
    let measured = worker.measure(&window, &shared.halt, live);
    live.finish();
    drop(guards);
    let failure = measured.err().map(|e| {
        shared.halt.store(true, Ordering::Relaxed);
        format!("measuring on CPU {cpu} failed: {e}")
    });
    // Encoding the results needs far more stack than measuring: `finish` runs on the
    // coordinating thread.
    ThreadEnd::Measured { worker, failure }
}

/// Runs `probe` as `request` says. `live` must hold one entry per CPU; `observer`
/// hears from the coordinating thread while measuring; `stop` (Ctrl-C) ends the
/// measurement early with everything measured so far.
pub fn run_probe(
    probe: &dyn Probe,
    request: &RunRequest,
    setup: &SystemSetup,
    stop: &AtomicBool,
    live: &[LiveStats],
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    let n = request.cpus.len();
    assert_eq!(live.len(), n, "one live entry per measured CPU");
    signal::install_wake_handler().map_err(|e| RunError::Runtime(e.to_string()))?;
    let shared = Shared {
        probe,
        request,
        gate: StartGate::default(),
        halt: AtomicBool::new(false),
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
    };
    let mut notices = setup.notices.clone();
    let started_at = SystemTime::now();
    let ends = std::thread::scope(|scope| -> Result<Vec<ThreadEnd>, RunError> {
        let abort_on_exit = AbortOnDrop(&shared.gate);
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut handles = Vec::with_capacity(n);
        for (thread, &cpu) in request.cpus.iter().enumerate() {
            let (shared, live, tx) = (&shared, &live[thread], ready_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("latlab-m{cpu}"))
                .stack_size(MEASURING_STACK_BYTES)
                .spawn_scoped(scope, move || {
                    measuring_thread(shared, thread, cpu, live, tx)
                })
                .map_err(|e| RunError::Runtime(format!("cannot start a measuring thread: {e}")))?;
            handles.push(handle);
        }
        drop(ready_tx);
        collect_ready(&ready_rx, n, request, &mut notices)?;
        observer.ready(&notices);
        // Keep the coordinating thread off the measured CPUs when there are others
        // (only now: threads inherit the affinity of the thread that creates them).
        let others: Vec<usize> = affinity::allowed_cpus()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !request.cpus.contains(c))
            .collect();
        let _main_affinity = (!others.is_empty())
            .then(|| affinity::AffinityGuard::apply(&others).ok())
            .flatten();
        let lead = START_LEAD.0 + START_LEAD_PER_THREAD.0 * n as i64;
        shared.gate.open(Go::Start(probe.clock().now_ns() + lead));
        drop(abort_on_exit);
        watch(&shared, &handles, stop, live, observer);
        Ok(handles
            .into_iter()
            .map(|h| h.join().unwrap_or(ThreadEnd::Nothing))
            .collect())
    })?;
    let ended_at = SystemTime::now();
    Ok(finish(
        ends, request, setup, notices, started_at, ended_at, stop, &shared,
    ))
}

/// Waits for every thread's set-up report; the first failure ends the run.
fn collect_ready(
    ready_rx: &mpsc::Receiver<Result<Ready, RunError>>,
    n: usize,
    request: &RunRequest,
    notices: &mut Vec<Notice>,
) -> Result<(), RunError> {
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
            Err(_) => break,
        }
    }
    failure.map_or(Ok(()), Err)
}

/// Polls until every thread has ended: passes a stop request on as a halt, wakes
/// blocked threads so they see it, and refreshes the observer.
fn watch(
    shared: &Shared<'_>,
    handles: &[ScopedJoinHandle<'_, ThreadEnd>],
    stop: &AtomicBool,
    live: &[LiveStats],
    observer: &mut dyn RunObserver,
) {
    let every = observer.refresh_every();
    let begun = Instant::now();
    let mut last_observed = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) {
        if stop.load(Ordering::Relaxed) {
            shared.halt.store(true, Ordering::Relaxed);
        }
        if shared.halt.load(Ordering::Relaxed) {
            for tid in &shared.tids {
                let tid = tid.load(Ordering::Relaxed);
                if tid > 0 {
                    let _ = signal::interrupt_thread(tid);
                }
            }
        }
        std::thread::sleep(POLL);
        if last_observed.elapsed() >= every {
            observer.progress(live, begun.elapsed());
            last_observed = Instant::now();
        }
    }
}

/// Turns what the threads handed back into the outcome.
#[allow(clippy::too_many_arguments)]
fn finish(
    ends: Vec<ThreadEnd>,
    request: &RunRequest,
    setup: &SystemSetup,
    mut notices: Vec<Notice>,
    started_at: SystemTime,
    ended_at: SystemTime,
    stop: &AtomicBool,
    shared: &Shared<'_>,
) -> RunOutcome {
    let mut streams = Vec::with_capacity(ends.len());
    let mut events = Vec::new();
    let mut failure = None;
    for end in ends {
        if let ThreadEnd::Measured { worker, failure: f } = end {
            let (stream, ev) = worker.finish(&request.phase);
            streams.push(stream);
            events.extend(ev);
            if let Some(f) = f {
                failure.get_or_insert(f);
            }
        }
    }
    let mut conditions: Conditions = setup.conditions.clone();
    conditions.realtime_policy = streams.iter().all(|s| s.policy.is_realtime());
    if matches!(request.policy, SchedSpec::Deadline { .. }) {
        notices.push(Notice::DeadlineUnpinned);
    } else if !request.policy.is_realtime() {
        notices.push(Notice::NonRealtimeRequested {
            policy: request.policy,
        });
    }
    if let Some(f) = &failure {
        notices.push(Notice::MeasuringFailed { reason: f.clone() });
    }
    notices.extend(Notice::from_streams(&streams));
    RunOutcome {
        streams,
        events,
        notices,
        conditions,
        started_at,
        ended_at,
        interrupted: stop.load(Ordering::Relaxed) || shared.halt.load(Ordering::Relaxed),
        failure,
    }
}
