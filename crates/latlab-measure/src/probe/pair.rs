//! What the two-task probes (`msg`, `sem`) share: the `task` and `cpu` parameters, the
//! partner's placement and policy, and the accounting of cycles — which instant each
//! sample belongs to, which were warm-up, which passed without a sample.

use super::account::Account;
use super::catalogue::{ParamInfo, ProbeSetup};
use super::Placement;
use crate::live::LiveStats;
use crate::record::SampleRecorder;
use crate::runner::policy_of;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::ipc::{PartnerSpec, Plan};
use latlab_rt::memory;
use latlab_rt::partner::{PartnerPlace, TaskKind};
use latlab_rt::sched::Policy;

/// The `task` parameter.
pub(super) const TASK: ParamInfo = ParamInfo {
    key: "task",
    choices: &["thread", "process"],
    default: "thread",
    help: "the partner is a thread of latlab or a forked process",
};

/// The `cpu` parameter.
pub(super) const CPU: ParamInfo = ParamInfo {
    key: "cpu",
    choices: &["same", "cross"],
    default: "same",
    help: "the partner runs on the measuring thread's CPU or on another one",
};

/// Rehearsal: this many cycles, at most 1 ms apart.
pub(super) const REHEARSAL_CYCLES: i64 = 8;
const REHEARSAL_PERIOD: i64 = 1_000_000;

/// The two-task settings of a probe, checked.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pairing {
    pub task: TaskKind,
    pub cross: bool,
}

impl Pairing {
    /// Reads `task` and `cpu`; `cpu=cross` needs a second CPU.
    pub(super) fn from_setup(setup: &ProbeSetup) -> Result<Pairing, String> {
        let task = TaskKind::from_name(setup.param("task"))
            .ok_or_else(|| format!("task={}: choose thread or process", setup.param("task")))?;
        let cross = setup.param("cpu") == "cross";
        if cross && setup.allowed_cpus.len() < 2 {
            return Err(format!(
                "cpu=cross needs two CPUs this process may use, and it may use only {:?} \
                 (see `taskset -p $$`)",
                setup.allowed_cpus
            ));
        }
        Ok(Pairing { task, cross })
    }

    /// Where and at what policy the partner of a worker at `placement` runs: on the
    /// same CPU or the next allowed one, one real-time priority below the measuring
    /// thread (see [`partner_policy`]).
    pub(super) fn partner(&self, setup: &ProbeSetup, placement: &Placement) -> PartnerSpec {
        PartnerSpec {
            task: self.task,
            place: PartnerPlace {
                cpu: setup.partner_cpu(placement, self.cross),
                policy: Some(partner_policy(placement.policy)),
            },
            idle_poll_ns: (setup.period.0 / 4).clamp(10_000, 1_000_000),
        }
    }
}

/// The partner's policy for a measuring thread running at `measuring`: FIFO and RR one
/// priority below (below priority 1, SCHED_OTHER); below any deadline task, FIFO 99;
/// otherwise the same.
pub(super) fn partner_policy(measuring: SchedSpec) -> Policy {
    match measuring {
        SchedSpec::Fifo { priority } | SchedSpec::Rr { priority } if priority <= 1 => {
            Policy::Other { nice: 0 }
        }
        SchedSpec::Fifo { priority } => Policy::Fifo {
            priority: priority - 1,
        },
        SchedSpec::Rr { priority } => Policy::RoundRobin {
            priority: priority - 1,
        },
        SchedSpec::Deadline { .. } => Policy::Fifo { priority: 99 },
        other => policy_of(other),
    }
}

/// After forking a partner, the measuring thread's stack pages are shared
/// copy-on-write with the child: write them again so the first write in the
/// measurement does not fault.
pub(super) fn after_spawn(task: TaskKind) {
    if task == TaskKind::Process {
        memory::prefault_stack::<{ crate::runner::PREFAULT_BYTES }>();
    }
}

/// The rehearsal's plan, starting now.
pub(super) fn rehearsal_plan(period: Nanos) -> Plan {
    let period = period.0.clamp(1, REHEARSAL_PERIOD);
    let start = latlab_rt::clock::Clock::Monotonic.now_ns();
    Plan {
        start,
        period,
        end: start + REHEARSAL_CYCLES * period,
    }
}

/// The measured plan of a window: instants `start + k·period`, k ≥ 1, up to the end.
pub(super) fn window_plan(window: &super::Window, period: Nanos) -> Plan {
    Plan {
        start: window.start,
        period: period.0.max(1),
        end: window.end.unwrap_or(i64::MAX),
    }
}

/// The samples of one worker and the accounting of its cycles.
///
/// Each cycle k of the plan ends with a sample, or with none (a timeout, a lost or
/// unreadable message, a late wake that skipped it): a cycle is never silently
/// dropped. Cycles due at or before the warm-up end are warm-up; the others are
/// measured, and a measured cycle without a sample is a missed one.
pub(super) struct Tally {
    pub(super) account: Account,
    plan: Plan,
    warm_up_end: i64,
    /// The next cycle not yet accounted for.
    expected: i64,
}

impl Tally {
    pub(super) fn new(recorder: SampleRecorder) -> Tally {
        Tally {
            account: Account::new(recorder),
            plan: Plan {
                start: 0,
                period: 1,
                end: 0,
            },
            warm_up_end: 0,
            expected: 1,
        }
    }

    /// Starts accounting for `plan`.
    pub(super) fn begin(&mut self, plan: Plan, warm_up_end: i64) {
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
    pub(super) fn sample(&mut self, k: i64, sample: i64, live: &LiveStats) {
        if k < self.expected || k > self.last() {
            return;
        }
        let gap = self.measured_among(self.expected, k);
        self.expected = k + 1;
        self.account.missed += gap;
        let due = self.plan.due(k);
        if due > self.warm_up_end {
            self.account
                .record(sample, due - self.warm_up_end, gap, live);
        } else {
            self.account.warm_up_samples += 1;
            live.publish_missed(gap);
        }
    }

    /// Cycle `k` (and any before it not yet accounted for) gave no sample.
    #[inline]
    pub(super) fn no_sample(&mut self, k: i64, live: &LiveStats) {
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
    pub(super) fn done(&self) -> bool {
        self.expected > self.last()
    }

    /// The plan ran to its end: cycles still unaccounted for had no sample.
    pub(super) fn close(&mut self, live: &LiveStats) {
        if !self.done() {
            self.no_sample(self.last(), live);
        }
    }

    /// The measured span, ending at `at` (or the plan's end, if earlier).
    pub(super) fn set_elapsed(&mut self, at: i64) {
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
        t.begin(
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
        t.sample(1, 5, &live);
        t.sample(4, 7, &live); // 2: warm-up without a sample, 3: missed
        t.sample(4, 9, &live); // a stale repeat: ignored
        t.no_sample(6, &live); // 5 and 6 missed
        t.sample(7, 3, &live);
        assert!(!t.done());
        t.close(&live); // 8, 9, 10 missed
        assert!(t.done());
        assert_eq!(t.account.warm_up_samples, 1);
        assert_eq!(t.account.recorder.samples(), 2);
        assert_eq!(t.account.missed, 1 + 2 + 3);
        assert_eq!(
            t.account.recorder.samples() + t.account.missed,
            8,
            "every measured cycle"
        );
        assert_eq!(t.account.first, Some(Nanos(7)));
        t.sample(11, 1, &live); // past the plan: ignored
        assert_eq!(t.account.recorder.samples(), 2);
    }

    #[test]
    fn partners_run_one_priority_below() {
        assert_eq!(
            partner_policy(SchedSpec::Fifo { priority: 95 }),
            Policy::Fifo { priority: 94 }
        );
        assert_eq!(
            partner_policy(SchedSpec::Fifo { priority: 1 }),
            Policy::Other { nice: 0 },
            "never at the measuring thread's own priority"
        );
        assert_eq!(
            partner_policy(SchedSpec::Other { nice: 0 }),
            Policy::Other { nice: 0 }
        );
    }
}
