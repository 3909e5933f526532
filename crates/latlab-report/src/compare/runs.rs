//! A base run against each later run: whether they measured alike, each figure's
//! verdict (phase by phase when both runs have the same phases), and their loads.
//! What `latlab compare` prints, writes as JSON, and turns into its exit status.

use super::periods::{by_period, PeriodTable};
use super::{
    compare, compare_loads, differences, Change, Comparison, Difference, Estimate, Judged,
    LoadComparison, RunFigures, Tolerance, Unknown, LOADS_METHOD, METHOD,
};
use latlab_model::hist::HistogramError;
use latlab_model::run::Run;
use serde::{Serialize, Serializer};

/// The identifier of the JSON document `latlab compare --json` writes.
pub const SCHEMA: &str = "latlab.comparison/1";

/// What people call a run: the name the user gave it (`--name`), else its scenario
/// (`None`: it has neither).
pub fn run_name(run: &Run) -> Option<String> {
    run.name
        .clone()
        .or_else(|| run.scenario.clone())
        .filter(|s| !s.trim().is_empty())
}

/// A run in a sentence: `osadl (20261121T005337Z-7ebf7f)`, or the id alone when the
/// run has no name.
pub fn run_label(run: &Run) -> String {
    label(run_name(run).as_deref(), &run.id)
}

fn label(name: Option<&str>, id: &str) -> String {
    match name {
        Some(name) => format!("{name} ({id})"),
        None => id.to_string(),
    }
}

/// Why runs could not be compared at all.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// No run was given.
    #[error("nothing to compare: give a base run and at least one other")]
    TooFewRuns,
    /// A stream's histogram could not be decoded.
    #[error(
        "run {run}: {source}; the Run is damaged: export it again from the store or measure \
         again"
    )]
    Histogram {
        /// The run's id.
        run: String,
        /// What was wrong.
        source: HistogramError,
    },
}

/// A run as the comparison names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRef {
    /// Its id.
    pub id: String,
    /// Its name ([`run_name`]).
    pub name: Option<String>,
    /// Host name, when known.
    pub host: Option<String>,
    /// Kernel release, when known.
    pub kernel: Option<String>,
    /// Samples over all streams (`None`: not counted by its source,
    /// [`Run::total_samples`]).
    pub samples: Option<u64>,
    /// Missed periods over all streams (`None`: not counted by its source).
    pub missed_periods: Option<u64>,
    /// Its figures are published ones (a reference run), not measured here.
    pub published: bool,
}

impl RunRef {
    fn of(run: &Run) -> RunRef {
        RunRef {
            id: run.id.clone(),
            name: run_name(run),
            host: run.host.as_ref().map(|h| h.hostname.clone()),
            kernel: run.host.as_ref().map(|h| h.kernel_release.clone()),
            samples: run.total_samples(),
            missed_periods: run.total_missed_periods(),
            published: run.published.is_some(),
        }
    }

    /// [`run_label`] of the run.
    pub fn label(&self) -> String {
        label(self.name.as_deref(), &self.id)
    }
}

/// What the comparison of one figure came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Judged.
    Judged(Change),
    /// The new run has no samples: a failure of the gate, not a pass.
    NoSamples,
    /// A run lacks the figure (see the verdict's reason).
    Unknown,
}

impl Outcome {
    /// The outcome's name in JSON: `regression`, `improvement`, `within-tolerance`,
    /// `no-significant-change`, `undecided`, `no-samples`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Judged(Change::Regression) => "regression",
            Outcome::Judged(Change::Improvement) => "improvement",
            Outcome::Judged(Change::WithinTolerance) => "within-tolerance",
            Outcome::Judged(Change::NoSignificantChange) => "no-significant-change",
            Outcome::Judged(Change::Undecided) => "undecided",
            Outcome::NoSamples => "no-samples",
            Outcome::Unknown => "unknown",
        }
    }

    /// Whether it fails the gate (exit 1).
    pub fn fails(self) -> bool {
        matches!(
            self,
            Outcome::Judged(Change::Regression) | Outcome::NoSamples
        )
    }

    /// Whether nothing could be concluded (exit 2 when nothing failed).
    pub fn undecided(self) -> bool {
        matches!(self, Outcome::Judged(Change::Undecided) | Outcome::Unknown)
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One figure judged, for the whole run or one phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The phase (`None`: every stream of the run merged).
    pub phase: Option<String>,
    /// The figure.
    pub metric: Judged,
    /// The estimates' unit: `ns`, or `fraction` for the missed-period rate.
    pub unit: &'static str,
    /// What it came to.
    pub outcome: Outcome,
    /// The base's estimate, when it has one.
    pub base: Option<Estimate>,
    /// The new run's estimate, when it has one.
    pub new: Option<Estimate>,
    /// New / base − 1, when both are values (not bounds) and the base is not 0.
    pub relative_change: Option<f64>,
    /// Why there is no judgement, when there is none.
    pub reason: Option<String>,
}

impl Verdict {
    fn of(
        phase: Option<&str>,
        metric: Judged,
        result: Result<Comparison, super::NotComparable>,
        new_id: &str,
    ) -> Verdict {
        let unit = match metric {
            Judged::Latency(_) => "ns",
            Judged::MissedRate => "fraction",
            Judged::SpikeRate(_) => "per hour",
        };
        let verdict = |outcome, reason| Verdict {
            phase: phase.map(str::to_string),
            metric,
            unit,
            outcome,
            base: None,
            new: None,
            relative_change: None,
            reason,
        };
        match result {
            Ok(c) => Verdict {
                base: Some(c.base),
                new: Some(c.new),
                relative_change: c.relative_change,
                ..verdict(Outcome::Judged(c.change), None)
            },
            Err(e) if e.reason == Unknown::NoSamples && e.run == new_id => verdict(
                Outcome::NoSamples,
                Some(format!("run {new_id} has no samples to compare")),
            ),
            Err(e) => verdict(Outcome::Unknown, Some(e.to_string())),
        }
    }
}

/// The base against one later run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunComparison {
    /// The later run.
    pub new: RunRef,
    /// How it differs from the base in what it measured (empty: alike).
    pub differences: Vec<Difference>,
    /// Each figure's verdict, phase by phase when both runs have the same phases.
    pub verdicts: Vec<Verdict>,
    /// The loads of both runs side by side.
    pub loads: Vec<LoadComparison>,
}

/// Every later run against the base.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparisons {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// The tolerance the verdicts allowed.
    pub tolerance: Tolerance,
    /// How latencies and the missed-period rate are judged.
    pub method: &'static str,
    /// How the loads are compared.
    pub loads_method: &'static str,
    /// The base run.
    pub base: RunRef,
    /// One per later run, in the order given.
    pub comparisons: Vec<RunComparison>,
    /// Verdicts that fail the gate: regressions, and new runs without samples.
    pub failures: usize,
    /// Verdicts that could not be reached.
    pub undecided: usize,
    /// The runs period by period, when one is published figures (a reference run) and
    /// they share a period; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periods: Option<PeriodTable>,
}

impl Comparisons {
    /// Whether some later run measured something else than the base.
    pub fn unlike(&self) -> bool {
        self.comparisons.iter().any(|c| !c.differences.is_empty())
    }
}

/// The phases judged one by one: those of the base when the new run has the same
/// ones and there are several; else `[None]`, every stream merged.
fn phases(base: &Run, new: &Run) -> Vec<Option<String>> {
    let names = |r: &Run| r.phases.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    let (b, n) = (names(base), names(new));
    if b.len() > 1 && b == n {
        b.into_iter().map(Some).collect()
    } else {
        vec![None]
    }
}

/// Compares every later run of `runs` with the first on `metrics`, allowing
/// `tolerance`; beside published figures, the tick model at `hz` (`None`: the measured
/// runs' kernels' [`by_period`]).
pub fn compare_runs(
    runs: &[Run],
    metrics: &[Judged],
    tolerance: Tolerance,
    hz: Option<u32>,
) -> Result<Comparisons, CompareError> {
    let [base, later @ ..] = runs else {
        return Err(CompareError::TooFewRuns);
    };
    let figures = |run: &Run, phase: Option<&str>| {
        match phase {
            Some(p) => RunFigures::of_phase(run, p),
            None => RunFigures::of(run),
        }
        .map_err(|source| CompareError::Histogram {
            run: run.id.clone(),
            source,
        })
    };
    let mut comparisons = Vec::new();
    for new in later {
        if base.published.is_some() || new.published.is_some() {
            comparisons.push(beside_published(base, new));
            continue;
        }
        let mut verdicts = Vec::new();
        for phase in phases(base, new) {
            let phase = phase.as_deref();
            let (b, n) = (figures(base, phase)?, figures(new, phase)?);
            for metric in metrics.iter().map(|m| m.for_base(base)) {
                let result = compare(&b, &n, metric, tolerance);
                verdicts.push(Verdict::of(phase, metric, result, &new.id));
            }
        }
        comparisons.push(RunComparison {
            new: RunRef::of(new),
            differences: differences(base, new),
            verdicts,
            loads: compare_loads(base, new),
        });
    }
    let outcomes = || {
        comparisons
            .iter()
            .flat_map(|c| &c.verdicts)
            .map(|v| v.outcome)
    };
    Ok(Comparisons {
        schema: SCHEMA,
        tolerance,
        method: METHOD,
        loads_method: LOADS_METHOD,
        base: RunRef::of(base),
        failures: outcomes().filter(|o| o.fails()).count(),
        undecided: outcomes().filter(|o| o.undecided()).count(),
        comparisons,
        periods: by_period(runs, hz).map_err(|source| CompareError::Histogram {
            run: runs
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            source,
        })?,
    })
}

/// A run beside published figures: no verdicts (the figures come from another machine
/// and kernel, and a table has no intervals to judge by), and no difference in the
/// periods or phases, which are matched by period ([`by_period`]).
fn beside_published(base: &Run, new: &Run) -> RunComparison {
    let mut differences = differences(base, new);
    differences.retain(|d| d.what != "period" && d.what != "phases");
    RunComparison {
        new: RunRef::of(new),
        differences,
        verdicts: Vec::new(),
        loads: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Run {
        Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap()
    }

    #[test]
    fn a_run_is_called_by_its_name_then_its_scenario_then_its_id() {
        let mut run = example();
        run.name = None;
        run.scenario = None;
        assert_eq!(run_label(&run), run.id);
        run.scenario = Some("osadl".to_string());
        assert_eq!(run_label(&run), format!("osadl ({})", run.id));
        run.name = Some("baseline".to_string());
        assert_eq!(run_label(&run), format!("baseline ({})", run.id));
    }
}
