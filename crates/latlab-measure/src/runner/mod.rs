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

pub use setup::{mapped_while_locked, PhaseFootprint, SystemSetup};

use crate::breaktrace::{Trip, Tripwire};
use crate::checkpoint::PhaseCheckpoint;
use crate::explain::{Origin, SpikeFeed};
use crate::facts::FactReader;
use crate::live::LiveStats;
use crate::notice::{Notice, RtThrottling, StreamContext};
use crate::probe::{Probe, Site, Window, Worker};
use crate::stall::{StallEvidence, StallWatch};
use crate::telemetry::{Sampled, Sampler, SamplerPlan};
use gate::{AbortOnDrop, Go, StartGate};
use latlab_model::run::{Conditions, Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::slack::{self, TimerSlackGuard};
use latlab_rt::wake::{self, WaitError};
use latlab_rt::{affinity, sched, signal};
use setup::{set_up_thread, Ready};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Stack of each measuring thread: small and fixed, so locking it costs little.
pub const MEASURING_STACK_BYTES: usize = 256 * 1024;
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
    /// The phase name recorded in the streams.
    pub phase: String,
    /// The break-trace limit the probe's recorders were built with: its halt flag is
    /// the one the measuring loops stop at, and a trip is recorded as an event.
    pub breaktrace: Option<Arc<Tripwire>>,
    /// With `--explain`: thread `i`'s recorder pushes its spikes into `feeds[i]`, read
    /// by an explanation session (none: spikes are only kept).
    pub feeds: Vec<Arc<SpikeFeed>>,
    /// With checkpoints: every thread registers its hand-over and its stream's
    /// template here, for a checkpoint writer to read while measuring.
    pub checkpoint: Option<Arc<PhaseCheckpoint>>,
    /// Telemetry sampled at this timeline interval beside the run (`None`: not
    /// sampled, `--no-telemetry`).
    pub telemetry: Option<Nanos>,
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
    /// Wall-clock end.
    pub ended_at: SystemTime,
    /// The span measured: from the end of the warm-up to the end of the window, or to
    /// when measuring stopped if it stopped early (set-up and warm-up excluded).
    pub measured: Nanos,
    /// Stopped early: by the stop flag, a break trace, or a failing thread.
    pub interrupted: bool,
    /// A measuring thread failed while measuring: the others were stopped and what
    /// every thread measured until then is kept (exit code 3).
    pub failure: Option<String>,
    /// A sample went over the break-trace limit and stopped the run.
    pub tripped: Option<Trip>,
    /// What the telemetry sampler read (`None`: not sampled).
    pub telemetry: Option<Sampled>,
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
    /// It measured until `stopped_at` (on the probe's clock); `failure` says why it
    /// stopped early, if it failed.
    Measured {
        worker: Box<dyn Worker>,
        failure: Option<String>,
        stopped_at: i64,
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
    halt: &'a AtomicBool,
    /// Each thread's id, once a stop request may interrupt it (0 before).
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
    let usual_slack = slack::current_ns();
    let site = shared.probe.site();
    let prepared = set_up_thread(thread, cpu, shared.request, site).and_then(|(ready, guards)| {
        // The requested timer slack is for measuring: until the start, the thread
        // (and any partner it starts, which inherits it) sleeps with its usual one,
        // so a long slack does not stretch every sleep of the rehearsal and the start.
        let usual = match shared.request.timer_slack_ns {
            Some(_) => Some(
                TimerSlackGuard::set(usual_slack).map_err(|e| RunError::Runtime(e.to_string()))?,
            ),
            None => None,
        };
        let mut worker = shared
            .probe
            .prepare(&ready.placement)
            .map_err(|e| RunError::Runtime(format!("preparing the probe failed: {e}")))?;
        // From here on a stop request may interrupt this thread's sleeps and waits
        // (rehearsing, at the start, measuring); setting up and preparing are not
        // cut short, they do not sleep.
        shared.tids[thread].store(sched::gettid(), Ordering::Relaxed);
        if let Some(feed) = &ready.placement.feed {
            feed.set_tid(sched::gettid());
        }
        worker
            .rehearse(live, shared.halt)
            .map_err(|e| RunError::Runtime(format!("rehearsing the probe failed: {e}")))?;
        if let Some(checkpoint) = &ready.placement.checkpoint {
            checkpoint.describe(thread, worker.describe(&shared.request.phase));
        }
        // A stop request reaches the thread as the wake signal: run its handler once
        // now, so its code is resident (and locked) before measuring instead of being
        // faulted in by the stop, inside the measured span.
        signal::interrupt_thread(sched::gettid())
            .map_err(|e| RunError::Runtime(format!("rehearsing a stop request failed: {e}")))?;
        Ok((ready, guards, worker, usual))
    });
    let (guards, mut worker, usual_slack, feed) = match prepared {
        Ok((ready, guards, worker, usual)) => {
            let feed = ready.placement.feed.clone();
            report.send(Ok(ready));
            (guards, worker, usual, feed)
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
                stopped_at: start,
            };
        }
    }
    let window = window_of(shared.request, start);
    if let Some(feed) = &feed {
        // Spikes count from here on; the rehearsal's did not reach the feed.
        feed.set_origin(Origin {
            probe_ns: window.warm_up_end,
            probe_minus_monotonic_ns: minus_monotonic(shared.probe.clock()),
        });
        feed.arm();
    }
    drop(usual_slack); // the requested slack again
    let measured = worker.measure(&window, shared.halt, live);
    let stopped_at = shared.probe.clock().now_ns();
    live.finish();
    drop(guards);
    let failure = measured.err().map(|e| {
        shared.halt.store(true, Ordering::Relaxed);
        format!("measuring on CPU {cpu} failed: {e}")
    });
    // Encoding the results needs far more stack than measuring: `finish` runs on the
    // coordinating thread.
    ThreadEnd::Measured {
        worker,
        failure,
        stopped_at,
    }
}

/// `clock` minus `CLOCK_MONOTONIC` now: the middle of the tightest of a few
/// monotonic reads bracketing a read of `clock` (0 for the monotonic clock itself).
/// Realtime, boottime and TAI move against it only by steps (settimeofday, a
/// suspend), which a run that spans one misplaces by the step.
fn minus_monotonic(clock: Clock) -> i64 {
    if clock == Clock::Monotonic {
        return 0;
    }
    (0..5)
        .map(|_| {
            let before = Clock::Monotonic.now_ns();
            let read = clock.now_ns();
            let after = Clock::Monotonic.now_ns();
            (after - before, read - (before + (after - before) / 2))
        })
        .min_by_key(|&(width, _)| width)
        .map_or(0, |(_, offset)| offset)
}

/// The window every thread measures, from the common start instant.
fn window_of(request: &RunRequest, start: i64) -> Window {
    let warm_up_end = start + request.warm_up.0;
    Window {
        start,
        warm_up_end,
        end: request.duration.map(|d| warm_up_end + d.0),
    }
}

/// The span measured: from the end of the warm-up to the last thread's stop, or to
/// the end of the window when they ran past it (a last wake-up comes after the end).
fn measured_span(window: &Window, stopped_at: impl Iterator<Item = i64>) -> Nanos {
    let stopped = stopped_at.max().unwrap_or(window.start);
    let until = window.end.map_or(stopped, |end| stopped.min(end));
    Nanos((until - window.warm_up_end).max(0))
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
    signal::count_continues().map_err(|e| RunError::Runtime(e.to_string()))?;
    let own_halt = AtomicBool::new(false);
    let halt = match &request.breaktrace {
        Some(wire) => {
            wire.reset();
            wire.halt()
        }
        None => &own_halt,
    };
    let shared = Shared {
        probe,
        request,
        gate: StartGate::default(),
        halt,
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
    };
    let mut notices = setup.notices.clone();
    type Ended = (Vec<ThreadEnd>, i64, StallEvidence, Option<Sampled>);
    let (ends, start, held, sampled) = std::thread::scope(|scope| -> Result<Ended, RunError> {
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
        collect_ready(&ready_rx, &shared, stop, &mut notices)?;
        // Every thread has rehearsed: from now on a sample over the limit counts.
        if let Some(wire) = &request.breaktrace {
            wire.arm();
        }
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
        // Watched from before the first deadline: the kernel log is read from here, so
        // a throttling it reports in the first milliseconds is seen.
        let pinned: Vec<Option<usize>> = match request.policy {
            SchedSpec::Deadline { .. } => vec![None; n],
            _ => request.cpus.iter().map(|&c| Some(c)).collect(),
        };
        let mut stalls = StallWatch::start(&pinned, probe.site() == Site::MeasuredCpu);
        let lead = START_LEAD.0 + START_LEAD_PER_THREAD.0 * n as i64;
        let start = probe.clock().now_ns() + lead;
        shared.gate.open(Go::Start(start));
        // Started by the coordinator once it is off the measured CPUs; it shares
        // nothing with the measuring threads.
        let sampler = request.telemetry.and_then(|interval| {
            let window = window_of(request, start);
            Sampler::start(SamplerPlan {
                phase: request.phase.clone(),
                cpus: request.cpus.clone(),
                housekeeping: others.clone(),
                clock: probe.clock(),
                origin_ns: window.warm_up_end,
                interval,
                end_ns: window.end,
            })
        });
        if let Some(checkpoint) = &request.checkpoint {
            checkpoint.start();
        }
        drop(abort_on_exit);
        watch(&shared, &handles, stop, live, observer, &mut stalls);
        let ends = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(ThreadEnd::Nothing))
            .collect();
        let sampled = sampler.and_then(Sampler::finish);
        Ok((ends, start, stalls.finish(), sampled))
    })?;
    let ended_at = SystemTime::now();
    let span = (ended_at, window_of(request, start));
    let mut outcome = finish(ends, request, setup, notices, span, stop, &shared, held);
    outcome.telemetry = sampled;
    Ok(outcome)
}

/// Waits for every thread's set-up report; the first failure ends the run. A stop
/// request meanwhile is passed on, so threads still rehearsing cut it short.
fn collect_ready(
    ready_rx: &mpsc::Receiver<Result<Ready, RunError>>,
    shared: &Shared<'_>,
    stop: &AtomicBool,
    notices: &mut Vec<Notice>,
) -> Result<(), RunError> {
    let mut failure = None;
    let mut reported = 0;
    while reported < shared.tids.len() {
        let report = match ready_rx.recv_timeout(POLL) {
            Ok(report) => report,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                pass_on_stop(shared, stop);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        reported += 1;
        match report {
            Ok(ready) => {
                if let Some(reason) = ready.refused {
                    notices.push(Notice::NotRealtime {
                        wanted: shared.request.policy,
                        got: ready.placement.policy,
                        thread: ready.placement.thread,
                        reason,
                    });
                }
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    failure.map_or(Ok(()), Err)
}

/// Passes a stop request on as a halt, and wakes the threads so that any blocked in a
/// sleep (or rehearsing one) sees it. Called every [`POLL`] until they have ended:
/// a signal that arrives between a thread's look at the halt and its next sleep is
/// followed by another.
fn pass_on_stop(shared: &Shared<'_>, stop: &AtomicBool) {
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
}

/// Polls until every thread has ended: passes a stop request on as a halt, wakes
/// blocked threads so they see it, refreshes the observer, and looks at threads held
/// off their CPUs while it happens.
fn watch(
    shared: &Shared<'_>,
    handles: &[ScopedJoinHandle<'_, ThreadEnd>],
    stop: &AtomicBool,
    live: &[LiveStats],
    observer: &mut dyn RunObserver,
    stalls: &mut StallWatch,
) {
    let every = observer.refresh_every();
    let begun = Instant::now();
    let mut last_observed = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) {
        pass_on_stop(shared, stop);
        let asleep = Instant::now();
        std::thread::sleep(POLL);
        stalls.poll(live, asleep.elapsed());
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
    (ended_at, window): (SystemTime, Window),
    stop: &AtomicBool,
    shared: &Shared<'_>,
    held: StallEvidence,
) -> RunOutcome {
    let measured = measured_span(
        &window,
        ends.iter().filter_map(|end| match end {
            ThreadEnd::Measured { stopped_at, .. } => Some(*stopped_at),
            ThreadEnd::Nothing => None,
        }),
    );
    let mut streams = Vec::with_capacity(ends.len());
    let mut events = Vec::new();
    let mut failure = None;
    for end in ends {
        if let ThreadEnd::Measured {
            worker, failure: f, ..
        } = end
        {
            let (finished, ev) = worker.finish(&request.phase);
            streams.extend(finished);
            events.extend(ev);
            if let Some(f) = f {
                failure.get_or_insert(f);
            }
        }
    }
    let mut conditions: Conditions = setup.conditions.clone();
    conditions.realtime_policy = streams
        .iter()
        .all(|s| s.policy.is_some_and(|p| p.is_realtime()));
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
    let tripped = request.breaktrace.as_ref().and_then(|wire| {
        let trip = wire.tripped()?;
        // A sample is recorded on a measuring thread, so its id is one of theirs.
        let thread = shared
            .tids
            .iter()
            .position(|tid| tid.load(Ordering::Relaxed) == trip.tid)
            .unwrap_or(0);
        let (label, cpu) = match streams.iter().find(|s| s.thread == thread) {
            Some(stream) => (stream.label(), stream.cpu),
            None => (
                format!("thread {thread}"),
                request.cpus.get(thread).copied(),
            ),
        };
        events.insert(0, wire.event(trip, &label, thread, cpu));
        Some(trip)
    });
    notices.extend(shared.probe.notices());
    let context = StreamContext {
        memory_locked: setup.conditions.memory_locked,
        rt_throttling: RtThrottling::read(&FactReader::system()),
        held,
    };
    notices.extend(Notice::from_streams(&streams, &context));
    RunOutcome {
        streams,
        events,
        notices,
        conditions,
        ended_at,
        measured,
        interrupted: stop.load(Ordering::Relaxed) || shared.halt.load(Ordering::Relaxed),
        failure,
        tripped,
        telemetry: None,
    }
}

#[cfg(test)]
mod explain_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::info::{self, Measured, ProbeSetup};
    use crate::probe::{clock, Placement};
    use crate::record::SampleRecorder;
    use latlab_rt::clock::Clock;
    use latlab_rt::RtError;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// What a fake probe's worker saw.
    #[derive(Default)]
    struct Seen {
        /// Wake signals the process had handled when measuring began.
        handled_at_start: AtomicU64,
        /// The rehearsal's sleep was cut short by a signal.
        rehearsal_interrupted: AtomicBool,
    }

    /// A probe whose workers rehearse by sleeping `rehearsal` and measure nothing,
    /// noting what they saw.
    struct FakeProbe {
        rehearsal: Duration,
        seen: Arc<Seen>,
    }

    struct FakeWorker {
        rehearsal: Duration,
        seen: Arc<Seen>,
        setup: ProbeSetup,
        placement: Placement,
        recorder: SampleRecorder,
    }

    impl Probe for FakeProbe {
        fn name(&self) -> &'static str {
            "fake"
        }

        fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
            let setup = info::test_setup(&clock::INFO, &[], &[0]);
            Ok(Box::new(FakeWorker {
                rehearsal: self.rehearsal,
                seen: self.seen.clone(),
                recorder: setup.recorder(),
                setup,
                placement: placement.clone(),
            }))
        }
    }

    impl Worker for FakeWorker {
        fn rehearse(&mut self, _: &LiveStats, _: &AtomicBool) -> Result<(), RtError> {
            let until = Clock::Monotonic.now_ns() + self.rehearsal.as_nanos() as i64;
            if let Err(WaitError::Interrupted) = wake::sleep_until(Clock::Monotonic, until) {
                self.seen
                    .rehearsal_interrupted
                    .store(true, Ordering::Relaxed);
            }
            Ok(())
        }

        fn measure(&mut self, _: &Window, _: &AtomicBool, _: &LiveStats) -> Result<(), RtError> {
            self.seen
                .handled_at_start
                .store(signal::wake_signals_handled(), Ordering::Relaxed);
            Ok(())
        }

        fn describe(&mut self, phase: &str) -> Vec<Stream> {
            let measured = Measured {
                info: &clock::INFO,
                setup: &self.setup,
                placement: &self.placement,
                recorder: &self.recorder,
                missed: 0,
                warm_up_samples: 0,
                first_sample: None,
                elapsed: Nanos(0),
                page_faults: 0,
            };
            vec![info::stream_of(measured, phase)]
        }

        fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
            let measured = Measured {
                info: &clock::INFO,
                setup: &self.setup,
                placement: &self.placement,
                recorder: &self.recorder,
                missed: 0,
                warm_up_samples: 0,
                first_sample: None,
                elapsed: Nanos(0),
                page_faults: 0,
            };
            (vec![info::stream_of(measured, phase)], Vec::new())
        }
    }

    struct Silent;

    impl RunObserver for Silent {
        fn ready(&mut self, _: &[Notice]) {}
        fn progress(&mut self, _: &[LiveStats], _: Duration) {}
        fn refresh_every(&self) -> Duration {
            Duration::from_secs(1)
        }
    }

    /// Runs `probe` on CPU 0 for 1 ms (at SCHED_OTHER, nothing locked), `stop` raised
    /// from the start when `stopped`.
    fn run_fake(probe: &FakeProbe, stopped: bool) -> RunOutcome {
        let request = RunRequest {
            cpus: vec![0],
            policy: SchedSpec::Other { nice: 0 },
            timer_slack_ns: None,
            duration: Some(Nanos(1_000_000)),
            warm_up: Nanos(0),
            breaktrace: None,
            feeds: Vec::new(),
            checkpoint: None,
            telemetry: None,
            phase: "main".to_string(),
        };
        let setup = SystemSetup::apply(None, None);
        let live = [LiveStats::default()];
        let stop = AtomicBool::new(stopped);
        run_probe(probe, &request, &setup, &stop, &live, &mut Silent).unwrap()
    }

    #[test]
    fn a_stop_requests_signal_handler_has_run_before_measuring_so_stopping_faults_nothing_in() {
        let probe = FakeProbe {
            rehearsal: Duration::ZERO,
            seen: Arc::default(),
        };
        let outcome = run_fake(&probe, false);
        assert_eq!(outcome.streams.len(), 1);
        assert!(
            probe.seen.handled_at_start.load(Ordering::Relaxed) >= 1,
            "the wake signal's handler first ran when a stop came, inside the measured span"
        );
    }

    #[test]
    fn a_stop_during_set_up_cuts_a_rehearsing_sleep_short() {
        // A rehearsal sleeping 5 s, as one under a long timer slack can.
        let probe = FakeProbe {
            rehearsal: Duration::from_secs(5),
            seen: Arc::default(),
        };
        let outcome = run_fake(&probe, true);
        assert!(outcome.interrupted);
        assert!(
            probe.seen.rehearsal_interrupted.load(Ordering::Relaxed),
            "the rehearsal slept on through the stop request"
        );
    }

    #[test]
    fn measured_span_excludes_warm_up_and_what_ran_past_the_end() {
        let window = Window {
            start: 0,
            warm_up_end: 100,
            end: Some(1_100),
        };
        // Ran to the end: the last wake-ups came after it.
        assert_eq!(
            measured_span(&window, [1_105, 1_120].into_iter()),
            Nanos(1_000)
        );
        // Stopped early: what was measured until the last thread stopped.
        assert_eq!(measured_span(&window, [600, 650].into_iter()), Nanos(550));
        // Stopped in the warm-up, or nothing measured at all.
        assert_eq!(measured_span(&window, [50].into_iter()), Nanos(0));
        assert_eq!(measured_span(&window, std::iter::empty()), Nanos(0));
        let until_stopped = Window {
            end: None,
            ..window
        };
        assert_eq!(
            measured_span(&until_stopped, [5_000].into_iter()),
            Nanos(4_900)
        );
    }
}
