//! Probes by name (`latlab run --probe NAME:key=value,...`): which exist, and
//! how a specification names one of them with its parameters.
//!
//! The timer probe measures periodic wake-up latency; the others one OS primitive each
//! — a preemption, a task switch, a message, a semaphore hand-over, a signal, the noise
//! under a busy loop, a clock read — as a distribution, with the same statistics,
//! spikes and timeline. Each lives in its own file with an [`INFO`](ProbeInfo)
//! constant; adding a probe is that file plus its name in the registry
//! (`probe/mod.rs`), which makes [`CATALOGUE`].

use super::info::{ParamInfo, Params, ProbeInfo};
use latlab_model::params::{self, Described, ParamsError};
use std::fmt;

pub use super::CATALOGUE;

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
    use crate::probe::info::Policies;
    use latlab_model::spec::SchedSpec;

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
        let e = pi.check(fifo(2)).unwrap_err().to_string();
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
}
