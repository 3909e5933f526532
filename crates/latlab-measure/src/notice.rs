//! Warnings a run raises, each telling the user what to do about it.

use latlab_model::run::{Stream, Warning};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::fmt;

/// Something about a run that deserves attention.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The real-time policy was refused; the thread measured at what was allowed.
    NotRealtime {
        /// Requested.
        wanted: SchedSpec,
        /// In force.
        got: SchedSpec,
        /// Thread index.
        thread: usize,
        /// The kernel's reason, with the fix.
        reason: String,
    },
    /// The user asked for a non-real-time policy.
    NonRealtimeRequested {
        /// The policy.
        policy: SchedSpec,
    },
    /// `mlockall` failed.
    MemoryNotLocked {
        /// The error.
        reason: String,
        /// RLIMIT_MEMLOCK in bytes, if limited.
        limit: Option<u64>,
    },
    /// `--no-mlock` was given.
    MemoryLockSkipped,
    /// RLIMIT_MEMLOCK cannot hold what the run maps: only what was mapped at the start,
    /// or nothing, was locked.
    MemoryLockLimited {
        /// RLIMIT_MEMLOCK in bytes.
        limit: u64,
        /// Bytes mapped when locking, at most this plus what the run maps later.
        mapped: u64,
        /// Bytes the whole run needs locked (mapped now, later, and stack growth).
        needed: u64,
        /// What was mapped at the start was locked.
        locked_current: bool,
    },
    /// `/dev/cpu_dma_latency` could not be held.
    DmaLatencyUnavailable {
        /// The error.
        reason: String,
    },
    /// `--breaktrace` without a usable tracefs.
    BreakTraceUnavailable {
        /// The error.
        reason: String,
    },
    /// SCHED_DEADLINE threads run unpinned.
    DeadlineUnpinned,
    /// The kernel woke threads before their deadline.
    EarlyWakes {
        /// Total early wakes.
        count: u64,
        /// The earliest, negative.
        earliest: Nanos,
    },
    /// Periods passed without a wake-up.
    MissedPeriods {
        /// Total missed.
        count: u64,
        /// Per stream label.
        worst: String,
    },
    /// Cycles of a primitive probe without a sample (a partner that did not answer in
    /// time, an inversion that timed out, ...).
    CyclesWithoutSample {
        /// Total.
        count: u64,
        /// Per stream label.
        worst: String,
    },
    /// A measuring thread failed; the others were stopped.
    MeasuringFailed {
        /// What failed.
        reason: String,
    },
    /// Measuring threads took page faults inside the measured span.
    PageFaults {
        /// Total.
        count: u64,
    },
    /// A background load ended before it was stopped.
    LoadEndedEarly {
        /// The load.
        load: String,
        /// How it ended.
        how: String,
    },
    /// Samples beyond the histogram's range were clamped.
    Clamped {
        /// How many.
        count: u64,
    },
    /// Samples recorded while several 32-bit bucket counts had saturated.
    Saturated {
        /// How many.
        count: u64,
    },
}

impl Notice {
    /// A stable code for the Run file.
    pub fn code(&self) -> &'static str {
        match self {
            Notice::NotRealtime { .. } => "not-realtime",
            Notice::NonRealtimeRequested { .. } => "non-realtime-policy",
            Notice::MemoryNotLocked { .. } => "memory-not-locked",
            Notice::MemoryLockSkipped => "memory-lock-skipped",
            Notice::MemoryLockLimited { .. } => "memory-lock-limited",
            Notice::DmaLatencyUnavailable { .. } => "dma-latency-unavailable",
            Notice::BreakTraceUnavailable { .. } => "breaktrace-unavailable",
            Notice::DeadlineUnpinned => "deadline-unpinned",
            Notice::EarlyWakes { .. } => "early-wakes",
            Notice::MissedPeriods { .. } => "missed-periods",
            Notice::CyclesWithoutSample { .. } => "cycles-without-sample",
            Notice::Clamped { .. } => "clamped-samples",
            Notice::Saturated { .. } => "saturated-counts",
            Notice::MeasuringFailed { .. } => "measuring-failed",
            Notice::PageFaults { .. } => "page-faults",
            Notice::LoadEndedEarly { .. } => "load-ended-early",
        }
    }

    /// True when the run's results must not be read as real-time results.
    pub fn degrades(&self) -> bool {
        matches!(
            self,
            Notice::NotRealtime { .. }
                | Notice::MemoryNotLocked { .. }
                | Notice::MemoryLockLimited { .. }
        )
    }

    /// As stored in the Run.
    pub fn to_warning(&self) -> Warning {
        Warning {
            code: self.code().to_string(),
            message: self.to_string(),
            degrades: self.degrades(),
        }
    }

    /// The notices that follow from what the streams measured.
    pub fn from_streams(streams: &[Stream]) -> Vec<Notice> {
        let mut out = Vec::new();
        let early: u64 = streams.iter().map(|s| s.early_wakes).sum();
        if early > 0 {
            let earliest = streams
                .iter()
                .filter_map(|s| s.stats.min_ns)
                .min()
                .unwrap_or_default();
            out.push(Notice::EarlyWakes {
                count: early,
                earliest,
            });
        }
        // A timer's missed period is a late wake-up; a primitive probe's is a cycle
        // that took no sample, for reasons its definition gives.
        for wake_ups in [true, false] {
            let of_kind = || {
                streams
                    .iter()
                    .filter(move |s| s.measures_wake_ups() == wake_ups && s.missed_periods > 0)
            };
            let count: u64 = of_kind().map(|s| s.missed_periods).sum();
            if count == 0 {
                continue;
            }
            let worst = of_kind()
                .map(|s| match s.phase.as_str() {
                    "main" => format!("{}: {}", s.label(), s.missed_periods),
                    phase => format!("{} in {phase}: {}", s.label(), s.missed_periods),
                })
                .collect::<Vec<_>>()
                .join(", ");
            out.push(match wake_ups {
                true => Notice::MissedPeriods { count, worst },
                false => Notice::CyclesWithoutSample { count, worst },
            });
        }
        let faults: u64 = streams.iter().map(|s| s.page_faults).sum();
        if faults > 0 {
            out.push(Notice::PageFaults { count: faults });
        }
        let clamped: u64 = streams.iter().map(|s| s.histogram.clamped).sum();
        if clamped > 0 {
            out.push(Notice::Clamped { count: clamped });
        }
        let saturated: u64 = streams.iter().map(|s| s.histogram.saturated).sum();
        if saturated > 0 {
            out.push(Notice::Saturated { count: saturated });
        }
        out
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::NotRealtime {
                wanted,
                got,
                thread,
                reason,
            } => write!(
                f,
                "{wanted} was refused for measuring thread {thread}, which ran at {got}: \
                 {reason}. Results are NOT real-time results"
            ),
            Notice::NonRealtimeRequested { policy } => write!(
                f,
                "measuring at {policy} as requested: any other task can delay these threads, \
                 so these are not real-time results (use -P f:95 for those)"
            ),
            Notice::MemoryNotLocked { reason, limit } => {
                write!(f, "memory could not be locked ({reason})")?;
                if let Some(limit) = limit {
                    write!(f, " with RLIMIT_MEMLOCK at {limit} bytes")?;
                }
                write!(
                    f,
                    ": page faults can land in the measurement. Run as root, grant \
                     CAP_IPC_LOCK, or raise the limit (ulimit -l unlimited)"
                )
            }
            Notice::MemoryLockLimited {
                limit,
                mapped,
                needed,
                locked_current,
            } => {
                let mib = |bytes: u64| bytes.div_ceil(1 << 20);
                write!(
                    f,
                    "RLIMIT_MEMLOCK ({} KiB) cannot hold this run's memory (about {} MiB: {} \
                     MiB mapped at the start, the rest for its threads and buffers): ",
                    limit >> 10,
                    mib(*needed),
                    mib(*mapped)
                )?;
                match locked_current {
                    true => f.write_str(
                        "only what was mapped at the start is locked, not the measuring \
                         threads' stacks and buffers",
                    )?,
                    false => f.write_str("nothing is locked")?,
                }
                write!(
                    f,
                    "; page faults can land in the measurement. Raise the limit (ulimit -l \
                     {} or unlimited; for good: `USER - memlock unlimited` in \
                     /etc/security/limits.d/99-realtime.conf, then log in again), grant \
                     CAP_IPC_LOCK (setcap cap_ipc_lock+ep $(which latlab)), or run as root",
                    mib(*needed) << 10
                )
            }
            Notice::MemoryLockSkipped => write!(
                f,
                "memory not locked (--no-mlock): page faults can land in the measurement"
            ),
            Notice::DmaLatencyUnavailable { reason } => write!(
                f,
                "could not hold /dev/cpu_dma_latency ({reason}): CPUs may enter deep idle \
                 states and add their exit latency; run as root, or pass --no-tune to leave \
                 power management alone on purpose"
            ),
            Notice::BreakTraceUnavailable { reason } => write!(
                f,
                "--breaktrace cannot use tracefs ({reason}): the run still stops at the \
                 first sample over the limit, but no trace marker is written; run as root \
                 with tracefs mountable"
            ),
            Notice::DeadlineUnpinned => write!(
                f,
                "SCHED_DEADLINE threads cannot be pinned to single CPUs (the kernel requires \
                 their affinity to span the root domain): threads ran unpinned"
            ),
            Notice::EarlyWakes { count, earliest } => write!(
                f,
                "the kernel woke threads early {count} times (earliest {earliest} before \
                 the deadline): a POSIX violation of the sleep's guarantee"
            ),
            Notice::MissedPeriods { count, worst } => write!(
                f,
                "{count} period(s) passed without a wake-up because wakes came more than one \
                 period late ({worst}); the period may be too short for this system"
            ),
            Notice::CyclesWithoutSample { count, worst } => write!(
                f,
                "{count} cycle(s) of a probe took no sample ({worst}); why a cycle can \
                 take none is part of each probe's definition: latlab probes --long"
            ),
            Notice::MeasuringFailed { reason } => write!(
                f,
                "{reason}; every thread was stopped and the figures cover what was measured \
                 until then"
            ),
            Notice::PageFaults { count } => write!(
                f,
                "the measuring threads took {count} page fault(s) inside the measured span; \
                 each can delay a wake-up: lock memory (run as root) and avoid --no-mlock"
            ),
            Notice::LoadEndedEarly { load, how } => write!(
                f,
                "load {load} {how}: part of the run was measured without it"
            ),
            Notice::Clamped { count } => write!(
                f,
                "{count} samples exceeded the histogram's 60 s range and were recorded as 60 s"
            ),
            Notice::Saturated { count } => write!(
                f,
                "{count} samples fell in histogram buckets whose counts were full (2^32 - 1 \
                 samples each) and are recorded in the highest of them: percentiles there may \
                 be one bucket off"
            ),
        }
    }
}
