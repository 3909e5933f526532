//! Setting up: the process-wide guards of a run and each measuring thread's own.

use super::{RunError, RunRequest};
use crate::notice::Notice;
use crate::probe::{policy_of, spec_of, PREFAULT_BYTES};
use crate::probe::{Placement, Site};
use latlab_model::run::Conditions;
use latlab_model::spec::SchedSpec;
use latlab_rt::memory::{LockReach, LockRoom};
use latlab_rt::sched::{self, PolicyGuard};
use latlab_rt::slack::{self, TimerSlackGuard};
use latlab_rt::{affinity, memory};

/// What one phase runs while the memory lock is held, to size the lock.
///
/// The bounds below are generous: a two-CPU timer run maps 1.1 MiB after locking (they
/// give 5.6 MiB), with three loads 7.3 MiB (11.8), with prio-wake's eight waiters 3.5
/// MiB (10.7). Too much only costs a full lock under a limit that would just have held
/// the run; too little would make a later thread or allocation fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseFootprint {
    /// Measuring threads.
    pub measuring_threads: usize,
    /// Samples above the spike threshold each thread has room for (0 when none are kept).
    pub spikes_kept: usize,
    /// Largest samples each thread keeps.
    pub top_spikes: usize,
    /// The probe starts partner tasks (a primitive probe).
    pub partners: bool,
    /// Background loads.
    pub loads: usize,
}

/// A thread's mappings beside its stack: the guard page, the signal stack Rust gives
/// it (with its own guard page), thread-local storage.
const THREAD_EXTRA_BYTES: u64 = 64 << 10;
/// A recorder's fixed part: histogram counts (108 KiB), timeline (at most 4096 slots,
/// 64 KiB), and the stream each becomes when the phase ends.
const RECORDER_BYTES: u64 = 512 << 10;
/// Partner threads a primitive probe starts per measuring thread, at most
/// (prio-wake:tasks=8), each on a stack of at most 256 KiB.
const PARTNER_THREADS: u64 = 8;
const PARTNER_STACK_BYTES: u64 = 256 << 10;
/// The coordinating thread's own while measuring: its stack's growth, the live display,
/// the loads' bookkeeping, encoding each stream when its phase ends, and one helper
/// thread on a default stack.
const COORDINATOR_BYTES: u64 = 4 << 20;

impl PhaseFootprint {
    /// Bytes the phase maps while it runs, at most.
    pub fn bytes(&self) -> u64 {
        let spike = std::mem::size_of::<latlab_model::run::Spike>() as u64;
        // Spikes are kept by the recorder, then copied into the stream.
        let spikes = 2 * spike * (self.spikes_kept as u64 + self.top_spikes as u64);
        let partners = match self.partners {
            true => PARTNER_THREADS * (PARTNER_STACK_BYTES + THREAD_EXTRA_BYTES),
            false => 0,
        };
        let per_thread = super::MEASURING_STACK_BYTES as u64
            + THREAD_EXTRA_BYTES
            + RECORDER_BYTES
            + spikes
            + partners;
        // Each load has a thread reading its worker's reports, on a default stack.
        let per_load = default_thread_stack() + THREAD_EXTRA_BYTES;
        per_thread
            .saturating_mul(self.measuring_threads as u64)
            .saturating_add(per_load.saturating_mul(self.loads as u64))
    }
}

/// Bytes a run maps while its memory is locked, at most: its largest phase (a phase's
/// threads and buffers go when it ends) and the coordinating thread's own.
pub fn mapped_while_locked(phases: impl IntoIterator<Item = PhaseFootprint>) -> u64 {
    let largest = phases.into_iter().map(|p| p.bytes()).max().unwrap_or(0);
    largest.saturating_add(COORDINATOR_BYTES)
}

/// The stack of a thread started without a size: `RUST_MIN_STACK`, else 2 MiB.
fn default_thread_stack() -> u64 {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2 << 20)
}

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
    /// Locks memory as far as the limit holds it and requests the DMA latency,
    /// degrading with a notice when refused.
    pub fn apply(
        lock_memory: Option<memory::LockRequest>,
        dma_latency_us: Option<i32>,
    ) -> SystemSetup {
        let mut notices = Vec::new();
        let mut conditions = Conditions {
            euid: latlab_rt::process::effective_uid(),
            ..Conditions::default()
        };
        let memory_lock = match lock_memory {
            Some(request) => lock_within_limit(request, &mut notices),
            None => {
                notices.push(Notice::MemoryLockSkipped);
                None
            }
        };
        conditions.memory_locked = memory_lock
            .as_ref()
            .is_some_and(|lock| lock.reach == LockReach::CurrentAndFuture);
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

/// Locks what `RLIMIT_MEMLOCK` can hold: everything, now and later, when it holds what
/// the run will map; else only what is mapped now, or nothing — never the future under
/// a limit it would overflow, where a later thread or allocation would fail.
fn lock_within_limit(
    request: memory::LockRequest,
    notices: &mut Vec<Notice>,
) -> Option<memory::MemoryLock> {
    let room = LockRoom::of_this_process();
    let reach = room.reach(request.mapped_later);
    let limited = |locked_current| {
        room.binding_limit().map(|limit| Notice::MemoryLockLimited {
            limit,
            mapped: room.mapped,
            needed: room.mapped.saturating_add(request.mapped_later),
            locked_current,
        })
    };
    let Some(reach) = reach else {
        notices.extend(limited(false));
        return None;
    };
    match memory::MemoryLock::lock(request.scope, reach) {
        Ok(lock) => {
            if reach == LockReach::Current {
                notices.extend(limited(true));
            }
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
    site: Site,
) -> Result<(Ready, ThreadGuards), RunError> {
    // A SIGCONT is counted on another thread: its handler would cut this one's
    // sleeps short (no sleep is restarted after a handler).
    latlab_rt::signal::block_continue_counting().map_err(|e| RunError::Runtime(e.to_string()))?;
    if site == Site::Elsewhere {
        return Ok(set_up_reader(thread, cpu, request));
    }
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
                feed: request.feeds.get(thread).cloned(),
                checkpoint: request.checkpoint.clone(),
            },
            refused,
        },
        ThreadGuards {
            _policy: policy_guard,
            _slack: slack_guard,
        },
    ))
}

/// A worker that reads what the kernel measured on CPU `cpu`: on the CPUs not
/// measured (all, if none is left), at the policy it was started with. Its placement
/// carries the measured CPU and the run's policy, which the worker applies to what
/// measures there.
fn set_up_reader(thread: usize, cpu: usize, request: &RunRequest) -> (Ready, ThreadGuards) {
    let others: Vec<usize> = affinity::allowed_cpus()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !request.cpus.contains(c))
        .collect();
    if !others.is_empty() {
        // Best effort: a reader on a measured CPU only costs it some time.
        let _ = affinity::set_current_thread(&others);
    }
    memory::prefault_stack::<PREFAULT_BYTES>();
    let ready = Ready {
        placement: Placement {
            thread,
            cpu: Some(cpu),
            policy: request.policy,
            timer_slack_ns: slack::current_ns(),
            feed: request.feeds.get(thread).cloned(),
            checkpoint: request.checkpoint.clone(),
        },
        refused: None,
    };
    let guards = ThreadGuards {
        _policy: None,
        _slack: None,
    };
    (ready, guards)
}
