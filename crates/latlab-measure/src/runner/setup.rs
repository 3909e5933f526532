//! Setting up: the process-wide guards of a run and each measuring thread's own.

use super::{RunError, RunRequest, PREFAULT_BYTES};
use crate::notice::Notice;
use crate::probe::Placement;
use latlab_model::run::Conditions;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::sched::{self, Policy, PolicyGuard};
use latlab_rt::slack::{self, TimerSlackGuard};
use latlab_rt::{affinity, memory};

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
pub(super) struct Ready {
    pub(super) placement: Placement,
    pub(super) refused: Option<String>,
}

/// Per-thread guards, dropped (restored) on the measuring thread when it ends.
pub(super) struct ThreadGuards {
    _policy: Option<PolicyGuard>,
    _slack: Option<TimerSlackGuard>,
}

pub(super) fn set_up_thread(
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
