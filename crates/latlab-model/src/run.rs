//! The Run: everything one `latlab run` measured, in one versioned JSON document.
//!
//! The format is `latlab.run/1`, documented field by field in `docs/run-format.md`
//! with a real example in `docs/example-run.json`. A report, a comparison or an export
//! needs nothing but Runs. Readers accept unknown fields, so later minor additions do
//! not break older readers; a different `schema` string is refused.

use crate::audit::Audit;
use crate::hist::{self, Edge, HistogramError, LatencyHistogram, Overflow};
pub use crate::hist::{percentile_key, Percentile};
use crate::spec::{ClockName, SchedSpec, TimerMethod};
use crate::threshold::{Threshold, Verdict};
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod published;
mod v1;

pub use published::{
    is_reference_id, PublishedRecord, PublishedRow, NOT_MEASURED_HERE, REFERENCE_PREFIX,
};

/// The schema identifier written into every Run.
pub const SCHEMA: &str = "latlab.run/2";

/// The previous schema, still read: its stand-ins for what an imported Run's source
/// lacked (zeros, empty strings, `other:0`) become `null` on reading, as its
/// `import.unknown_fields` lists them.
pub const SCHEMA_V1: &str = "latlab.run/1";

/// The probe of an application's own periodic loop (`latlab attach`): its wake-up
/// latency.
pub const PROBE_APPLICATION: &str = "application";
/// The same loop's compute time (wake-up to the end of its step).
pub const PROBE_APPLICATION_COMPUTE: &str = "application-compute";

/// The percentiles every stream reports.
pub const REPORTED_PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999];

/// One measurement session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Unique id: UTC start time plus a random suffix, sortable.
    pub id: String,
    /// The program that produced the Run.
    pub tool: Tool,
    /// Start, RFC 3339 UTC (`null`: an imported Run whose source did not say).
    pub started_at: Option<String>,
    /// End, RFC 3339 UTC (`null`: not known).
    pub ended_at: Option<String>,
    /// The command line as typed (`null`: not known).
    pub command_line: Option<Vec<String>>,
    /// The built-in or file scenario, when one was named.
    pub scenario: Option<String>,
    /// The name the user gave the run (`--name`), which can stand for it wherever a run
    /// is referred to; absent when none was given ([`crate::labels::check_name`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tags the user gave (`--tag key=value`), for finding runs; absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// The user's note (`--note`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The resolved, validated plan that ran.
    pub plan: Plan,
    /// Facts about the machine and kernel (`null`: an imported Run whose source had
    /// none).
    pub host: Option<HostFacts>,
    /// The readiness audit of the configuration, judged for the measured CPUs (absent
    /// in Runs from latlab versions before the audit existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<Audit>,
    /// What the run could and could not set up (priority, memory locking, ...);
    /// `null` for an imported Run.
    pub conditions: Option<Conditions>,
    /// True when any condition fell short of real-time measurement; the results are
    /// then not to be read as the machine's real-time behaviour.
    pub degraded: bool,
    /// True when the run was stopped early (Ctrl-C, SIGTERM, break trace).
    pub interrupted: bool,
    /// Everything that deserves attention, most important first.
    pub warnings: Vec<Warning>,
    /// Phases in order; a plain run has one, named `main`.
    pub phases: Vec<Phase>,
    /// One record per measuring thread and phase.
    pub streams: Vec<Stream>,
    /// Notable events (break trace fired, ...).
    pub events: Vec<Event>,
    /// The limits the run was judged by.
    pub thresholds: Vec<Threshold>,
    /// What its gate was told to let through (`--accept`): a run that measured less
    /// than asked, or under degraded conditions, is otherwise never a pass. Absent when
    /// nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<Shortfall>,
    /// The judgement.
    pub verdict: Verdict,
    /// For a Run imported from another tool's result file: where it came from and what
    /// it lacks. Absent (not `null`) in Runs latlab measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportRecord>,
    /// For a reference Run of published figures (`ref:NAME`): the paper, the table as
    /// printed and what it lacks. Absent in Runs that were measured or imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedRecord>,
    /// What got in the way of the late samples (`--explain`); absent when the run was
    /// not asked to explain, and in Runs from latlab versions before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::explain::Explain>,
    /// A run that has not ended normally: `running` (written at a checkpoint) or
    /// `died` (its process is gone; it holds what was measured up to its last
    /// checkpoint). Absent for a run that ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<crate::progress::Progress>,
    /// What was sampled beside the timeline on the measured CPUs (interrupts,
    /// softirqs, steal, ...) and what the spikes coincided with (`null`: not sampled,
    /// `--no-telemetry`, or a Run from before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Telemetry>,
}

impl Run {
    /// Whether a file starting with `head` holds a latlab Run (a JSON object naming the
    /// `latlab.run/` schema near its top).
    pub fn looks_like_run(head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        text.trim_start().starts_with('{') && text.contains("\"latlab.run/")
    }

    /// Parses a Run from JSON, refusing other schemas and documents that fail
    /// [`check`](Run::check), with passwords removed from its command line; a `latlab.run/1` document is read with its stand-ins made
    /// unknown ([`SCHEMA_V1`]).
    pub fn from_json(text: &str) -> Result<Run, RunFormatError> {
        let mut run = Run::parse_json(text)?;
        run.check()?;
        // A Run written elsewhere, or by an older latlab, may hold a password.
        run.redact_command_line();
        Ok(run)
    }

    fn parse_json(text: &str) -> Result<Run, RunFormatError> {
        #[derive(Deserialize)]
        struct Probe {
            schema: Option<String>,
        }
        let probe: Probe = serde_json::from_str(text).map_err(RunFormatError::Json)?;
        match probe.schema.as_deref() {
            Some(SCHEMA) => serde_json::from_str(text).map_err(RunFormatError::Json),
            Some(SCHEMA_V1) => {
                let mut value: serde_json::Value =
                    serde_json::from_str(text).map_err(RunFormatError::Json)?;
                v1::upgrade(&mut value);
                serde_json::from_value(value).map_err(RunFormatError::Json)
            }
            Some(other) => Err(RunFormatError::Schema(other.to_string())),
            None => Err(RunFormatError::Schema("(none)".to_string())),
        }
    }

    /// The samples over all streams; `None` when some of its figures have no count: a
    /// published row without a sample count is no stream, so a sum would leave its
    /// samples out (and a reference without a counted row would have 0).
    pub fn total_samples(&self) -> Option<u64> {
        let uncounted = self
            .published
            .as_ref()
            .is_some_and(|p| p.rows.iter().any(|r| r.samples.is_none()));
        (!uncounted).then(|| self.streams.iter().map(|s| s.samples).sum())
    }

    /// The samples of the streams of phase `phase`; `None` when the phase is a
    /// published row without a sample count.
    pub fn phase_samples(&self, phase: &str) -> Option<u64> {
        let uncounted = self.published.as_ref().is_some_and(|p| {
            p.rows
                .iter()
                .any(|r| r.label == phase && r.samples.is_none())
        });
        let streams = self.streams.iter().filter(|s| s.phase == phase);
        (!uncounted).then(|| streams.map(|s| s.samples).sum())
    }

    /// The missed periods over all streams; `None` when a stream did not count them or
    /// the samples are not all counted ([`total_samples`](Run::total_samples)).
    pub fn total_missed_periods(&self) -> Option<u64> {
        self.total_samples()?;
        self.streams.iter().map(|s| s.missed_periods).sum()
    }

    /// Pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Run always serialises")
    }
}

/// Why a document is not a readable Run.
#[derive(Debug, thiserror::Error)]
pub enum RunFormatError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("not a latlab Run: {0}")]
    Json(serde_json::Error),
    /// Another schema.
    #[error("unsupported schema '{0}': this latlab reads {SCHEMA}; upgrade latlab to read it")]
    Schema(String),
    /// A field holds what latlab never writes (counts that do not add up, statistics
    /// out of order, an id or a time of another shape): edited or damaged.
    #[error("{field}: {problem}; the file is not a Run as latlab writes it (edited or damaged?)")]
    Invalid {
        /// The field, as a path (`streams[0].stats.max_ns`).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl Run {
    /// Which value of a histogram bucket stands for the samples in this Run's
    /// histograms: the highest (latlab's own samples, recorded at their values, and a
    /// cyclictest `-v` log's, read one by one), or the lowest (an import of a source's
    /// buckets, recorded at their lower edges). `latlab-formats` keeps its formats in
    /// step with this (a test there).
    pub fn bucket_edge(&self) -> Edge {
        match self.import.as_ref().map(|i| i.format.as_str()) {
            None | Some(IMPORTED_SAMPLE_BY_SAMPLE) => Edge::Highest,
            Some(_) => Edge::Lowest,
        }
    }
}

/// The import format that reads every sample (cyclictest `-v`), not a source's buckets.
pub const IMPORTED_SAMPLE_BY_SAMPLE: &str = "cyclictest-verbose";

/// Where an imported Run came from and what its source did not have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The source format (`cyclictest-json`, `cyclictest-hist`, `rtla-timerlat-hist`, ...).
    pub format: String,
    /// The file as the user named it.
    pub file: String,
    /// When it was imported, RFC 3339 UTC.
    pub imported_at: String,
    /// What the source did not have, one plain sentence each (e.g. "no host facts").
    /// The fields it would have filled are `null` in the Run.
    pub lacks: Vec<String>,
}

/// Name and version of the producing program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `latlab`.
    pub name: String,
    /// Its version (`null`: the source did not say).
    pub version: Option<String>,
}

/// The validated plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Measured span per phase (`null` = until stopped).
    pub duration_ns: Option<Nanos>,
    /// Span discarded at the start of each stream, before the measured span.
    pub warm_up_ns: Nanos,
    /// The CPUs measured.
    pub cpus: Vec<usize>,
    /// How the CPUs measured were chosen (`null`: a Run written before this was
    /// recorded, or imported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_choice: Option<CpuChoice>,
    /// The probes and their settings.
    pub probes: Vec<ProbePlan>,
    /// Requested `/dev/cpu_dma_latency` in µs; `null` when the system is left alone.
    pub dma_latency_us: Option<i32>,
    /// What memory is locked before measuring (`null`: an imported Run whose source
    /// did not say).
    pub memory_lock: Option<MemoryLockPlan>,
    /// Every phase as planned, in order (empty in Runs written before phases were
    /// recorded, and in imported Runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PlannedPhase>,
}

/// How a run's CPUs were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuChoice {
    /// Named (`-c`, or the scenario's `cpus`).
    Given,
    /// None named, and the kernel isolates CPUs (`isolcpus=`, `nohz_full=`): those.
    Isolated,
    /// None named, and latlab was started on CPUs of the user's choosing (`taskset`):
    /// those.
    Affinity,
    /// Every CPU latlab may use (`-c all`, or none named on a machine that isolates
    /// none).
    Every,
}

impl CpuChoice {
    /// Why these CPUs, for a summary: `None` when named, or when every one was.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            CpuChoice::Given | CpuChoice::Every => None,
            CpuChoice::Isolated => Some(
                "the CPUs the kernel isolates (isolcpus, nohz_full), measured when none \
                 are named; -c all measures every CPU",
            ),
            CpuChoice::Affinity => Some(
                "the CPUs latlab was started on (taskset), measured when none are named; \
                 -c all measures every CPU",
            ),
        }
    }
}

/// One phase as planned: the span and CPUs it measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedPhase {
    /// The phase's name, as its streams give it.
    pub name: String,
    /// Its measured span (`null` = until stopped).
    pub duration_ns: Option<Nanos>,
    /// Span discarded before it.
    pub warm_up_ns: Nanos,
    /// The CPUs measured, one thread each.
    pub cpus: Vec<usize>,
}

/// What memory a run locks in RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryLockPlan {
    /// Every page the run touches, after rehearsing the measuring loop and writing
    /// its buffers (`mlockall` with `MCL_ONFAULT`; the default).
    Touched,
    /// Every page mapped, touched or not (`mlockall(MCL_CURRENT | MCL_FUTURE)`).
    All,
    /// Nothing (`--no-mlock`): not a real-time measurement.
    None,
}

/// One probe's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "lowercase")]
pub enum ProbePlan {
    /// The periodic wake-up latency probe.
    Timer(TimerSettings),
    /// A primitive probe (`latlab probes`): preemption, task switch, message, ...
    Primitive(PrimitiveSettings),
}

/// Settings of a primitive probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrimitiveSettings {
    /// The probe's name (`msg`).
    pub name: String,
    /// Its parameters, every one with its value (`transport` → `sysv`).
    pub params: BTreeMap<String, String>,
    /// Its cycle: how often a sample (or a burst) is taken.
    pub period_ns: Nanos,
    /// The requested policy of the measuring threads.
    pub policy: SchedSpec,
}

/// Settings of the timer probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerSettings {
    /// Sleep method.
    pub method: TimerMethod,
    /// Period between expected wake-ups.
    pub period_ns: Nanos,
    /// Clock read and slept on.
    pub clock: ClockName,
    /// Requested scheduling policy of the measuring threads.
    pub policy: SchedSpec,
    /// For `hybrid`: how long before the deadline sleeping stops and spinning starts.
    pub hybrid_margin_ns: Nanos,
    /// Timer slack requested for the measuring threads (`null` = left as it was).
    pub timer_slack_ns: Option<u64>,
    /// How many of the largest samples to keep with timestamps.
    pub top_spikes: usize,
    /// Samples above this are all kept (bounded); `null` = none.
    pub spike_threshold_ns: Option<Nanos>,
    /// Bound on kept samples above the spike threshold, per stream.
    pub spike_capacity: usize,
    /// Timeline interval.
    pub timeline_interval_ns: Nanos,
    /// Stop the run and the kernel trace when a sample exceeds this.
    pub breaktrace_ns: Option<Nanos>,
}

/// Facts about the machine. `null` stands for a fact that could not be read (or, in an
/// imported Run, that its source did not have).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostFacts {
    /// Host name.
    pub hostname: String,
    /// The rig's stable identity ([`crate::rig::rig_id`]), which host names are not (two
    /// rigs may share one, a rig may be renamed): the name given in `LATLAB_RIG`, else
    /// `machine:` and 16 hex digits of a hash of the machine id; absent when neither is
    /// known (then the host name stands in for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rig: Option<String>,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// `uname -m`.
    pub architecture: String,
    /// The preemption model and how it was determined.
    pub preemption: Preemption,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Number of online CPUs.
    pub cpus_online: Option<usize>,
    /// Online CPUs as a list (`0-3`).
    pub cpus_online_list: Option<String>,
    /// Hypervisor or container seen (`kvm, docker container`), [`BARE_METAL`] when
    /// none was seen.
    pub virtualization: Option<String>,
    /// The current clocksource (`tsc`, `hpet`, `acpi_pm`, ...).
    pub clocksource: Option<String>,
    /// Kernel tick rate, when the kernel configuration was readable.
    pub hz: Option<u32>,
    /// CPUs the kernel sets aside from the scheduler's domains (`isolcpus=`; empty:
    /// none; `null`: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated_cpus: Option<Vec<usize>>,
    /// CPUs without the periodic tick when busy (`nohz_full=`; empty: none; `null`:
    /// not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nohz_full_cpus: Option<Vec<usize>>,
}

/// What [`HostFacts::virtualization`] says when no hypervisor or container was seen.
pub const BARE_METAL: &str = "none";

/// The kernel's preemption model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Preemption {
    /// `PREEMPT_RT`, `full`, `voluntary`, `none`, `dynamic`, `lazy` or `unknown`.
    pub model: String,
    /// For `dynamic`: the mode in force (`full`, `voluntary`, `none`, `lazy`), if readable.
    pub dynamic_mode: Option<String>,
    /// What was read to decide (file and value).
    pub evidence: Vec<String>,
}

/// What the run set up and what it could not.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Conditions {
    /// `mlockall` succeeded.
    pub memory_locked: bool,
    /// Every measuring thread got the requested real-time policy.
    pub realtime_policy: bool,
    /// The `/dev/cpu_dma_latency` request in force, in µs.
    pub dma_latency_us: Option<i32>,
    /// Tracefs was ready for `--breaktrace`.
    pub breaktrace_armed: bool,
    /// The effective user id.
    pub euid: u32,
}

/// A warning with a stable code and a message telling the user what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable identifier, e.g. `not-realtime`.
    pub code: String,
    /// The message.
    pub message: String,
    /// True when this warning makes the run degraded.
    pub degrades: bool,
}

/// A phase of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Name (`main` for a plain run).
    pub name: String,
    /// Start, RFC 3339 UTC (`null`: not known).
    pub started_at: Option<String>,
    /// How long it measured: the measured span, set-up and warm-up excluded (`null`: an
    /// imported Run whose source did not say).
    pub elapsed_ns: Option<Nanos>,
    /// Background loads during the phase, with the rate each achieved.
    pub loads: Vec<LoadRecord>,
}

/// One background load of a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    /// As given (`memory:size=32M`, `exec:make -j4`).
    pub spec: String,
    /// The load's name.
    pub name: String,
    /// Its parameters after defaults were applied.
    pub params: BTreeMap<String, String>,
    /// CPUs it ran on.
    pub cpus: Vec<usize>,
    /// Work done, in `unit`s.
    pub work: u64,
    /// What one unit of work is (`bytes`, `messages`, `execs`, ...).
    pub unit: String,
    /// The rate achieved, in `rate_unit` (`null` when it did no work).
    pub rate: Option<f64>,
    /// The rate's unit (`MB/s`, `messages/s`, ...).
    pub rate_unit: String,
    /// How long it ran.
    pub elapsed_ns: Nanos,
    /// How it ended: `stopped`, or why it ended early (`exited with status 2`).
    pub ended: String,
    /// How long stopping it took.
    pub stop_ns: Nanos,
    /// What the load said about how it ran (e.g. which flood it used).
    pub notes: Vec<String>,
    /// CPU time its processes used, user and system: the worker's threads and every
    /// process it waited for (an `exec:` load's command). Absent where not recorded:
    /// Runs before it was, and a load whose worker had to be killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time: Option<CpuTime>,
}

/// CPU time as the kernel accounts it (`getrusage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTime {
    /// Time in user mode.
    pub user_ns: Nanos,
    /// Time in the kernel on its behalf.
    pub system_ns: Nanos,
}

/// One measuring thread's results in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stream {
    /// Probe name (`timer`).
    pub probe: String,
    /// Method (`abs`, `rel`, ...; `null`: an imported Run whose source did not say).
    pub method: Option<String>,
    /// Phase name.
    pub phase: String,
    /// Thread index within the probe, from 0.
    pub thread: usize,
    /// The CPU the thread was pinned to (`null` = not pinned).
    pub cpu: Option<usize>,
    /// The policy in force while measuring (may differ from the plan when degraded).
    pub policy: Option<SchedSpec>,
    /// Period.
    pub period_ns: Option<Nanos>,
    /// Samples kept (after warm-up).
    pub samples: u64,
    /// Periods that passed without a wake-up because a wake came too late. Never
    /// silently skipped: `samples + missed_periods` is the number of periods elapsed.
    /// `null` where the source did not count them (cyclictest skips them silently).
    pub missed_periods: Option<u64>,
    /// Wake-ups that landed past the following deadline (each missed ≥ 1 period).
    pub overrun_wakes: Option<u64>,
    /// Samples below zero: the kernel woke the task before it was due.
    pub early_wakes: Option<u64>,
    /// The very first sample, reported on its own (it is often unlike the rest).
    pub first_sample_ns: Option<Nanos>,
    /// Samples discarded during warm-up.
    pub warm_up_samples: u64,
    /// For relative sleeps: how far the last wake-up lies behind where a drift-free
    /// periodic schedule would have put it.
    pub drift_ns: Option<Nanos>,
    /// The span measured, first expected wake-up to last wake-up.
    pub elapsed_ns: Option<Nanos>,
    /// Timer slack of the thread while measuring.
    pub timer_slack_ns: Option<u64>,
    /// Page faults (minor and major) the thread took from the start of its window to
    /// its last wake-up; each can delay a wake.
    pub page_faults: Option<u64>,
    /// Summary statistics (exact min/max/mean/stddev; percentiles from the histogram).
    pub stats: Statistics,
    /// Every sample, as a histogram (`null`: the source kept none, only summary
    /// figures).
    pub histogram: Option<EncodedHistogram>,
    /// The largest samples and those above the spike threshold, with times.
    pub spikes: Spikes,
    /// Per-interval maximum and count.
    pub timeline: Timeline,
}

impl Stream {
    /// Decodes the stream's histogram, with what it knows of overflowed samples;
    /// `Ok(None)` when the stream has none.
    pub fn decode_histogram(&self) -> Result<Option<LatencyHistogram>, HistogramError> {
        self.histogram
            .as_ref()
            .map(EncodedHistogram::decode)
            .transpose()
    }

    /// Whether its samples are wake-up latencies (wake-up − deadline): the timer
    /// probe's, and those imported from rtla timerlat; not a primitive probe's, whose
    /// samples are what its own definition says.
    pub fn measures_wake_ups(&self) -> bool {
        self.probe == "timer"
            || self.probe == PROBE_APPLICATION
            || self.probe.starts_with("timerlat")
    }

    /// A short label, e.g. `cpu 1` or `thread 0`.
    pub fn label(&self) -> String {
        match self.cpu {
            Some(cpu) => format!("cpu {cpu}"),
            None => format!("thread {}", self.thread),
        }
    }
}

/// Summary statistics of a stream, all in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    /// Smallest sample (exact; negative for an early wake).
    pub min_ns: Option<Nanos>,
    /// Largest sample (exact).
    pub max_ns: Option<Nanos>,
    /// Arithmetic mean (exact).
    pub mean_ns: Option<f64>,
    /// Population standard deviation (exact).
    pub stddev_ns: Option<f64>,
    /// Percentiles keyed by their rank (`"50"`, `"99.9"`, ...): HdrHistogram values
    /// within 0.1 %, clamped to the exact min and max; a lower bound where the rank
    /// falls among samples known only to lie above a histogram's range.
    pub percentiles_ns: BTreeMap<String, Percentile>,
}

impl Statistics {
    /// Computes statistics from exact sums and a histogram.
    pub fn compute(sums: &ExactSums, hist: &LatencyHistogram) -> Statistics {
        if sums.count == 0 {
            return Statistics {
                min_ns: None,
                max_ns: None,
                mean_ns: None,
                stddev_ns: None,
                percentiles_ns: BTreeMap::new(),
            };
        }
        let n = sums.count as f64;
        let mean = sums.sum as f64 / n;
        let variance = (sums.sum_squares as f64 / n - mean * mean).max(0.0);
        let percentiles_ns = REPORTED_PERCENTILES
            .iter()
            .filter_map(|&p| {
                let v =
                    hist.percentile_within(p, Nanos(sums.min), Nanos(sums.max), Edge::Highest)?;
                Some((percentile_key(p), v))
            })
            .collect();
        Statistics {
            min_ns: Some(Nanos(sums.min)),
            max_ns: Some(Nanos(sums.max)),
            mean_ns: Some(mean),
            stddev_ns: Some(variance.sqrt()),
            percentiles_ns,
        }
    }

    /// A reported percentile, e.g. `percentile(99.9)`.
    pub fn percentile(&self, p: f64) -> Option<Percentile> {
        self.percentiles_ns.get(&percentile_key(p)).copied()
    }
}

/// Exact running sums kept by a measuring loop (integer, so nothing is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactSums {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: i64,
    /// Largest.
    pub max: i64,
    /// Sum.
    pub sum: i128,
    /// Sum of squares.
    pub sum_squares: i128,
}

impl Default for ExactSums {
    fn default() -> Self {
        ExactSums {
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            sum_squares: 0,
        }
    }
}

impl ExactSums {
    /// Adds one sample.
    #[inline(always)]
    pub fn add(&mut self, v: i64) {
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as i128;
        self.sum_squares += (v as i128) * (v as i128);
    }
}

/// A histogram in its portable encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistogram {
    /// Always [`hist::ENCODING`].
    pub encoding: String,
    /// Unit of the values: `ns`.
    pub unit: String,
    /// Lowest discernible value.
    pub lowest_ns: u64,
    /// Highest trackable value; larger samples were clamped to it.
    pub highest_ns: u64,
    /// Significant decimal digits.
    pub significant_digits: u8,
    /// Total count (equals the stream's `samples`).
    pub total: u64,
    /// Samples clamped to `highest_ns`.
    pub clamped: u64,
    /// Samples of a measuring thread recorded while several of its histogram's 32-bit
    /// bucket counts had saturated, put in the highest of those buckets (0: none,
    /// omitted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub saturated: u64,
    /// Samples known only to be at least some value (an imported source's overflow
    /// bucket), recorded at it (empty: none, omitted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflows: Vec<Overflow>,
    /// The encoded histogram. Negative samples (early wakes) are recorded as 0.
    pub data: String,
}

impl EncodedHistogram {
    /// Encodes a histogram.
    pub fn from_histogram(h: &LatencyHistogram) -> EncodedHistogram {
        EncodedHistogram {
            encoding: hist::ENCODING.to_string(),
            unit: "ns".to_string(),
            lowest_ns: 1,
            highest_ns: hist::HIGHEST_NS,
            significant_digits: hist::SIGNIFICANT_DIGITS,
            total: h.len(),
            clamped: h.clamped(),
            saturated: h.saturated(),
            overflows: h.overflows().to_vec(),
            data: h.encode(),
        }
    }

    /// Decodes the histogram, with its clamped, saturated and overflowed samples.
    pub fn decode(&self) -> Result<LatencyHistogram, HistogramError> {
        let mut h = LatencyHistogram::decode(&self.data)?;
        h.restore_notes(self.clamped, self.saturated, &self.overflows);
        Ok(h)
    }
}

/// Large samples with the instant they happened.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Spikes {
    /// The largest samples, largest first.
    pub top: Vec<Spike>,
    /// Threshold above which every sample was kept.
    pub threshold_ns: Option<Nanos>,
    /// Samples above the threshold, in time order (bounded).
    pub above_threshold: Vec<Spike>,
    /// Samples above the threshold that did not fit.
    pub above_threshold_dropped: u64,
}

/// One large sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spike {
    /// The sample.
    pub value_ns: Nanos,
    /// When it was due, relative to the start of the stream's measured span.
    pub at_ns: Nanos,
}

/// Per-interval maximum and count, for the timeline plot.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Interval width (doubles when a long run outgrows the bounded buffer).
    pub interval_ns: Nanos,
    /// Largest sample per interval (`null` for an interval without samples).
    pub max_ns: Vec<Option<Nanos>>,
    /// Samples per interval.
    pub count: Vec<u64>,
}

/// Something that happened during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Kind, e.g. `breaktrace`.
    pub kind: String,
    /// Offset from the start of the stream's measured span.
    pub at_ns: Nanos,
    /// Thread index.
    pub thread: usize,
    /// CPU, if pinned.
    pub cpu: Option<usize>,
    /// The sample that caused it.
    pub value_ns: Option<Nanos>,
    /// Human description.
    pub message: String,
}

/// For `skip_serializing_if`: a zero count is left out of the file.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a run can fall short of what its figures claim, which `--accept` may let
/// through (what it means for the outcome: [`crate::outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shortfall {
    /// It measured less than it was asked.
    Incomplete,
    /// It measured under degraded conditions.
    Untrusted,
}

impl Shortfall {
    /// Every shortfall, in the order of precedence.
    pub const ALL: [Shortfall; 2] = [Shortfall::Incomplete, Shortfall::Untrusted];

    /// The name `--accept` takes and the Run stores.
    pub fn name(self) -> &'static str {
        match self {
            Shortfall::Incomplete => "incomplete",
            Shortfall::Untrusted => "untrusted",
        }
    }

    /// Parses `--accept`'s comma-separated list (`incomplete,untrusted`).
    pub fn parse_list(text: &str) -> Result<Vec<Shortfall>, String> {
        let mut list = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let found = Shortfall::ALL.into_iter().find(|s| s.name() == word);
            match found {
                Some(s) if !list.contains(&s) => list.push(s),
                Some(_) => {}
                None => {
                    return Err(format!(
                        "'{word}' is not something a run can be accepted as: write \
                         incomplete, untrusted, or both (incomplete,untrusted)"
                    ))
                }
            }
        }
        list.sort_unstable();
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_written_before_phases_were_planned_reads_with_none() {
        let run = Run::from_json(include_str!("../../../docs/example-run.json")).unwrap();
        assert!(run.plan.phases.is_empty());
        assert!(!run.plan.probes.is_empty());
    }

    #[test]
    fn percentile_keys() {
        assert_eq!(percentile_key(50.0), "50");
        assert_eq!(percentile_key(99.9), "99.9");
        assert_eq!(percentile_key(99.999), "99.999");
    }

    #[test]
    fn statistics_are_exact_and_ordered() {
        let mut sums = ExactSums::default();
        let mut h = LatencyHistogram::new();
        for v in [3_000i64, 1_000, 2_000, 10_000] {
            sums.add(v);
            h.record(v);
        }
        let s = Statistics::compute(&sums, &h);
        assert_eq!(s.min_ns, Some(Nanos(1_000)));
        assert_eq!(s.max_ns, Some(Nanos(10_000)));
        assert_eq!(s.mean_ns, Some(4_000.0));
        // population SD of 1,2,3,10 (×1000) = sqrt(12.5) × 1000
        assert!((s.stddev_ns.unwrap() - 12.5f64.sqrt() * 1000.0).abs() < 1e-6);
        let p: Vec<Nanos> = REPORTED_PERCENTILES
            .iter()
            .map(|&q| s.percentile(q).unwrap().exact().unwrap())
            .collect();
        assert!(p.windows(2).all(|w| w[0] <= w[1]));
        assert!(p.iter().all(|v| *v <= Nanos(10_000) && *v >= Nanos(1_000)));
    }

    #[test]
    fn empty_statistics_are_null() {
        let s = Statistics::compute(&ExactSums::default(), &LatencyHistogram::new());
        assert_eq!(s.min_ns, None);
        assert!(s.percentiles_ns.is_empty());
    }

    #[test]
    fn other_schemas_are_refused() {
        let err = Run::from_json(r#"{"schema":"latlab.run/9"}"#).unwrap_err();
        assert!(err.to_string().contains("latlab.run/9"));
        assert!(Run::from_json("[1,2]").is_err());
    }
}
