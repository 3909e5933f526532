//! Warnings a run raises, each telling the user what to do about it.

use crate::stall::StallEvidence;
pub use crate::stall::{MissedCause, RtThrottling};
use latlab_model::run::{Stream, Warning};
use latlab_model::seal::WarningCode;
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
    /// `--explain` could not trace: the run measured, but explains nothing.
    ExplainUnavailable {
        /// Why, with the fix.
        reason: String,
    },
    /// `--explain` could not explain every spike from a complete window of events.
    ExplainIncomplete {
        /// Spikes handed to the explainer.
        seen: u64,
        /// Explained from a window with events missing.
        incomplete: u64,
        /// Not explained at all.
        unexplained: u64,
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
        /// What most likely held the wake-ups back.
        cause: MissedCause,
    },
    /// The kernel throttled real-time tasks on measured CPUs during the run (said here
    /// when no missed period already says it).
    RtThrottled {
        /// The CPUs the scheduler showed throttled (empty: the kernel log said it).
        cpus: Vec<usize>,
        /// The limits in force, when readable.
        throttling: Option<RtThrottling>,
    },
    /// A kernel tracer's buffer overwrote events before they were read, or a page of
    /// it did not decode: the periods of lost activations count as missed.
    TraceEventsLost {
        /// The probe (`timerlat`, `osnoise`).
        tracer: &'static str,
        /// Events (or pages) lost.
        count: u64,
        /// Why the first page did not decode, or the first read failed.
        problem: Option<String>,
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
        /// Memory was locked for the run (so the faults were first touches the
        /// rehearsal did not reach, not pages evicted for want of a lock).
        memory_locked: bool,
    },
    /// The probe read a clock that advances in coarse steps: its samples are mostly 0.
    CoarseClock {
        /// The clock's name.
        clock: String,
        /// Its resolution (`clock_getres`).
        resolution: Nanos,
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
    pub fn code(&self) -> WarningCode {
        match self {
            Notice::NotRealtime { .. } => WarningCode::NotRealtime,
            Notice::NonRealtimeRequested { .. } => WarningCode::NonRealtimePolicy,
            Notice::MemoryNotLocked { .. } => WarningCode::MemoryNotLocked,
            Notice::MemoryLockSkipped => WarningCode::MemoryLockSkipped,
            Notice::MemoryLockLimited { .. } => WarningCode::MemoryLockLimited,
            Notice::DmaLatencyUnavailable { .. } => WarningCode::DmaLatencyUnavailable,
            Notice::BreakTraceUnavailable { .. } => WarningCode::BreaktraceUnavailable,
            Notice::ExplainUnavailable { .. } => WarningCode::ExplainUnavailable,
            Notice::ExplainIncomplete { .. } => WarningCode::ExplainIncomplete,
            Notice::DeadlineUnpinned => WarningCode::DeadlineUnpinned,
            Notice::EarlyWakes { .. } => WarningCode::EarlyWakes,
            Notice::MissedPeriods { .. } => WarningCode::MissedPeriods,
            Notice::CyclesWithoutSample { .. } => WarningCode::CyclesWithoutSample,
            Notice::RtThrottled { .. } => WarningCode::RtThrottled,
            Notice::TraceEventsLost { .. } => WarningCode::TraceEventsLost,
            Notice::Clamped { .. } => WarningCode::ClampedSamples,
            Notice::Saturated { .. } => WarningCode::SaturatedCounts,
            Notice::MeasuringFailed { .. } => WarningCode::MeasuringFailed,
            Notice::PageFaults { .. } => WarningCode::PageFaults,
            Notice::CoarseClock { .. } => WarningCode::CoarseClock,
            Notice::LoadEndedEarly { .. } => WarningCode::LoadEndedEarly,
        }
    }

    /// True when the run's results must not be read as real-time results (the model's
    /// list of codes decides).
    pub fn degrades(&self) -> bool {
        self.code().degrades()
    }

    /// As stored in the Run.
    pub fn to_warning(&self) -> Warning {
        Warning::new(self.code(), self.to_string())
    }

    /// The notices that follow from what the streams measured, in `context`.
    pub fn from_streams(streams: &[Stream], context: &StreamContext) -> Vec<Notice> {
        let mut out = Vec::new();
        // The streams of a measurement: every count is known.
        let early: u64 = streams.iter().filter_map(|s| s.early_wakes).sum();
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
                streams.iter().filter(move |s| {
                    s.measures_wake_ups() == wake_ups && s.missed_periods.unwrap_or(0) > 0
                })
            };
            let count: u64 = of_kind().filter_map(|s| s.missed_periods).sum();
            if count == 0 {
                continue;
            }
            // Streams of several probes on one CPU (timerlat's contexts) are told
            // apart by their probe.
            let mut probes: Vec<&str> = of_kind().map(|s| s.probe.as_str()).collect();
            probes.sort_unstable();
            probes.dedup();
            let label = |s: &Stream| match probes.len() {
                1 => s.label(),
                _ => format!("{} {}", s.probe, s.label()),
            };
            let worst = of_kind()
                .map(|s| match s.phase.as_str() {
                    "main" => format!("{}: {}", label(s), s.missed_periods.unwrap_or(0)),
                    phase => format!("{} in {phase}: {}", label(s), s.missed_periods.unwrap_or(0)),
                })
                .collect::<Vec<_>>()
                .join(", ");
            out.push(match wake_ups {
                true => Notice::MissedPeriods {
                    count,
                    worst,
                    cause: MissedCause::of(of_kind(), &context.held, context.rt_throttling),
                },
                false => Notice::CyclesWithoutSample { count, worst },
            });
        }
        let said = out.iter().any(|n| {
            matches!(
                n,
                Notice::MissedPeriods {
                    cause: MissedCause::RtThrottling { .. },
                    ..
                }
            )
        });
        let held = &context.held;
        if !said && (!held.throttled_cpus.is_empty() || held.throttled_in_log == Some(true)) {
            out.push(Notice::RtThrottled {
                cpus: held.throttled_cpus.clone(),
                throttling: context.rt_throttling,
            });
        }
        let faults: u64 = streams.iter().filter_map(|s| s.page_faults).sum();
        if faults > 0 {
            out.push(Notice::PageFaults {
                count: faults,
                memory_locked: context.memory_locked,
            });
        }
        let histograms = || streams.iter().filter_map(|s| s.histogram.as_ref());
        let clamped: u64 = histograms().map(|h| h.clamped).sum();
        if clamped > 0 {
            out.push(Notice::Clamped { count: clamped });
        }
        let saturated: u64 = histograms().map(|h| h.saturated).sum();
        if saturated > 0 {
            out.push(Notice::Saturated { count: saturated });
        }
        out
    }
}

/// What the notices about the streams depend on besides the streams themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamContext {
    /// Memory was locked for the run.
    pub memory_locked: bool,
    /// RT throttling in force, if any.
    pub rt_throttling: Option<RtThrottling>,
    /// What was seen of the measuring threads while they were held.
    pub held: StallEvidence,
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
                "memory not locked (--no-mlock): page faults can land in the measurement, so \
                 these are not real-time results; leave out --no-mlock to lock it"
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
            Notice::ExplainUnavailable { reason } => write!(
                f,
                "--explain could not trace ({reason}): the latencies are measured, but no \
                 spike is explained"
            ),
            Notice::ExplainIncomplete {
                seen,
                incomplete,
                unexplained,
            } => write!(
                f,
                "--explain: of {seen} spikes, {incomplete} were explained from a window with \
                 trace events missing (the kernel's buffer overran, or a page did not \
                 decode) and {unexplained} could not be explained (a thread not pinned, \
                 events no longer held, or a full spike queue); latlab explain lists the \
                 limits that say which"
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
            Notice::MissedPeriods {
                count,
                worst,
                cause,
            } => write!(
                f,
                "{count} period(s) passed without a wake-up because wakes came more than one \
                 period late ({worst}); {cause}"
            ),
            Notice::RtThrottled { cpus, throttling } => {
                crate::stall::write_throttled(f, cpus, throttling.as_ref())?;
                f.write_str(
                    ". A busy loop at a real-time priority is held off this way; lift the \
                     limit with sysctl kernel.sched_rt_runtime_us=-1 only if a runaway \
                     real-time task may own its CPU",
                )
            }
            Notice::TraceEventsLost {
                tracer,
                count,
                problem,
            } => {
                if *count > 0 {
                    write!(
                        f,
                        "the {tracer} tracer's trace buffers lost {count} event(s) or \
                         page(s) before latlab read them (the machine was too busy for the \
                         reader)"
                    )?;
                }
                if let Some(why) = problem {
                    let and = if *count > 0 { "; and " } else { "" };
                    write!(
                        f,
                        "{and}reading the {tracer} tracer's buffers failed: {why}"
                    )?;
                }
                f.write_str(match *tracer {
                    "timerlat" => ": the activations lost count as missed periods",
                    _ => ": the noise lost is not counted",
                })
            }
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
            Notice::PageFaults {
                count,
                memory_locked: true,
            } => write!(
                f,
                "the measuring threads took {count} page fault(s) inside the measured span \
                 although memory was locked: code or data touched there for the first time, \
                 each fault able to delay a wake-up; --mlock-all locks every mapped page \
                 before measuring"
            ),
            Notice::PageFaults {
                count,
                memory_locked: false,
            } => write!(
                f,
                "the measuring threads took {count} page fault(s) inside the measured span, \
                 each able to delay a wake-up: memory was not locked (see the warning about \
                 it for the fix)"
            ),
            Notice::CoarseClock { clock, resolution } => write!(
                f,
                "{clock} advances in steps of {resolution} (clock_getres; coarse clocks tick \
                 once per jiffy): back-to-back reads almost always return the same value, so \
                 its samples are 0 ns except where a tick fell between two reads. They show \
                 the clock's granularity, not what a read costs"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::info;

    const MS: i64 = 1_000_000;

    /// A timer stream at `policy` that missed `missed` periods, its latest wake-up
    /// `latest` late, with `page_faults`.
    fn timer_stream(policy: SchedSpec, missed: u64, latest: i64, page_faults: u64) -> Stream {
        info::test_timer_stream(0, policy, missed, latest, Nanos(MS), page_faults)
    }

    #[test]
    fn page_fault_warning_never_tells_root_to_run_as_root() {
        let stream = timer_stream(SchedSpec::DEFAULT, 0, 1_000, 1);
        for memory_locked in [true, false] {
            let context = StreamContext {
                memory_locked,
                ..StreamContext::default()
            };
            let notices = Notice::from_streams(std::slice::from_ref(&stream), &context);
            let faults = notices
                .iter()
                .find(|n| n.code() == WarningCode::PageFaults)
                .unwrap();
            let text = faults.to_string();
            assert!(!text.contains("as root"), "{text}");
        }
    }

    #[test]
    fn no_mlock_is_degraded() {
        assert!(Notice::MemoryLockSkipped.degrades());
        assert!(Notice::MemoryLockSkipped.to_warning().degrades);
    }
}
