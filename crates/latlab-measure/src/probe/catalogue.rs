//! The primitive probes (`latlab run --probe NAME:key=value,...`): what exists, what
//! each measures, its parameters, and how a specification becomes a [`Probe`].
//!
//! A primitive probe measures one OS primitive — a preemption, a task switch, a
//! message, a semaphore hand-over, a signal, the noise under a busy loop, a clock read —
//! as a distribution, with the timer probe's statistics, spikes and timeline. Each
//! lives in its own file with an [`INFO`](ProbeInfo) constant listed in [`CATALOGUE`].

use super::{Placement, Probe};
use crate::record::{RecorderLimits, SampleRecorder};
use latlab_model::params::{self, Described, ParamsError};
use latlab_model::run::{EncodedHistogram, Statistics, Stream};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::fmt;

/// Every primitive probe, in the order `latlab probes` lists them.
pub const CATALOGUE: &[ProbeInfo] = &[
    super::preempt::INFO,
    super::switch::INFO,
    super::msg::INFO,
    super::sem::INFO,
    super::pi::INFO,
    super::prio_wake::INFO,
    super::signal::INFO,
    super::noise::INFO,
    super::clock::INFO,
];

/// A primitive probe: its name, what it measures, its parameters, how to build it.
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
    /// The scheduling policies its measuring thread may run at, given its parameters.
    pub policies: fn(&Params) -> Policies,
    /// Builds the probe from a checked specification (see [`ProbeInfo::check`]).
    pub build: fn(&ProbeSetup) -> Result<Box<dyn Probe>, String>,
}

impl ProbeInfo {
    /// Checks what parsing cannot: that the probe can run at the setup's policy, and
    /// whatever its `build` checks (e.g. a TSC on this CPU). A probe acquires nothing
    /// until it is prepared on its measuring thread, so this is free.
    pub fn check(&self, setup: &ProbeSetup) -> Result<(), PlanError> {
        (self.policies)(&setup.params)
            .check(setup.policy)
            .map_err(|why| PlanError::Policy(format!("probe {} {why}", self.name)))?;
        (self.build)(setup).map(drop).map_err(PlanError::Setup)
    }
}

/// Why a probe cannot run as planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Not at the requested scheduling policy (the fault of `-P`).
    #[error("{0}")]
    Policy(String),
    /// Not with these parameters or on this system.
    #[error("{0}")]
    Setup(String),
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
    pub fn check(self, policy: SchedSpec) -> Result<(), String> {
        let refused = |why: &str| {
            Err(format!(
                "cannot run at {policy}: {why}; it accepts -P {self}"
            ))
        };
        match (self, policy) {
            (Policies::Any, _) => Ok(()),
            (_, SchedSpec::Deadline { .. }) => refused(
                "its measuring thread starts partner tasks, and the kernel lets no \
                 SCHED_DEADLINE task start one",
            ),
            (Policies::LevelsBelow(below), SchedSpec::Fifo { priority })
            | (Policies::LevelsBelow(below), SchedSpec::Rr { priority })
                if priority <= below =>
            {
                refused(&format!(
                    "its partners run up to {below} priority levels below the measuring \
                     thread"
                ))
            }
            _ => Ok(()),
        }
    }
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
/// filled in) and the run's settings that apply to it.
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
    /// Keep every sample above this (as the timer probe's `--spike`).
    pub spike_threshold: Option<Nanos>,
    /// How many of the largest samples to keep.
    pub top_spikes: usize,
}

impl ProbeSetup {
    /// A parameter's value (every declared key is present after [`parse`]).
    pub fn param(&self, key: &str) -> &str {
        param(&self.params, key)
    }

    /// The recorder every worker of this probe keeps its samples in.
    pub fn recorder(&self) -> SampleRecorder {
        SampleRecorder::new(self.recorder_limits())
    }

    /// What that recorder keeps.
    pub fn recorder_limits(&self) -> RecorderLimits {
        let interval = Nanos::from_secs(1).0;
        let slots = self.span.map_or(crate::record::TIMELINE_SLOTS, |s| {
            (s.0 / interval + 2) as usize
        });
        RecorderLimits {
            top: self.top_spikes,
            spike_threshold: self.spike_threshold.map(|n| n.0),
            spike_capacity: 10_000,
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
    let spec = parse(&format!("{}:{}", info.name, pairs.join(","))).expect("a valid spec");
    ProbeSetup {
        params: spec.params,
        period: Nanos::from_millis(1),
        span: Some(Nanos::from_secs(1)),
        policy: SchedSpec::DEFAULT,
        allowed_cpus: allowed_cpus.to_vec(),
        spike_threshold: None,
        top_spikes: 5,
    }
}

/// The probe named `name`.
pub fn find(name: &str) -> Option<&'static ProbeInfo> {
    CATALOGUE.iter().find(|p| p.name == name)
}

/// A parsed `NAME[:key=value,...]` specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    /// The probe.
    pub name: String,
    /// Every parameter, defaults filled in.
    pub params: Params,
}

impl ProbeSpec {
    /// The probe's catalogue entry (always present for a parsed spec).
    pub fn info(&self) -> &'static ProbeInfo {
        find(&self.name).expect("a parsed spec names a known probe")
    }
}

impl fmt::Display for ProbeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = params::Spec {
            entry: self.info(),
            params: &self.params,
        };
        write!(f, "{spec}")
    }
}

impl Described for ProbeInfo {
    fn name(&self) -> &'static str {
        self.name
    }

    fn params(&self) -> &'static [ParamInfo] {
        self.params
    }
}

/// Parses `NAME[:key=value,...]`, checking the name, the keys and the values, and
/// filling in defaults. Errors say what is accepted.
pub fn parse(text: &str) -> Result<ProbeSpec, ParamsError> {
    let kind = params::Kind {
        noun: "probe",
        listed_by: "latlab probes",
    };
    let (info, params) = params::parse(text, kind, CATALOGUE)?;
    Ok(ProbeSpec {
        name: info.name.to_string(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_defaults_and_name_their_mistakes() {
        for info in CATALOGUE {
            let spec = parse(info.name).unwrap();
            assert_eq!(spec.params.len(), info.params.len());
            assert_eq!(parse(&spec.to_string()).unwrap(), spec, "round trip");
            for p in info.params {
                assert!(p.choices.is_empty() || p.choices.contains(&p.default));
            }
            assert!(!info.summary.is_empty() && !info.definition.is_empty());
        }
        assert!(parse("nosuch").unwrap_err().to_string().contains("clock"));
        assert!(parse("clock:nokey=1")
            .unwrap_err()
            .to_string()
            .contains("no parameter"));
        assert!(parse("clock:clock")
            .unwrap_err()
            .to_string()
            .contains("key=value"));
        assert!(parse("msg:task=process,task=thread")
            .unwrap_err()
            .to_string()
            .contains("gives task twice"));
        assert!(parse("clock:clock=sundial")
            .unwrap_err()
            .to_string()
            .contains("monotonic"));
    }

    #[test]
    fn every_probe_says_which_policies_it_runs_at() {
        let deadline = SchedSpec::parse("d:100us:1ms").unwrap();
        let fifo = |priority| SchedSpec::Fifo { priority };
        for info in CATALOGUE {
            let defaults = parse(info.name).unwrap().params;
            let policies = (info.policies)(&defaults);
            assert!(policies.check(SchedSpec::DEFAULT).is_ok(), "{}", info.name);
            assert!(policies.check(SchedSpec::Other { nice: 0 }).is_ok());
            let starts_partners = info.params.iter().any(|p| p.key == "task");
            assert_eq!(
                policies.check(deadline).is_err(),
                starts_partners,
                "{}: {policies}",
                info.name
            );
        }
        let pi = (find("pi").unwrap().policies)(&parse("pi").unwrap().params);
        let e = pi.check(fifo(2)).unwrap_err();
        assert!(
            e.contains("2 priority levels") && e.contains("f:3 to f:99"),
            "{e}"
        );
        assert!(pi.check(fifo(3)).is_ok());
        let timer_signal = parse("signal:kind=timer").unwrap().params;
        assert_eq!(
            (find("signal").unwrap().policies)(&timer_signal),
            Policies::Any
        );
    }

    #[test]
    fn cross_partners_go_to_another_cpu_when_there_is_one() {
        let setup = ProbeSetup {
            params: Params::new(),
            period: Nanos::from_millis(1),
            span: None,
            policy: SchedSpec::DEFAULT,
            allowed_cpus: vec![0, 1, 3],
            spike_threshold: None,
            top_spikes: 10,
        };
        let at = |cpu| Placement {
            thread: 0,
            cpu: Some(cpu),
            policy: SchedSpec::DEFAULT,
            timer_slack_ns: 0,
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
}
