//! What the two-task probes (`msg`, `sem`) share: the `task` and `cpu` parameters, the
//! partner's placement and policy, and the plans their cycles follow.

use super::info::{BuildError, ParamInfo, ProbeSetup};
use super::policy_of;
use super::Placement;
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
    /// Reads `task` and `cpu` of `probe`; `cpu=cross` needs a second CPU.
    pub(super) fn from_setup(
        probe: &'static str,
        setup: &ProbeSetup,
    ) -> Result<Pairing, BuildError> {
        let task = TaskKind::from_name(setup.param("task"))
            .ok_or_else(|| BuildError::param(probe, "task", setup, "choose thread or process"))?;
        let cross = setup.param("cpu") == "cross";
        if cross && setup.allowed_cpus.len() < 2 {
            return Err(BuildError::Unsupported {
                probe,
                why: format!(
                    "cpu=cross needs two CPUs this process may use, and it may use only {:?} \
                     (see `taskset -p $$`)",
                    setup.allowed_cpus
                ),
            });
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
        memory::prefault_stack::<{ super::PREFAULT_BYTES }>();
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

#[cfg(test)]
mod tests {
    use super::*;

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
