//! One worker's tally: its samples, missed cycles and marks (events to report), kept
//! without allocating while measuring. Cycles are counted as they run (the scheduling
//! probes, paced by [`super::partners`]) or by their index in a [`Plan`] (the two-task
//! probes, whose partner follows the plan: see [`Tally::begin_plan`]).

use super::account::Account;
use super::Placement;
use crate::live::LiveStats;
use crate::record::SampleRecorder;
use latlab_model::run::Event;
use latlab_model::Nanos;
use latlab_rt::ipc::Plan;
use latlab_rt::memory;

/// Most marks (events to report) a worker keeps; [`Tally::marks_total`] counts all.
pub(super) const MAX_MARKS: usize = 10;

/// Something worth an event, kept without allocating while measuring and turned into
/// an [`Event`] when the stream is finished.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    /// Offset into the measured span, ns.
    pub(super) at: i64,
    /// The sample or wait it concerns, ns.
    pub(super) value: i64,
    /// Probe-specific detail (e.g. a wake-up order).
    pub(super) detail: u64,
}

/// Samples, missed cycles and events of one worker.
///
/// In a plan, each cycle k ends with a sample, or with none (a timeout, a lost or
/// unreadable message, a late wake that skipped it): a cycle is never silently
/// dropped. Cycles due at or before the warm-up end are warm-up; the others are
/// measured, and a measured cycle without a sample is a missed one.
#[derive(Debug)]
pub(super) struct Tally {
    pub(super) account: Account,
    /// Cycles run in the measured span, with or without a sample.
    pub(super) cycles: u64,
    pub(super) marks: Vec<Mark>,
    pub(super) marks_total: u64,
    plan: Plan,
    warm_up_end: i64,
    /// The next cycle of the plan not yet accounted for.
    expected: i64,
}

impl Tally {
    pub(super) fn new(recorder: SampleRecorder) -> Tally {
        Tally {
            account: Account::new(recorder),
            cycles: 0,
            marks: Vec::with_capacity(MAX_MARKS),
            marks_total: 0,
            plan: Plan {
                start: 0,
                period: 1,
                end: 0,
            },
            warm_up_end: 0,
            expected: 1,
        }
    }

    /// Takes a sample at `at` (ns into the measured span); warm-up samples only count.
    #[inline(always)]
    pub(super) fn sample(&mut self, sample: i64, at: i64, measured: bool, live: &LiveStats) {
        if !measured {
            self.account.warm_up_samples += 1;
            self.account.recorder.count_warm_up(1);
            return;
        }
        self.account.record(sample, at, 0, live);
    }

    /// Counts a cycle without a sample (only in the measured span).
    #[inline(always)]
    pub(super) fn miss(&mut self, measured: bool, live: &LiveStats) {
        self.skip(1, measured, live);
    }

    /// Counts `cycles` without a sample at once: the period boundaries an overrunning
    /// cycle passed ([`next_due`] skips them so cycles never pile up; they are counted
    /// here, never lost).
    #[inline(always)]
    pub(super) fn skip(&mut self, cycles: u64, measured: bool, live: &LiveStats) {
        if measured && cycles > 0 {
            self.account.miss(cycles, live);
        }
    }

    /// Counts a mark (in the measured span), keeping the first [`MAX_MARKS`].
    #[inline(always)]
    pub(super) fn mark(&mut self, mark: Mark, measured: bool) {
        if !measured {
            return;
        }
        self.marks_total += 1;
        if self.marks.len() < MAX_MARKS {
            self.marks.push(mark);
        }
    }

    /// An event of this worker's thread.
    pub(super) fn event(
        &self,
        placement: &Placement,
        kind: &str,
        mark: Option<Mark>,
        message: String,
    ) -> Event {
        Event {
            kind: kind.to_string(),
            at_ns: Nanos(mark.map_or(self.account.elapsed.0, |m| m.at)),
            thread: placement.thread,
            cpu: placement.cpu,
            value_ns: mark.map(|m| Nanos(m.value)),
            message,
        }
    }

    /// Touches again, at the start of the measured span, every page the measuring loop
    /// writes: another measuring thread's partner process may have been forked after
    /// this thread's rehearsal, and a fork leaves every private page copy-on-write, so
    /// the first write to each would be a page fault inside the measurement. Returns
    /// the thread's page-fault count to measure from.
    pub(super) fn settle(&mut self, live: &LiveStats) -> u64 {
        memory::prefault_stack::<{ 32 * 1024 }>();
        self.account.recorder.reset();
        let blank = Mark {
            at: 0,
            value: 0,
            detail: 0,
        };
        self.marks.clear();
        self.marks.spare_capacity_mut().iter_mut().for_each(|m| {
            m.write(blank);
        });
        live.reset();
        memory::thread_page_faults()
    }

    /// Forgets what the rehearsal left.
    pub(super) fn reset(&mut self, live: &LiveStats) {
        self.cycles = 0;
        self.marks.clear();
        self.marks_total = 0;
        self.account.reset(live);
    }

    /// Starts accounting for `plan`.
    pub(super) fn begin_plan(&mut self, plan: Plan, warm_up_end: i64) {
        self.plan = plan;
        self.warm_up_end = warm_up_end;
        self.expected = 1;
    }

    /// Measured cycles among `from..to`.
    #[inline(always)]
    fn measured_among(&self, from: i64, to: i64) -> u64 {
        let first_measured = self.plan.index_at(self.warm_up_end) + 1;
        (to - from.max(first_measured)).max(0) as u64
    }

    /// The last cycle of the plan.
    #[inline(always)]
    fn last(&self) -> i64 {
        self.plan.index_at(self.plan.end)
    }

    /// Cycle `k` gave `sample` (ns). Cycles before it not yet accounted for had none;
    /// a cycle already accounted for (a stale message) is ignored.
    #[inline]
    pub(super) fn sample_cycle(&mut self, k: i64, sample: i64, live: &LiveStats) {
        if k < self.expected || k > self.last() {
            return;
        }
        let gap = self.measured_among(self.expected, k);
        self.expected = k + 1;
        self.account.missed += gap;
        self.account.recorder.count_missed(gap);
        let due = self.plan.due(k);
        if due > self.warm_up_end {
            self.account
                .record(sample, due - self.warm_up_end, gap, live);
        } else {
            self.account.warm_up_samples += 1;
            self.account.recorder.count_warm_up(1);
            live.publish_missed(gap);
        }
    }

    /// Cycle `k` (and any before it not yet accounted for) gave no sample.
    #[inline]
    pub(super) fn no_sample_until(&mut self, k: i64, live: &LiveStats) {
        let k = k.min(self.last());
        if k < self.expected {
            return;
        }
        let gap = self.measured_among(self.expected, k + 1);
        self.expected = k + 1;
        self.account.miss(gap, live);
    }

    /// True when every cycle of the plan is accounted for.
    #[inline]
    pub(super) fn plan_done(&self) -> bool {
        self.expected > self.last()
    }

    /// The plan ran to its end: cycles still unaccounted for had no sample.
    pub(super) fn close_plan(&mut self, live: &LiveStats) {
        if !self.plan_done() {
            self.no_sample_until(self.last(), live);
        }
    }

    /// The measured span, ending at `at` (or the plan's end, if earlier).
    pub(super) fn set_plan_elapsed(&mut self, at: i64) {
        self.account.elapsed = Nanos((at.min(self.plan.end) - self.warm_up_end).max(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecorderLimits;

    fn tally(warm_up_end: i64) -> Tally {
        let mut t = Tally::new(SampleRecorder::new(RecorderLimits {
            top: 4,
            spike_threshold: None,
            spike_capacity: 0,
            timeline_interval: 1_000_000_000,
            timeline_slots: 4,
        }));
        t.begin_plan(
            Plan {
                start: 0,
                period: 100,
                end: 1_000,
            },
            warm_up_end,
        );
        t
    }

    #[test]
    fn every_cycle_is_a_sample_a_warm_up_sample_or_missed() {
        let live = LiveStats::default();
        let mut t = tally(200); // cycles 1 and 2 are warm-up; 3..=10 measured
        t.sample_cycle(1, 5, &live);
        t.sample_cycle(4, 7, &live); // 2: warm-up without a sample, 3: missed
        t.sample_cycle(4, 9, &live); // a stale repeat: ignored
        t.no_sample_until(6, &live); // 5 and 6 missed
        t.sample_cycle(7, 3, &live);
        assert!(!t.plan_done());
        t.close_plan(&live); // 8, 9, 10 missed
        assert!(t.plan_done());
        assert_eq!(t.account.warm_up_samples, 1);
        assert_eq!(t.account.recorder.samples(), 2);
        assert_eq!(t.account.missed, 1 + 2 + 3);
        assert_eq!(
            t.account.recorder.samples() + t.account.missed,
            8,
            "every measured cycle"
        );
        assert_eq!(t.account.first, Some(Nanos(7)));
        t.sample_cycle(11, 1, &live); // past the plan: ignored
        assert_eq!(t.account.recorder.samples(), 2);
    }
}
