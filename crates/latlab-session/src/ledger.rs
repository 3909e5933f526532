//! The ledger of a run: the one place what its phases measured is gathered, read both
//! by the run's end (the Run it keeps) and by the checkpoint writer while it measures
//! (the Run as it stands). Both are made by one function and sealed by
//! [`Run::seal`], so a checkpoint and the final Run never disagree on what a warning
//! means or what the verdict is.

use latlab_measure::checkpoint::PhaseCheckpoint;
use latlab_measure::load::running::RunningLoad;
use latlab_measure::notice::Notice;
use latlab_model::run::{Conditions, Event, LoadRecord, Phase, Run, Stream};
use latlab_model::stamp::rfc3339;
use latlab_model::telemetry::Telemetry;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// A phase's loads while they run: the phase stops them, checkpoints and `--listen`
/// read them.
pub type SharedLoads = Arc<Mutex<Vec<RunningLoad>>>;

/// The phase measuring now.
pub struct CurrentPhase {
    /// Its name.
    pub name: String,
    /// When it started.
    pub started_at: SystemTime,
    /// Its threads' hand-overs, when checkpoints are written.
    pub checkpoint: Option<Arc<PhaseCheckpoint>>,
    /// Its loads, running.
    pub loads: SharedLoads,
}

/// What the run has measured so far.
#[derive(Default)]
pub struct Measured {
    /// The finished phases.
    pub phases: Vec<Phase>,
    /// Their streams.
    pub streams: Vec<Stream>,
    /// Their events.
    pub events: Vec<Event>,
    /// Every warning so far, each once.
    pub notices: Vec<Notice>,
    /// What was in force, once a phase has ended.
    pub conditions: Option<Conditions>,
    /// When the first phase began, and the last ended (a checkpoint and the final Run
    /// give the same start).
    pub started_at: Option<SystemTime>,
    pub ended_at: Option<SystemTime>,
    /// A phase stopped early (a stop request, a break trace, a failing thread).
    pub interrupted: bool,
    /// A phase could not measure, or a measuring thread failed: exit code 3.
    pub failed: bool,
    /// A break trace is armed (`-b`): part of the conditions, from the start.
    pub breaktrace_armed: bool,
    /// The phase measuring now, if any.
    pub current: Option<CurrentPhase>,
    /// The finished phases' telemetry, when sampled.
    pub telemetry: Option<Telemetry>,
}

impl Measured {
    /// Adds a warning unless the same one is there.
    pub fn note(&mut self, notice: Notice) {
        if !self.notices.contains(&notice) {
            self.notices.push(notice);
        }
    }

    /// `run` (the run as it started: plan, host, audit, labels) with what is measured
    /// in it: warnings, phases, streams, events, conditions. Not sealed yet.
    fn fill(&self, run: &mut Run) {
        run.warnings = self.notices.iter().map(Notice::to_warning).collect();
        run.phases = self.phases.clone();
        run.streams = self.streams.clone();
        run.events = self.events.clone();
        run.telemetry = self.telemetry.clone().map(|mut telemetry| {
            latlab_model::spike_correlation::find(&mut telemetry, &run.streams);
            telemetry
        });
        run.interrupted = self.interrupted;
        run.conditions = self.conditions.clone();
        if let Some(conditions) = run.conditions.as_mut() {
            conditions.breaktrace_armed = self.breaktrace_armed;
        }
        if let Some(started) = self.started_at {
            run.started_at = Some(rfc3339(started));
        }
    }
}

/// The ledger shared by the run's coordinator (which writes) and its checkpoint
/// writer (which reads).
#[derive(Default)]
pub struct Ledger {
    measured: Mutex<Measured>,
}

impl Ledger {
    /// What is measured so far (held briefly: a checkpoint copies and lets go before
    /// waiting for the measuring threads).
    pub fn lock(&self) -> MutexGuard<'_, Measured> {
        self.measured.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Run as it stands now: the finished phases, and the current one's streams as
    /// its threads hand them over within `wait` (their last copies otherwise), its
    /// loads as they are now. `base` is the run as it started.
    pub fn checkpoint(&self, base: &Run, wait: Duration) -> Run {
        let mut run = base.clone();
        // Everything copied under one lock, so a phase is either running or finished
        // in it; the threads are waited for without the lock.
        let current = {
            let m = self.lock();
            m.fill(&mut run);
            m.current.as_ref().map(|c| {
                (
                    c.name.clone(),
                    c.started_at,
                    c.checkpoint.clone(),
                    c.loads.clone(),
                )
            })
        };
        if let Some((name, started_at, Some(checkpoint), loads)) = current {
            let now = checkpoint.streams(wait);
            let loads: Vec<LoadRecord> = loads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(RunningLoad::so_far)
                .collect();
            if checkpoint.is_measuring() {
                run.phases.push(Phase {
                    name,
                    started_at: Some(rfc3339(started_at)),
                    elapsed_ns: now.iter().filter_map(|s| s.elapsed_ns).max(),
                    loads,
                });
                run.streams.extend(now);
            }
        }
        run.seal();
        run.ended_at = Some(rfc3339(SystemTime::now()));
        run
    }

    /// The Run when its phases are over: `base` with everything measured, sealed.
    pub fn seal(&self, mut base: Run) -> Run {
        let m = self.lock();
        m.fill(&mut base);
        base.seal();
        let started = m.started_at.unwrap_or_else(SystemTime::now);
        base.started_at = Some(rfc3339(started));
        base.ended_at = Some(rfc3339(m.ended_at.unwrap_or(started)));
        let mut conditions = m.conditions.clone().unwrap_or_default();
        conditions.breaktrace_armed = m.breaktrace_armed;
        base.conditions = Some(conditions);
        base
    }
}
