//! Probes: measurement methods, each in its own file behind one lifecycle.
//!
//! The runner (`crate::runner`) owns what every probe shares — one thread per
//! placement, pinning, scheduling policy, timer slack, stack prefault, a common start
//! instant, stopping, collection — and calls the probe's steps in order:
//!
//! 1. [`Probe::prepare`] on the measuring thread, after pinning and policy: allocate
//!    everything the loop needs and return a [`Worker`];
//! 2. [`Worker::rehearse`], still before the common start: run the loop's code and
//!    touch its memory once, so page faults and cold caches stay out of the samples;
//! 3. [`Worker::measure`] once every thread is ready, until the window ends or the
//!    stop flag is raised;
//! 4. [`Worker::finish`] to turn what was kept into a Run stream.
//!
//! Adding a probe means one new file here (its `INFO` and `build`, see [`info`]) plus
//! its name in the `registry!` below.

mod account;
pub mod catalogue;
pub mod info;
mod pair;
mod partners;
mod tally;
mod tracer;

/// Declares each probe's module and lists its `INFO` in [`CATALOGUE`], in the order
/// given, so that a probe is registered by naming it once.
macro_rules! registry {
    ($($probe:ident),+ $(,)?) => {
        $(pub mod $probe;)+

        /// Every probe, in the order `latlab probes` lists them; the first is the
        /// default.
        pub const CATALOGUE: &[info::ProbeInfo] = &[$($probe::INFO),+];
    };
}

registry!(
    timer, preempt, switch, msg, sem, pi, prio_wake, signal, noise, clock, timerlat, osnoise,
);

use crate::explain::SpikeFeed;
use crate::live::LiveStats;
use crate::notice::Notice;
use latlab_model::run::{Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::sched::Policy;
use latlab_rt::RtError;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Where and how one worker runs.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Thread index, from 0.
    pub thread: usize,
    /// The CPU it is pinned to, if any.
    pub cpu: Option<usize>,
    /// The scheduling policy actually in force.
    pub policy: latlab_model::spec::SchedSpec,
    /// Timer slack of the thread, ns.
    pub timer_slack_ns: u64,
    /// Where the thread's recorder pushes its spikes to be explained (`--explain`).
    pub feed: Option<Arc<SpikeFeed>>,
    /// Where the thread's recorder hands copies over for checkpoints.
    pub checkpoint: Option<Arc<crate::checkpoint::PhaseCheckpoint>>,
}

/// How much of a measuring thread's stack (and a partner's) is touched before
/// measuring, so that page faults stay out of the samples.
pub(crate) const PREFAULT_BYTES: usize = 32 * 1024;

/// Stack of a thread a probe starts to be the kernel's workload (timerlat's user
/// thread): small and fixed, as a measuring thread's.
pub(crate) const USER_THREAD_STACK_BYTES: usize = 256 * 1024;

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

pub(crate) fn spec_of(policy: Policy) -> SchedSpec {
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

/// The span a worker measures, on the probe's clock.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The common start instant of all workers.
    pub start: i64,
    /// Samples due at or before this are warm-up and discarded.
    pub warm_up_end: i64,
    /// No sample is due after this (`None` = until stopped).
    pub end: Option<i64>,
}

impl Window {
    /// How many of the period boundaries `due + k·period`, for `k` in `1..=count`, lie
    /// in the measured span (after the warm-up, up to the end): of the periods a late
    /// wake-up passed over, those that are missed periods of the run. One past the end
    /// is no period of it, though the wake-up that passed it may come late enough to.
    #[inline]
    pub(crate) fn boundaries_measured(&self, due: i64, period: i64, count: u64) -> u64 {
        let period = period.max(1);
        // The first k past the warm-up, and the last one at or before the end.
        let first = ((self.warm_up_end - due).div_euclid(period) + 1).max(1);
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        let last = match self.end {
            Some(end) => count.min((end - due).div_euclid(period)),
            None => count,
        };
        (last - first + 1).max(0) as u64
    }
}

/// A measurement method.
pub trait Probe: Sync {
    /// The probe's name in results (`timer`).
    fn name(&self) -> &'static str;

    /// The clock the probe's window is expressed on: `CLOCK_MONOTONIC` unless the
    /// probe measures on another one.
    fn clock(&self) -> Clock {
        Clock::Monotonic
    }

    /// Builds a worker on its measuring thread (allocations happen here).
    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError>;

    /// What the results of this probe, as configured, need said beside them (for
    /// example that its clock cannot show what it measures).
    fn notices(&self) -> Vec<Notice> {
        Vec::new()
    }

    /// Where its workers run: on the CPU they measure, or — for a probe whose
    /// measuring is done by the kernel (a tracer's threads) — off the measured CPUs.
    fn site(&self) -> Site {
        Site::MeasuredCpu
    }
}

/// Where a probe's worker threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// Pinned to the CPU measured, at the run's policy: the worker measures.
    MeasuredCpu,
    /// On the CPUs not measured (all, if none is left), at the policy it was started
    /// with: the kernel measures on the CPU, the worker only reads what it wrote there
    /// and applies the run's policy to what measures.
    Elsewhere,
}

/// One measuring thread's state.
pub trait Worker: Send {
    /// Runs the measuring code once without measuring, leaving no trace in the
    /// results (see the module documentation).
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError>;

    /// Measures until the window ends or `stop` is raised. Anything bound to the
    /// measuring thread (timers, signal masks) must be released before returning:
    /// [`finish`](Worker::finish) runs on the coordinating thread.
    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError>;

    /// Produces the streams (one, unless the probe measures several things on its
    /// CPU) and any events for phase `phase`.
    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>);

    /// The stream as it stands, for phase `phase`: called once before measuring (on
    /// the measuring thread, where allocating is still allowed) to give a checkpoint
    /// what does not change while measuring — probe, method, CPU, policy, period and
    /// which counts the probe keeps. One stream per recorder, in the order of their
    /// [`info::ProbeSetup::recorder_for`] parts.
    fn describe(&mut self, phase: &str) -> Vec<Stream>;
}

#[cfg(test)]
mod tests {
    use super::Window;

    const P: i64 = 1_000_000;

    #[test]
    fn only_boundaries_in_the_measured_span_are_missed_periods() {
        let open = |warm_up_end| Window {
            start: 0,
            warm_up_end,
            end: None,
        };
        // A wake 5 periods late passed over +1..+4 P.
        assert_eq!(open(0).boundaries_measured(10 * P, P, 4), 4);
        // The window ends at +2 P: only +1 P and +2 P count.
        let ending = Window {
            end: Some(12 * P),
            ..open(0)
        };
        assert_eq!(ending.boundaries_measured(10 * P, P, 4), 2);
        // A warm-up wake: only boundaries after the warm-up's end (at +3 P) count.
        assert_eq!(open(13 * P).boundaries_measured(10 * P, P, 4), 1);
        assert_eq!(open(0).boundaries_measured(10 * P, P, 0), 0);

        // Periods due at 10, 20, ... 100; warm-up up to 15. 99 expiries passed after
        // the one at 20 (30 to 1010): 30..=100 are missed, 8 of them.
        let window = Window {
            start: 0,
            warm_up_end: 15,
            end: Some(100),
        };
        assert_eq!(window.boundaries_measured(20, 10, 99), 8);
        // In the warm-up none counts; until stopped every later one does.
        assert_eq!(window.boundaries_measured(0, 5, 2), 0);
        assert_eq!(open(15).boundaries_measured(20, 10, 99), 99);
    }
}
