//! How every Run is made and sealed, whoever made it (`latlab run`, a checkpoint,
//! `latlab attach`, an importer): it starts as [`Run::new`] — every field unknown or
//! empty — is filled with what its maker knows, and is [sealed](Run::seal): its
//! warnings come from one typed list of codes, which also says which of them make a
//! Run degraded; degrading warnings come first; the verdict is judged on the streams.
//! One rule, so that the same condition reads the same in every Run.

use crate::run::{Plan, Run, Tool, Warning, SCHEMA};
use crate::threshold::Verdict;
use crate::Nanos;

/// Every warning a Run can carry. The code is stored (`Warning::code`); what it means
/// for trust — whether the figures are the machine's real-time figures at all — is
/// decided here, never where the warning is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarningCode {
    /// The measuring threads did not get the real-time policy asked for.
    NotRealtime,
    /// A policy that is not real-time was asked for (`-P o:0`, an application's own).
    NonRealtimePolicy,
    /// The memory was not locked: a page fault can delay a wake-up.
    MemoryNotLocked,
    /// Locking memory was skipped on request.
    MemoryLockSkipped,
    /// Only part of the memory could be locked (RLIMIT_MEMLOCK).
    MemoryLockLimited,
    /// `/dev/cpu_dma_latency` could not be held.
    DmaLatencyUnavailable,
    /// `--breaktrace` could not arm.
    BreaktraceUnavailable,
    /// `--explain` could not trace.
    ExplainUnavailable,
    /// Some spikes could not be explained whole.
    ExplainIncomplete,
    /// SCHED_DEADLINE threads ran unpinned.
    DeadlineUnpinned,
    /// Wake-ups before the deadline.
    EarlyWakes,
    /// Periods that passed without a wake-up.
    MissedPeriods,
    /// Cycles of a primitive probe without a sample.
    CyclesWithoutSample,
    /// The kernel throttled real-time tasks.
    RtThrottled,
    /// A kernel tracer's buffers lost events.
    TraceEventsLost,
    /// Samples beyond the histogram's range.
    ClampedSamples,
    /// Counts that saturated.
    SaturatedCounts,
    /// A measuring thread failed part-way.
    MeasuringFailed,
    /// Page faults in the measuring threads.
    PageFaults,
    /// A clock coarser than the figures.
    CoarseClock,
    /// A load ended before the phase did.
    LoadEndedEarly,
    /// An application's periodic task reported a set-up problem of its own.
    ApplicationSetUp,
    /// An application's process ended without ending its task.
    ApplicationKilled,
    /// An application's page could no longer be read while attached, or stopped
    /// holding what a task writes.
    ApplicationPageLost,
    /// Imported values implausible in the unit they were read in.
    ImplausibleUnit,
    /// cyclictest's last status line came before its last cycles.
    StatusBehindHistogram,
    /// The tool that wrote an imported file said it failed.
    SourceFailed,
    /// cyclictest measured more cycles than its `-v` log holds.
    SamplesNotLogged,
}

impl WarningCode {
    /// Every code, in the order of the list above.
    pub const ALL: [WarningCode; 28] = [
        WarningCode::NotRealtime,
        WarningCode::NonRealtimePolicy,
        WarningCode::MemoryNotLocked,
        WarningCode::MemoryLockSkipped,
        WarningCode::MemoryLockLimited,
        WarningCode::DmaLatencyUnavailable,
        WarningCode::BreaktraceUnavailable,
        WarningCode::ExplainUnavailable,
        WarningCode::ExplainIncomplete,
        WarningCode::DeadlineUnpinned,
        WarningCode::EarlyWakes,
        WarningCode::MissedPeriods,
        WarningCode::CyclesWithoutSample,
        WarningCode::RtThrottled,
        WarningCode::TraceEventsLost,
        WarningCode::ClampedSamples,
        WarningCode::SaturatedCounts,
        WarningCode::MeasuringFailed,
        WarningCode::PageFaults,
        WarningCode::CoarseClock,
        WarningCode::LoadEndedEarly,
        WarningCode::ApplicationSetUp,
        WarningCode::ApplicationKilled,
        WarningCode::ApplicationPageLost,
        WarningCode::ImplausibleUnit,
        WarningCode::StatusBehindHistogram,
        WarningCode::SourceFailed,
        WarningCode::SamplesNotLogged,
    ];

    /// The code as stored in a Run (stable: scripts and stores match on it).
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::NotRealtime => "not-realtime",
            WarningCode::NonRealtimePolicy => "non-realtime-policy",
            WarningCode::MemoryNotLocked => "memory-not-locked",
            WarningCode::MemoryLockSkipped => "memory-lock-skipped",
            WarningCode::MemoryLockLimited => "memory-lock-limited",
            WarningCode::DmaLatencyUnavailable => "dma-latency-unavailable",
            WarningCode::BreaktraceUnavailable => "breaktrace-unavailable",
            WarningCode::ExplainUnavailable => "explain-unavailable",
            WarningCode::ExplainIncomplete => "explain-incomplete",
            WarningCode::DeadlineUnpinned => "deadline-unpinned",
            WarningCode::EarlyWakes => "early-wakes",
            WarningCode::MissedPeriods => "missed-periods",
            WarningCode::CyclesWithoutSample => "cycles-without-sample",
            WarningCode::RtThrottled => "rt-throttled",
            WarningCode::TraceEventsLost => "trace-events-lost",
            WarningCode::ClampedSamples => "clamped-samples",
            WarningCode::SaturatedCounts => "saturated-counts",
            WarningCode::MeasuringFailed => "measuring-failed",
            WarningCode::PageFaults => "page-faults",
            WarningCode::CoarseClock => "coarse-clock",
            WarningCode::LoadEndedEarly => "load-ended-early",
            WarningCode::ApplicationSetUp => "application-set-up",
            WarningCode::ApplicationKilled => "application-killed",
            WarningCode::ApplicationPageLost => "application-page-lost",
            WarningCode::ImplausibleUnit => "implausible-unit",
            WarningCode::StatusBehindHistogram => "status-behind-histogram",
            WarningCode::SourceFailed => "source-failed",
            WarningCode::SamplesNotLogged => "samples-not-logged",
        }
    }

    /// True when a Run with this warning must not be read as the machine's real-time
    /// figures: the measuring thread lacked what a real-time task has (its policy, its
    /// memory locked), by failure rather than by request.
    pub fn degrades(self) -> bool {
        matches!(
            self,
            WarningCode::NotRealtime
                | WarningCode::MemoryNotLocked
                | WarningCode::MemoryLockSkipped
                | WarningCode::MemoryLockLimited
                | WarningCode::ApplicationSetUp
        )
    }

    /// The code stored as `text`, if it is one of the list.
    pub fn parse(text: &str) -> Option<WarningCode> {
        WarningCode::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

impl std::fmt::Display for WarningCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Warning {
    /// A warning of `code`, degrading as the code says.
    pub fn new(code: WarningCode, message: impl Into<String>) -> Warning {
        Warning {
            code: code.as_str().to_string(),
            message: message.into(),
            degrades: code.degrades(),
        }
    }

    /// Whether this warning is of `code`.
    pub fn is(&self, code: WarningCode) -> bool {
        self.code == code.as_str()
    }
}

impl Tool {
    /// latlab itself, this version.
    pub fn latlab() -> Tool {
        Tool {
            name: "latlab".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }
    }
}

impl Run {
    /// A Run by `tool` with nothing in it yet: no id, times, labels, host, streams or
    /// warnings; a plan with no probes (its settings are not known until the maker
    /// says), no verdict. The maker fills in what it knows, then [seals](Run::seal) it.
    pub fn new(tool: Tool) -> Run {
        Run {
            schema: SCHEMA.to_string(),
            id: String::new(),
            tool,
            started_at: None,
            ended_at: None,
            command_line: None,
            scenario: None,
            name: None,
            tags: Default::default(),
            note: None,
            plan: Plan {
                duration_ns: None,
                warm_up_ns: Nanos::ZERO,
                cpus: Vec::new(),
                cpu_choice: None,
                probes: Vec::new(),
                dma_latency_us: None,
                memory_lock: None,
                phases: Vec::new(),
            },
            host: None,
            audit: None,
            conditions: None,
            degraded: false,
            interrupted: false,
            warnings: Vec::new(),
            phases: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
            thresholds: Vec::new(),
            verdict: Verdict::judge(&[], &[]),
            import: None,
            published: None,
            explain: None,
            progress: None,
            telemetry: None,
            accepted: Vec::new(),
        }
    }

    /// Seals the Run from what it holds: degrading warnings first (otherwise in the
    /// order they came), `degraded` when any degrades, the verdict of its thresholds on
    /// its streams, and no password in its command line. Every Run is sealed by this,
    /// and sealing twice changes nothing.
    pub fn seal(&mut self) {
        self.redact_command_line();
        self.warnings.sort_by_key(|w| !w.degrades);
        self.degraded = self.warnings.iter().any(|w| w.degrades);
        self.verdict = Verdict::judge(&self.thresholds, &self.streams);
    }
}

impl Run {
    /// Removes the passwords of the URLs in the command line (`--store
    /// postgres://user:secret@…`): credentials never enter a Run, nor what is made of it.
    pub fn redact_command_line(&mut self) {
        if let Some(args) = &mut self.command_line {
            for arg in args.iter_mut() {
                if arg.contains("://") {
                    *arg = crate::text::redact_argument(arg);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::threshold::Status;

    #[test]
    fn codes_are_unique_and_read_back() {
        for code in WarningCode::ALL {
            assert_eq!(WarningCode::parse(code.as_str()), Some(code));
        }
        let mut names: Vec<&str> = WarningCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WarningCode::ALL.len());
        assert_eq!(WarningCode::parse("no-mlock"), None);
    }

    #[test]
    fn sealing_puts_degrading_first_and_judges() {
        let mut run = fixture::run();
        run.warnings = vec![
            Warning::new(WarningCode::MissedPeriods, "a"),
            Warning::new(WarningCode::NonRealtimePolicy, "b"),
            Warning::new(WarningCode::MemoryNotLocked, "c"),
        ];
        run.degraded = false;
        run.verdict = Verdict::judge(&[], &[]);
        run.seal();
        let order: Vec<&str> = run.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(order, ["c", "a", "b"]);
        assert!(run.degraded);
        // The fixture's thresholds fail on its streams.
        assert_eq!(run.verdict.status, Status::Fail);
        let once = run.clone();
        run.seal();
        assert_eq!(run, once);
        // A policy asked for is not a degraded run.
        run.warnings.retain(|w| !w.is(WarningCode::MemoryNotLocked));
        run.seal();
        assert!(!run.degraded);
    }
}
