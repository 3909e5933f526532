//! What a probe is and what it is built from: the types every probe file uses.
//!
//! A probe is one file with an [`INFO`](ProbeInfo) constant (name, definition,
//! parameters, the shared settings it honours) and a `build` function that turns a
//! [`ProbeSetup`] — its parameters plus the settings every probe shares — into a
//! [`Probe`]. The list of probes is the registry ([`super::catalogue`]), which depends
//! on the probe files; they depend only on this module.

use super::{Placement, Probe};
use crate::breaktrace::Tripwire;
use crate::record::{RecorderLimits, SampleRecorder, TIMELINE_SLOTS};
use latlab_model::run::{EncodedHistogram, PrimitiveSettings, ProbePlan, Statistics, Stream};
use latlab_model::spec::{ClockName, SchedSpec};
use latlab_model::Nanos;
use std::fmt;
use std::sync::Arc;

/// A probe: its name, what it measures, its parameters, what shared settings it
/// honours, how to build it.
pub struct ProbeInfo {
    /// Its name on the command line and in results (`msg`).
    pub name: &'static str,
    /// One line on what it measures.
    pub summary: &'static str,
    /// The definition of a sample: which two instants it spans, on which clock, and
    /// how threads or processes are arranged (printed by `latlab probes --long`).
    pub definition: &'static str,
    /// Its parameters.
    pub params: &'static [ParamInfo],
    /// The settings beyond those every probe honours (see [`Setting`]) that it uses;
    /// a flag for any other is refused.
    pub honours: &'static [Setting],
    /// The scheduling policies its measuring thread may run at, given its parameters.
    pub policies: fn(&Params) -> Policies,
    /// Builds the probe from a checked setup; nothing is acquired until a worker is
    /// prepared on its measuring thread, so building is free.
    pub build: fn(&ProbeSetup) -> Result<Box<dyn Probe>, BuildError>,
    /// How the Run's plan records the probe, when not as a primitive probe's
    /// parameters and period ([`ProbeSetup::primitive_plan`]).
    pub plan: Option<fn(&ProbeSetup) -> ProbePlan>,
}

impl ProbeInfo {
    /// Checks that the probe can run at the setup's policy, then builds it.
    pub fn prepare(&self, setup: &ProbeSetup) -> Result<Box<dyn Probe>, PlanError> {
        (self.policies)(&setup.params)
            .check(setup.policy)
            .map_err(|refused| PlanError::Policy {
                probe: self.name,
                refused,
            })?;
        (self.build)(setup).map_err(PlanError::Build)
    }

    /// Whether the probe honours `setting`.
    pub fn honours(&self, setting: Setting) -> bool {
        self.honours.contains(&setting)
    }

    /// The plan's record of the probe as set up.
    pub fn plan_of(&self, setup: &ProbeSetup) -> ProbePlan {
        match self.plan {
            Some(record) => record(setup),
            None => setup.primitive_plan(self.name),
        }
    }
}

/// A shared setting that only some probes honour. Every probe honours the others:
/// CPUs, policy, duration, warm-up, timer slack (applied by the runner), and the
/// spikes, top-K and timeline of its recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The cycle (`--period`): how often a sample, or a burst of them, is taken.
    Period,
    /// The clock slept on and read (`--clock`).
    Clock,
    /// The timer's sleep method (`--method`), the value of its `method` parameter.
    Method,
    /// How long before the deadline a hybrid sleep starts spinning (`--hybrid-margin`).
    HybridMargin,
    /// Stop at the first sample over a limit (`--breaktrace`): every probe that
    /// records its samples in a [`SampleRecorder`].
    Breaktrace,
}

impl Setting {
    /// Every setting, in the order errors list them.
    pub const ALL: [Setting; 5] = [
        Setting::Period,
        Setting::Clock,
        Setting::Method,
        Setting::HybridMargin,
        Setting::Breaktrace,
    ];

    /// Its flag on `latlab run`.
    pub fn flag(self) -> &'static str {
        match self {
            Setting::Period => "--period",
            Setting::Clock => "--clock",
            Setting::Method => "--method",
            Setting::HybridMargin => "--hybrid-margin",
            Setting::Breaktrace => "--breaktrace",
        }
    }
}

/// Why a probe cannot be built from its setup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A parameter's value the probe cannot use.
    #[error("probe {probe}: {key}={value}: {fix}")]
    Param {
        /// The probe.
        probe: &'static str,
        /// The parameter.
        key: &'static str,
        /// Its value.
        value: String,
        /// What to give instead.
        fix: String,
    },
    /// A shared setting that does not fit the probe's parameters.
    #[error("probe {probe}: {why}")]
    Setting {
        /// The probe.
        probe: &'static str,
        /// The setting at fault.
        setting: Setting,
        /// What is wrong and what to do.
        why: String,
    },
    /// Parameters that do not go together, or a system that lacks what they need.
    #[error("probe {probe}: {why}")]
    Unsupported {
        /// The probe.
        probe: &'static str,
        /// What is wrong and what to do.
        why: String,
    },
}

impl BuildError {
    /// A bad value for `key`, read from `setup`.
    pub fn param(
        probe: &'static str,
        key: &'static str,
        setup: &ProbeSetup,
        fix: impl Into<String>,
    ) -> BuildError {
        BuildError::Param {
            probe,
            key,
            value: setup.param(key).to_string(),
            fix: fix.into(),
        }
    }
}

/// Why a probe cannot run as planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Not at the requested scheduling policy (the fault of `-P`).
    #[error("probe {probe} {refused}")]
    Policy {
        /// The probe.
        probe: &'static str,
        /// Why, and which policies it accepts.
        refused: PolicyRefused,
    },
    /// Not with these parameters or settings, or not on this system.
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// The scheduling policies a probe's measuring thread may run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policies {
    /// Every policy, SCHED_DEADLINE included.
    Any,
    /// Every policy but SCHED_DEADLINE: the measuring thread starts a partner task,
    /// and the kernel lets no deadline task fork or start a thread (EAGAIN).
    NoDeadline,
    /// SCHED_FIFO or SCHED_RR at a priority that leaves this many levels for the
    /// partners below it, or a policy that is not real-time; not SCHED_DEADLINE, as
    /// for [`Policies::NoDeadline`] (and every task shares one pinned CPU).
    LevelsBelow(i32),
}

impl Policies {
    /// Whether `policy` is one of them; the error says why not and what is.
    pub fn check(self, policy: SchedSpec) -> Result<(), PolicyRefused> {
        let refused = |why: String| {
            Err(PolicyRefused {
                policy,
                why,
                accepted: self,
            })
        };
        match (self, policy) {
            (Policies::Any, _) => Ok(()),
            (_, SchedSpec::Deadline { .. }) => refused(
                "its measuring thread starts partner tasks, and the kernel lets no \
                 SCHED_DEADLINE task start one"
                    .to_string(),
            ),
            (Policies::LevelsBelow(below), SchedSpec::Fifo { priority })
            | (Policies::LevelsBelow(below), SchedSpec::Rr { priority })
                if priority <= below =>
            {
                refused(format!(
                    "its partners run up to {below} priority levels below the measuring \
                     thread"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A policy a probe's measuring thread cannot run at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot run at {policy}: {why}; it accepts -P {accepted}")]
pub struct PolicyRefused {
    /// The policy asked for.
    pub policy: SchedSpec,
    /// Why the probe cannot run at it.
    pub why: String,
    /// What it accepts.
    pub accepted: Policies,
}

impl fmt::Display for Policies {
    /// What is accepted, as `-P` values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lowest = match self {
            Policies::Any => {
                return f.write_str("any: f:PRIO, r:PRIO, o, b, i or d:RUNTIME:PERIOD")
            }
            Policies::NoDeadline => 1,
            Policies::LevelsBelow(below) => below + 1,
        };
        write!(
            f,
            "f:{lowest} to f:99, r:{lowest} to r:99, o, b or i (not d:RUNTIME:PERIOD)"
        )
    }
}

impl fmt::Debug for ProbeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeInfo")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub use latlab_model::params::{param, ParamInfo, Params};

/// Everything a probe is built from: its checked parameters (every key, defaults
/// filled in) and the settings every probe shares.
#[derive(Debug, Clone)]
pub struct ProbeSetup {
    /// Parameter values, one per [`ParamInfo`], validated against its choices.
    pub params: Params,
    /// The probe's cycle: how often a sample (or a burst of them) is taken.
    pub period: Nanos,
    /// Warm-up plus measured span (`None` = until stopped): sizes the timeline.
    pub span: Option<Nanos>,
    /// The requested policy of the measuring threads; partners derive theirs from it.
    pub policy: SchedSpec,
    /// CPUs this process may use (for partners placed on another CPU).
    pub allowed_cpus: Vec<usize>,
    /// The CPUs the phase measures, each once (a kernel tracer runs on all of them).
    pub measured_cpus: Vec<usize>,
    /// The clock slept on and read, for probes that honour [`Setting::Clock`].
    pub clock: ClockName,
    /// For the timer's hybrid sleep: how long before the deadline it spins.
    pub hybrid_margin: Nanos,
    /// Timer slack of the measuring threads (`None` = as inherited).
    pub timer_slack: Option<u64>,
    /// Keep every sample above this (bounded by `spike_capacity`).
    pub spike_threshold: Option<Nanos>,
    /// How many samples above the threshold each thread keeps.
    pub spike_capacity: usize,
    /// How many of the largest samples to keep.
    pub top_spikes: usize,
    /// The timeline's interval.
    pub timeline_interval: Nanos,
    /// Stop at the first sample over its limit (`--breaktrace`).
    pub breaktrace: Option<Arc<Tripwire>>,
}

impl ProbeSetup {
    /// The settings of a default run for a probe with `params`: 1 ms period, 30 s,
    /// every allowed CPU, FIFO 95, the monotonic clock, the top 10 samples, a 1 s
    /// timeline, no spike threshold, no break trace.
    pub fn new(params: Params, allowed_cpus: Vec<usize>) -> ProbeSetup {
        ProbeSetup {
            params,
            period: Nanos::MILLISECOND,
            span: Some(Nanos::from_secs(30)),
            policy: SchedSpec::DEFAULT,
            measured_cpus: allowed_cpus.clone(),
            allowed_cpus,
            clock: ClockName::Monotonic,
            hybrid_margin: Nanos(50_000),
            timer_slack: None,
            spike_threshold: None,
            spike_capacity: 1024,
            top_spikes: 10,
            timeline_interval: Nanos::from_secs(1),
            breaktrace: None,
        }
    }

    /// A parameter's value (every declared key is present after parsing).
    pub fn param(&self, key: &str) -> &str {
        param(&self.params, key)
    }

    /// The recorder every worker of this probe keeps its samples in.
    pub fn recorder(&self) -> SampleRecorder {
        SampleRecorder::new(self.recorder_limits()).breaking_at(self.breaktrace.clone())
    }

    /// The recorder of the worker at `placement`: pushing its spikes into the
    /// placement's feed, if it has one, and handing copies over to its checkpoints.
    pub fn recorder_for(&self, placement: &Placement) -> SampleRecorder {
        self.recorder_for_part(placement, 0, true)
    }

    /// Recorder `part` of a worker that keeps several (one per thing it measures on
    /// its CPU); only one of them (`explained`) feeds spikes to be explained.
    pub fn recorder_for_part(
        &self,
        placement: &Placement,
        part: usize,
        explained: bool,
    ) -> SampleRecorder {
        let feed = explained.then(|| placement.feed.clone()).flatten();
        let recorder = self.recorder().feeding(feed);
        match &placement.checkpoint {
            None => recorder,
            Some(checkpoint) => {
                let (recorder, handover) = recorder.handing_over();
                checkpoint.register(placement.thread, part, handover);
                recorder
            }
        }
    }

    /// What that recorder keeps.
    pub fn recorder_limits(&self) -> RecorderLimits {
        let interval = self.timeline_interval.0.max(1);
        let slots = self
            .span
            .map_or(TIMELINE_SLOTS, |s| (s.0 / interval + 2) as usize);
        RecorderLimits {
            top: self.top_spikes,
            spike_threshold: self.spike_threshold.map(|n| n.0),
            spike_capacity: self.spike_capacity,
            timeline_interval: interval,
            timeline_slots: slots,
        }
    }

    /// The variant as results name it: the parameters' values in order
    /// (`sysv thread same-cpu`).
    pub fn variant(&self, info: &ProbeInfo) -> String {
        info.params
            .iter()
            .map(|p| self.param(p.key))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The plan's record of a probe known by its parameters and period.
    pub fn primitive_plan(&self, name: &str) -> ProbePlan {
        ProbePlan::Primitive(PrimitiveSettings {
            name: name.to_string(),
            params: self.params.clone(),
            period_ns: self.period,
            policy: self.policy,
        })
    }

    /// The CPU a partner runs on: the worker's own, or for `cross` the next allowed
    /// CPU after it (wrapping), which is the worker's own only when it is the sole one.
    pub fn partner_cpu(&self, placement: &Placement, cross: bool) -> Option<usize> {
        let own = placement.cpu?;
        if !cross {
            return Some(own);
        }
        let others: Vec<usize> = self
            .allowed_cpus
            .iter()
            .copied()
            .filter(|&c| c != own)
            .collect();
        others
            .iter()
            .copied()
            .find(|&c| c > own)
            .or_else(|| others.first().copied())
            .or(Some(own))
    }
}

/// What a finished worker hands back, turned into a stream by [`stream_of`].
#[derive(Debug)]
pub struct Measured<'a> {
    /// The probe.
    pub info: &'static ProbeInfo,
    /// Its setup.
    pub setup: &'a ProbeSetup,
    /// Where the worker ran.
    pub placement: &'a Placement,
    /// Its samples.
    pub recorder: &'a SampleRecorder,
    /// Cycles in which no sample could be taken (e.g. a partner that did not answer).
    pub missed: u64,
    /// Samples taken in the warm-up and discarded.
    pub warm_up_samples: u64,
    /// The first measured sample.
    pub first_sample: Option<Nanos>,
    /// The measured span.
    pub elapsed: Nanos,
    /// Page faults of the measuring thread while measuring.
    pub page_faults: u64,
}

/// The Run stream of a primitive probe's worker.
pub fn stream_of(m: Measured<'_>, phase: &str) -> Stream {
    let rec = m.recorder;
    let histogram = rec.histogram();
    Stream {
        probe: m.info.name.to_string(),
        method: Some(m.setup.variant(m.info)),
        phase: phase.to_string(),
        thread: m.placement.thread,
        cpu: m.placement.cpu,
        policy: Some(m.placement.policy),
        period_ns: Some(m.setup.period),
        samples: rec.samples(),
        missed_periods: Some(m.missed),
        overrun_wakes: Some(0),
        early_wakes: Some(rec.early_wakes()),
        first_sample_ns: m.first_sample,
        warm_up_samples: m.warm_up_samples,
        drift_ns: None,
        elapsed_ns: Some(m.elapsed),
        timer_slack_ns: Some(m.placement.timer_slack_ns),
        page_faults: Some(m.page_faults),
        stats: Statistics::compute(rec.sums(), &histogram),
        histogram: Some(EncodedHistogram::from_histogram(&histogram)),
        spikes: rec.spikes(m.setup.spike_threshold),
        timeline: rec.timeline(),
    }
}

/// A setup for `info` with `params` over its defaults (checked as the command line
/// checks them), a 1 ms period and a 1 s span, for probes' unit tests.
#[cfg(test)]
pub(crate) fn test_setup(
    info: &ProbeInfo,
    params: &[(&str, &str)],
    allowed_cpus: &[usize],
) -> ProbeSetup {
    let pairs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let spec = super::catalogue::parse(&format!("{}:{}", info.name, pairs.join(",")))
        .expect("a valid spec");
    ProbeSetup {
        span: Some(Nanos::from_secs(1)),
        top_spikes: 5,
        ..ProbeSetup::new(spec.params, allowed_cpus.to_vec())
    }
}

/// A timer stream with one sample, `latest` ns late, on `cpu` at `policy`, that
/// missed `missed` periods over `elapsed`, for the unit tests of what reads streams.
#[cfg(test)]
pub(crate) fn test_timer_stream(
    cpu: usize,
    policy: SchedSpec,
    missed: u64,
    latest: i64,
    elapsed: Nanos,
    page_faults: u64,
) -> Stream {
    let info = &super::clock::INFO;
    let setup = test_setup(info, &[], &[cpu]);
    let mut recorder = setup.recorder();
    recorder.record(latest, 1);
    let placement = Placement {
        thread: 0,
        cpu: Some(cpu),
        policy,
        timer_slack_ns: 0,
        feed: None,
        checkpoint: None,
    };
    let mut stream = stream_of(
        Measured {
            info,
            setup: &setup,
            placement: &placement,
            recorder: &recorder,
            missed,
            warm_up_samples: 0,
            first_sample: None,
            elapsed,
            page_faults,
        },
        "main",
    );
    stream.probe = "timer".to_string();
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_partners_go_to_another_cpu_when_there_is_one() {
        let setup = ProbeSetup::new(Params::new(), vec![0, 1, 3]);
        let at = |cpu| Placement {
            thread: 0,
            cpu: Some(cpu),
            policy: SchedSpec::DEFAULT,
            timer_slack_ns: 0,
            feed: None,
            checkpoint: None,
        };
        assert_eq!(setup.partner_cpu(&at(1), false), Some(1));
        assert_eq!(setup.partner_cpu(&at(1), true), Some(3));
        assert_eq!(setup.partner_cpu(&at(3), true), Some(0));
        let alone = ProbeSetup {
            allowed_cpus: vec![2],
            ..setup
        };
        assert_eq!(alone.partner_cpu(&at(2), true), Some(2));
    }

    #[test]
    fn the_recorder_keeps_the_timeline_interval_and_spike_capacity_of_the_setup() {
        let setup = ProbeSetup {
            timeline_interval: Nanos(100_000_000),
            spike_capacity: 7,
            span: Some(Nanos::from_secs(1)),
            ..ProbeSetup::new(Params::new(), vec![0])
        };
        let limits = setup.recorder_limits();
        assert_eq!(limits.timeline_interval, 100_000_000);
        assert_eq!(limits.spike_capacity, 7);
        assert_eq!(limits.timeline_slots, 12);
    }
}
