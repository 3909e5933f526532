//! Whether two runs measured the same thing: a timer run and a message probe's, or
//! runs at different periods, policies, CPUs, clocks or sleep methods, do not tell
//! what a change did to latency, whatever their numbers say.

use latlab_model::run::{ProbePlan, Run};
use latlab_model::Nanos;
use serde::Serialize;
use std::collections::BTreeSet;

/// One way two runs differ in what they measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// What differs: `probe`, `method`, `period`, `policy`, `CPUs`, `clock`, `phases`.
    pub what: &'static str,
    /// The base run's value(s).
    pub base: String,
    /// The new run's value(s).
    pub new: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (base) vs {}", self.what, self.base, self.new)
    }
}

/// A setting's known values in a run, sorted and without repeats; empty when no
/// stream knows it (an imported Run whose source did not say).
type Values = fn(&Run) -> BTreeSet<String>;

/// What is compared, in the order differences are told.
const SETTINGS: [(&str, Values); 7] = [
    ("probe", |run| {
        run.streams.iter().map(|s| s.probe.clone()).collect()
    }),
    ("method", |run| {
        run.streams
            .iter()
            .filter_map(|s| s.method.clone())
            .collect()
    }),
    ("period", |run| {
        let periods: BTreeSet<Nanos> = run.streams.iter().filter_map(|s| s.period_ns).collect();
        periods.into_iter().map(|p| p.to_string()).collect()
    }),
    ("policy", |run| {
        let policies = run.streams.iter().filter_map(|s| s.policy.as_ref());
        policies.map(ToString::to_string).collect()
    }),
    ("CPUs", |run| {
        let cpus: BTreeSet<usize> = run.streams.iter().filter_map(|s| s.cpu).collect();
        cpus.into_iter().map(|c| c.to_string()).collect()
    }),
    ("clock", |run| {
        let timers = run.plan.probes.iter().filter_map(|p| match p {
            ProbePlan::Timer(t) => Some(t.clock.name().to_string()),
            ProbePlan::Primitive(_) => None,
        });
        timers.collect()
    }),
    // One phase's name says nothing of what it measured (`main`, or the probe it was
    // run with, which `probe` compares): only runs of several phases are told apart
    // by them.
    ("phases", |run| match run.phases.len() {
        0 => BTreeSet::new(),
        1 => BTreeSet::from(["one phase".to_string()]),
        _ => run.phases.iter().map(|p| p.name.clone()).collect(),
    }),
];

/// How `new` differs from `base` in what it measured. A setting one of them does not
/// know is not counted as a difference: there is nothing to tell it by.
pub fn differences(base: &Run, new: &Run) -> Vec<Difference> {
    SETTINGS
        .into_iter()
        .filter_map(|(what, values)| {
            let (b, n) = (values(base), values(new));
            let join = |v: BTreeSet<String>| v.into_iter().collect::<Vec<_>>().join(", ");
            (!b.is_empty() && !n.is_empty() && b != n).then(|| Difference {
                what,
                base: join(b),
                new: join(n),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Run {
        Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap()
    }

    #[test]
    fn a_run_is_like_itself() {
        assert_eq!(differences(&example(), &example()), Vec::new());
    }

    #[test]
    fn each_known_difference_is_named_and_an_unknown_is_not_one() {
        let base = example();
        let mut new = example();
        for s in &mut new.streams {
            s.probe = "msg".into();
            s.policy = None;
        }
        new.plan.probes.clear();
        let found = differences(&base, &new);
        assert_eq!(
            found,
            [Difference {
                what: "probe",
                base: "timer".into(),
                new: "msg".into()
            }]
        );
        assert_eq!(found[0].to_string(), "probe: timer (base) vs msg");
    }

    #[test]
    fn the_name_of_a_single_phase_is_no_difference_but_several_phases_are() {
        let base = example();
        let mut named = example();
        named.phases[0].name = "timer:method=abs".into();
        assert_eq!(differences(&base, &named), Vec::new());
        let mut two = example();
        let mut second = two.phases[0].clone();
        second.name = "load".into();
        two.phases.push(second);
        let found = differences(&base, &two);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].what, "phases");
    }
}
