//! What the scheduling probes (`preempt`, `switch`, `pi`, `prio-wake`) share: the
//! priorities of their partner tasks, derived from the measuring thread's (`signal`'s
//! sender too), the pacing of their cycles, and the tally of samples, missed cycles
//! and events.

use super::info::{ProbeInfo, ProbeSetup};
use super::tally::Tally;
use super::{Placement, Window, Worker};
use crate::live::LiveStats;
use latlab_model::run::{Event, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::partner::{PartnerPlace, TaskKind};
use latlab_rt::sched::Policy;
use latlab_rt::wake::{self, WaitError};
use latlab_rt::{memory, RtError};
use std::sync::atomic::{AtomicBool, Ordering};

/// Longest any wait of a scheduling probe blocks before it looks again (at the stop
/// flag, or at whether its partners are still there).
pub(super) const WAIT_NS: i64 = 100_000_000;

/// `task=thread|process`.
pub(super) fn task_kind(setup: &ProbeSetup) -> TaskKind {
    match setup.param("task") {
        "process" => TaskKind::Process,
        _ => TaskKind::Thread,
    }
}

/// A partner on the measuring thread's CPU, `below` priority levels under it (see
/// [`policy_below`]).
pub(super) fn partner_place(placement: &Placement, below: i32) -> Result<PartnerPlace, RtError> {
    let cpu = placement.cpu.ok_or_else(|| {
        RtError::new(
            "place a partner task",
            std::io::Error::other("the measuring thread is not pinned to a CPU"),
        )
    })?;
    Ok(PartnerPlace {
        cpu: Some(cpu),
        policy: Some(policy_below(placement.policy, below)),
    })
}

/// The policy `below` real-time priority levels under `measuring` (never below 1);
/// the same policy when it is not a real-time one (then priorities mean nothing, and
/// the runner has already said the run is not real-time); SCHED_OTHER under a
/// deadline task.
pub(super) fn policy_below(measuring: SchedSpec, below: i32) -> Policy {
    match measuring {
        SchedSpec::Fifo { priority } => Policy::Fifo {
            priority: (priority - below).max(1),
        },
        SchedSpec::Rr { priority } => Policy::RoundRobin {
            priority: (priority - below).max(1),
        },
        SchedSpec::Batch { nice } => Policy::Batch { nice },
        SchedSpec::Idle => Policy::Idle,
        SchedSpec::Other { nice } => Policy::Other { nice },
        SchedSpec::Deadline { .. } => Policy::Other { nice: 0 },
    }
}

/// Sleeps until `at` on `CLOCK_MONOTONIC`; false when interrupted (a stop request).
pub(super) fn sleep_until(at: i64) -> Result<bool, RtError> {
    match wake::sleep_until(Clock::Monotonic, at) {
        Ok(()) => Ok(true),
        Err(WaitError::Interrupted) => Ok(false),
        Err(WaitError::Failed(e)) => Err(e),
    }
}

/// The period boundaries after `due` that [`next_due`] passed over to reach `next`,
/// counting only those in the measured span of `window` (after its warm-up, up to its
/// end): an overrun of the last cycle past the window's end misses no period of it.
pub(super) fn skipped(due: i64, next: i64, period: i64, window: &Window) -> u64 {
    let passed_over = ((next - due) / period.max(1) - 1).max(0) as u64;
    window.boundaries_measured(due, period, passed_over)
}

/// The next cycle's due instant after `due`: one period on, or the first period
/// boundary still ahead when a cycle overran (cycles never pile up; the caller counts
/// the skipped ones, see [`skipped`]).
pub(super) fn next_due(due: i64, period: i64, now: i64) -> i64 {
    let next = due + period;
    if next > now {
        next
    } else {
        next + ((now - next) / period + 1) * period
    }
}

/// What a periodic worker's stream is made of: its probe's settings, where it runs,
/// and its tally.
pub(super) struct Parts<'a> {
    pub(super) setup: &'a ProbeSetup,
    pub(super) placement: &'a Placement,
    pub(super) tally: &'a mut Tally,
}

/// A scheduling probe's worker as [`measure_periodic`] and [`rehearse_periodic`] pace
/// it: one cycle per period, each tallied by the worker itself. Every `Periodic` is a
/// [`Worker`] (see the implementation below): only the cycle differs between them.
pub(super) trait Periodic: Send {
    /// The probe the worker belongs to.
    const INFO: &'static ProbeInfo;

    /// Cycles the rehearsal runs, paced as when measuring.
    const REHEARSAL_CYCLES: usize = 3;

    /// The settings, placement and tally, borrowed at once.
    fn parts(&mut self) -> Parts<'_>;

    /// The worker's tally.
    fn tally(&mut self) -> &mut Tally {
        self.parts().tally
    }

    /// Runs the cycle's code without measuring (see [`Worker::rehearse`]).
    fn rehearse_cycles(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError>
    where
        Self: Sized,
    {
        let period = self.parts().setup.period.0.max(1);
        rehearse_periodic(self, period, Self::REHEARSAL_CYCLES, stop, live)
    }

    /// Events to report beside the stream, once the partners are released.
    fn events(&mut self) -> Vec<Event> {
        Vec::new()
    }

    /// How long before each due instant a cycle begins, ns: the pacing sleeps to
    /// `due - lead`, and the cycle does what comes before `due` itself.
    fn lead(&self) -> i64 {
        0
    }

    /// Runs the cycle due at `due` (`at` ns into the measured span) and tallies what it
    /// gave. False when a stop request cut it short before it counted anything: it is
    /// then neither counted nor followed by the next due instant.
    fn run(
        &mut self,
        due: i64,
        at: i64,
        measured: bool,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<bool, RtError>;

    /// Stops the partner tasks and waits for them to end.
    fn release(&mut self);
}

impl<W: Periodic> Worker for W {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        self.rehearse_cycles(live, stop)
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        let period = self.parts().setup.period.0.max(1);
        measure_periodic(self, period, window, stop, live)
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        let parts = self.parts();
        vec![(parts.tally.account).stream(W::INFO, parts.setup, parts.placement, phase)]
    }

    fn finish(mut self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        self.release();
        let events = self.events();
        let parts = self.parts();
        let stream = (parts.tally.account).stream(W::INFO, parts.setup, parts.placement, phase);
        (vec![stream], events)
    }
}

/// The measuring loop of a scheduling probe: a cycle every `period` ns from the
/// window's start (plus the worker's lead) until its end or a stop request; periods an
/// overrunning cycle passed over count as missed. Releases the partners at the end.
pub(super) fn measure_periodic(
    worker: &mut impl Periodic,
    period: i64,
    window: &Window,
    stop: &AtomicBool,
    live: &LiveStats,
) -> Result<(), RtError> {
    let lead = worker.lead();
    let faults_before = worker.tally().settle(live);
    // Cycles are due at the end of each period, the last at the end of the window
    // (see `Window`), as every probe's samples are.
    let mut due = window.start + period;
    let mut last = window.start;
    let result = loop {
        if stop.load(Ordering::Relaxed) || window.end.is_some_and(|end| due > end) {
            break Ok(());
        }
        match sleep_until(due - lead) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => break Err(e),
        }
        let measured = due > window.warm_up_end;
        match worker.run(due, due - window.warm_up_end, measured, stop, live) {
            Ok(true) => worker.tally().cycles += u64::from(measured),
            Ok(false) => continue,
            Err(e) => break Err(e),
        }
        last = Clock::Monotonic.now_ns();
        let next = next_due(due, period, last + lead);
        worker
            .tally()
            .skip(skipped(due, next, period, window), true, live);
        due = next;
    };
    let account = &mut worker.tally().account;
    account.elapsed = Nanos((last - window.warm_up_end).max(0));
    account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
    worker.release();
    result
}

/// The rehearsal of a periodic worker: `cycles` cycles paced as when measuring, then
/// the tally forgets them.
pub(super) fn rehearse_periodic(
    worker: &mut impl Periodic,
    period: i64,
    cycles: usize,
    stop: &AtomicBool,
    live: &LiveStats,
) -> Result<(), RtError> {
    let lead = worker.lead();
    let mut due = Clock::Monotonic.now_ns() + period;
    for _ in 0..cycles {
        if sleep_until(due - lead)? {
            worker.run(due, 0, true, stop, live)?;
        }
        due = next_due(due, period, Clock::Monotonic.now_ns() + lead);
    }
    worker.tally().reset(live);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrunning_cycles_skip_to_the_next_boundary_ahead() {
        assert_eq!(next_due(1_000, 100, 1_050), 1_100);
        assert_eq!(next_due(1_000, 100, 1_100), 1_200);
        assert_eq!(next_due(1_000, 100, 1_350), 1_400);
        let open = Window {
            start: 0,
            warm_up_end: 0,
            end: None,
        };
        assert_eq!(skipped(1_000, 1_100, 100, &open), 0);
        assert_eq!(skipped(1_000, 1_400, 100, &open), 3);
    }

    #[test]
    fn only_boundaries_in_the_measured_span_count_as_skipped() {
        let window = Window {
            start: 0,
            warm_up_end: 1_150,
            end: Some(1_300),
        };
        // 1_100 is warm-up, 1_200 and 1_300 are measured, 1_400… are past the end.
        assert_eq!(skipped(1_000, 1_600, 100, &window), 2);
        assert_eq!(skipped(1_200, 1_900, 100, &window), 1);
        assert_eq!(skipped(1_300, 1_900, 100, &window), 0);
        assert_eq!(skipped(900, 1_200, 100, &window), 0);
        assert_eq!(skipped(900, 1_300, 100, &window), 1);
    }

    #[test]
    fn partners_sit_below_the_measuring_thread() {
        let at = |policy| Placement {
            thread: 0,
            cpu: Some(1),
            policy,
            timer_slack_ns: 0,
            feed: None,
            checkpoint: None,
        };
        let p = partner_place(&at(SchedSpec::Fifo { priority: 95 }), 2).unwrap();
        assert_eq!(
            (p.cpu, p.policy),
            (Some(1), Some(Policy::Fifo { priority: 93 }))
        );
        let p = partner_place(&at(SchedSpec::Other { nice: 0 }), 2).unwrap();
        assert_eq!(p.policy, Some(Policy::Other { nice: 0 }));
        assert_eq!(
            policy_below(SchedSpec::Fifo { priority: 1 }, 1),
            Policy::Fifo { priority: 1 },
            "never below priority 1"
        );
    }
}
