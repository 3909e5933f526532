//! Scheduling policies of the calling thread, including `SCHED_DEADLINE`.

use crate::RtError;
use std::fmt;

/// A scheduling policy with its parameters, as the kernel understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER` (CFS/EEVDF) with a nice value.
    Other {
        /// Nice value, -20 … 19.
        nice: i32,
    },
    /// `SCHED_BATCH` with a nice value.
    Batch {
        /// Nice value, -20 … 19.
        nice: i32,
    },
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_FIFO` at a static priority 1 … 99.
    Fifo {
        /// Real-time priority.
        priority: i32,
    },
    /// `SCHED_RR` at a static priority 1 … 99.
    RoundRobin {
        /// Real-time priority.
        priority: i32,
    },
    /// `SCHED_DEADLINE` (constant bandwidth server), all in nanoseconds.
    Deadline {
        /// Budget per period.
        runtime_ns: u64,
        /// Relative deadline.
        deadline_ns: u64,
        /// Period.
        period_ns: u64,
    },
}

impl Policy {
    /// True for the policies that preempt `SCHED_OTHER` (fifo, rr, deadline).
    pub fn is_realtime(&self) -> bool {
        matches!(
            self,
            Policy::Fifo { .. } | Policy::RoundRobin { .. } | Policy::Deadline { .. }
        )
    }

    /// The policy's short name (`fifo`, `rr`, `other`, `batch`, `idle`, `deadline`).
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other { .. } => "other",
            Policy::Batch { .. } => "batch",
            Policy::Idle => "idle",
            Policy::Fifo { .. } => "fifo",
            Policy::RoundRobin { .. } => "rr",
            Policy::Deadline { .. } => "deadline",
        }
    }

    fn to_attr(self) -> libc::sched_attr {
        let mut attr = empty_attr();
        match self {
            Policy::Other { nice } => {
                attr.sched_policy = libc::SCHED_OTHER as u32;
                attr.sched_nice = nice;
            }
            Policy::Batch { nice } => {
                attr.sched_policy = libc::SCHED_BATCH as u32;
                attr.sched_nice = nice;
            }
            Policy::Idle => attr.sched_policy = libc::SCHED_IDLE as u32,
            Policy::Fifo { priority } => {
                attr.sched_policy = libc::SCHED_FIFO as u32;
                attr.sched_priority = priority as u32;
            }
            Policy::RoundRobin { priority } => {
                attr.sched_policy = libc::SCHED_RR as u32;
                attr.sched_priority = priority as u32;
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => {
                attr.sched_policy = SCHED_DEADLINE;
                attr.sched_runtime = runtime_ns;
                attr.sched_deadline = deadline_ns;
                attr.sched_period = period_ns;
            }
        }
        attr
    }

    fn from_attr(attr: &libc::sched_attr) -> Policy {
        match attr.sched_policy {
            p if p == libc::SCHED_FIFO as u32 => Policy::Fifo {
                priority: attr.sched_priority as i32,
            },
            p if p == libc::SCHED_RR as u32 => Policy::RoundRobin {
                priority: attr.sched_priority as i32,
            },
            p if p == libc::SCHED_BATCH as u32 => Policy::Batch {
                nice: attr.sched_nice,
            },
            p if p == libc::SCHED_IDLE as u32 => Policy::Idle,
            SCHED_DEADLINE => Policy::Deadline {
                runtime_ns: attr.sched_runtime,
                deadline_ns: attr.sched_deadline,
                period_ns: attr.sched_period,
            },
            _ => Policy::Other {
                nice: attr.sched_nice,
            },
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Other { nice } | Policy::Batch { nice } => write!(f, "{}:{nice}", self.name()),
            Policy::Idle => f.write_str("idle"),
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
                write!(f, "{}:{priority}", self.name())
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => write!(f, "deadline:{runtime_ns}ns:{deadline_ns}ns:{period_ns}ns"),
        }
    }
}

const SCHED_DEADLINE: u32 = 6;

fn empty_attr() -> libc::sched_attr {
    libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    }
}

/// Sets the calling thread's policy.
pub fn set_current_thread(policy: Policy) -> Result<(), RtError> {
    set_task(0, policy)
}

/// Sets the policy of task `tid` (a thread or process id; 0 = the calling thread).
pub fn set_task(tid: i32, policy: Policy) -> Result<(), RtError> {
    try_set_task(tid, policy).map_err(|e| {
        RtError::new(
            format!("set scheduling policy {policy}"),
            std::io::Error::from_raw_os_error(e),
        )
    })
}

/// [`set_task`] without allocating: the bare `errno` on failure.
fn try_set_task(tid: i32, policy: Policy) -> Result<(), i32> {
    let attr = policy.to_attr();
    // SAFETY: sched_setattr(tid, &attr, flags 0) reads `attr.size` bytes from a valid,
    // fully initialised sched_attr.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const _, 0) };
    if rc != 0 {
        // SAFETY: the calling thread's errno slot is always valid.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(())
}

/// The calling thread's current policy.
pub fn current_thread() -> Result<Policy, RtError> {
    let mut attr = empty_attr();
    // SAFETY: sched_getattr writes at most `size` bytes into the valid `attr`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut _,
            std::mem::size_of::<libc::sched_attr>() as u32,
            0,
        )
    };
    if rc != 0 {
        return Err(RtError::last("read scheduling policy"));
    }
    Ok(Policy::from_attr(&attr))
}

/// Sets a policy on the calling thread and restores the previous one on drop.
///
/// Must be dropped on the thread that created it.
#[derive(Debug)]
pub struct PolicyGuard {
    original: Policy,
    /// The policy now in force.
    pub applied: Policy,
}

impl PolicyGuard {
    /// Applies `policy`, remembering the current one.
    pub fn apply(policy: Policy) -> Result<PolicyGuard, RtError> {
        let original = current_thread()?;
        set_current_thread(policy)?;
        Ok(PolicyGuard {
            original,
            applied: policy,
        })
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        let _ = set_current_thread(self.original);
    }
}

/// Why the kernel refused a policy, in terms a user can act on.
pub fn explain_refusal(policy: &Policy, err: &RtError) -> String {
    match (policy, err.errno()) {
        (Policy::Deadline { .. }, Some(libc::EPERM)) => "not permitted: SCHED_DEADLINE needs \
             root or CAP_SYS_NICE, and a CPU affinity spanning the whole root domain (no \
             taskset restriction)"
            .to_string(),
        (_, Some(libc::EPERM)) => "not permitted: run as root, or grant CAP_SYS_NICE \
             (setcap cap_sys_nice+ep $(which latlab)), or raise RLIMIT_RTPRIO"
            .to_string(),
        (Policy::Deadline { .. }, Some(libc::EBUSY)) => "the kernel's SCHED_DEADLINE \
             admission control refused the bandwidth: lower the runtime, raise the period, \
             or measure fewer CPUs"
            .to_string(),
        (Policy::Deadline { .. }, Some(libc::EINVAL)) => "the kernel rejected these \
             SCHED_DEADLINE parameters: it needs 1024 ns <= runtime <= deadline <= period"
            .to_string(),
        _ => err.source.to_string(),
    }
}

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}
