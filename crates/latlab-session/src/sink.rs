//! What watches a run while it measures — the live display, `--listen`, the checkpoint
//! writer — plugged into a [`Session`](crate::session::Session) as sinks of one small
//! trait. A sink only watches: what the run keeps is the ledger's, whatever the sinks
//! do or fail to do.

use crate::ledger::SharedLoads;
use latlab_measure::live::LiveStats;
use latlab_measure::notice::Notice;
use latlab_measure::plan::PhasePlan;
use latlab_measure::runner::RunObserver;
use std::sync::Arc;
use std::time::Duration;

/// A phase about to measure, as sinks see it.
pub struct PhaseStart<'a> {
    /// Its plan.
    pub phase: &'a PhasePlan,
    /// Its threads' live figures, one per measuring thread.
    pub live: &'a Arc<Vec<LiveStats>>,
    /// The index in the run of its first stream.
    pub first_stream: usize,
    /// Its loads, running.
    pub loads: &'a SharedLoads,
}

/// A watcher of the run. Every method does nothing unless the sink says otherwise.
pub trait Sink {
    /// Whether this sink reads the threads' figures while they measure (checkpoints):
    /// their hand-overs are set up only then.
    fn wants_checkpoints(&self) -> bool {
        false
    }

    /// A phase begins.
    fn phase_begins(&mut self, _start: &PhaseStart<'_>) {}

    /// Its threads are set up; what the set-up found (a refused policy, memory not
    /// locked), before anything is measured.
    fn ready(&mut self, _notices: &[Notice]) {}

    /// The figures so far, about every [`Sink::refresh_every`].
    fn progress(&mut self, _live: &[LiveStats], _elapsed: Duration) {}

    /// How often this sink wants [`Sink::progress`]; `None`: never.
    fn refresh_every(&self) -> Option<Duration> {
        None
    }

    /// The phase ended, measured or not.
    fn phase_ends(&mut self) {}
}

/// Every sink of a run, as the runner's one observer.
pub(crate) struct Sinks<'a, 'b> {
    pub(crate) sinks: &'a mut [&'b mut dyn Sink],
}

impl Sinks<'_, '_> {
    pub(crate) fn wants_checkpoints(&self) -> bool {
        self.sinks.iter().any(|s| s.wants_checkpoints())
    }

    pub(crate) fn phase_begins(&mut self, start: &PhaseStart<'_>) {
        for sink in self.sinks.iter_mut() {
            sink.phase_begins(start);
        }
    }

    pub(crate) fn phase_ends(&mut self) {
        for sink in self.sinks.iter_mut() {
            sink.phase_ends();
        }
    }
}

impl RunObserver for Sinks<'_, '_> {
    fn ready(&mut self, notices: &[Notice]) {
        for sink in self.sinks.iter_mut() {
            sink.ready(notices);
        }
    }

    fn progress(&mut self, live: &[LiveStats], elapsed: Duration) {
        for sink in self.sinks.iter_mut() {
            if sink.refresh_every().is_some() {
                sink.progress(live, elapsed);
            }
        }
    }

    fn refresh_every(&self) -> Duration {
        self.sinks
            .iter()
            .filter_map(|s| s.refresh_every())
            .min()
            .unwrap_or(Duration::MAX)
    }
}
