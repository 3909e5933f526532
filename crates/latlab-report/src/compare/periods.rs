//! Runs side by side period by period, as Rapid Reaction Linux's Tables 3 and 4 sweep
//! periods: each run's phases matched by their period (a period-sweep run's `3.25ms`
//! phase and a published table's `3.250 ms` row), with the tick model's expectation
//! for a kernel without high-resolution timers beside them.

use super::{run_label, RunFigures};
use latlab_model::hist::HistogramError;
use latlab_model::published::tick::tick_delay;
use latlab_model::run::Run;
use latlab_model::Nanos;
use serde::Serialize;
use std::collections::BTreeSet;

/// Every run's figures at every period some run measured in a phase of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodTable {
    /// The runs, in the order given: their labels.
    pub runs: Vec<String>,
    /// Which runs are published figures, not measured here (same order).
    pub published: Vec<bool>,
    /// The tick rate the expectation is computed for, and where it came from; `None`
    /// when not known (no measured run read its kernel's `CONFIG_HZ`).
    pub tick_model: Option<TickModel>,
    /// One row per period, shortest first.
    pub rows: Vec<PeriodRow>,
}

/// The tick rate of the expectation without high-resolution timers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TickModel {
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// Where it came from: `given` (`--hz`) or the run whose kernel configuration said.
    pub from: String,
}

/// One period: each run's figures there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodRow {
    /// The period.
    pub period_ns: Nanos,
    /// Per run, in order: its phase at this period (`None`: it has none).
    pub runs: Vec<Option<PhaseFigures>>,
    /// The tick model's delay of a relative sleep at this period (`None`: the tick rate
    /// is not known).
    pub expected_without_hrtimers_ns: Option<Nanos>,
}

/// A run's figures in the phase at one period; `None` where the run lacks a figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// The phase (or published row).
    pub phase: String,
    /// Samples.
    pub samples: u64,
    /// Smallest sample.
    pub min_ns: Option<Nanos>,
    /// Mean.
    pub mean_ns: Option<f64>,
    /// Largest sample.
    pub max_ns: Option<Nanos>,
}

/// The period of each phase that measured at one period only, in phase order.
fn phase_periods(run: &Run) -> Vec<(String, Nanos)> {
    run.phases
        .iter()
        .filter_map(|phase| {
            let periods: BTreeSet<Nanos> = run
                .streams
                .iter()
                .filter(|s| s.phase == phase.name)
                .filter_map(|s| s.period_ns)
                .collect();
            match periods.into_iter().collect::<Vec<_>>().as_slice() {
                [one] => Some((phase.name.clone(), *one)),
                _ => None,
            }
        })
        .collect()
}

/// The runs side by side by period, when one of them is published figures and a
/// period is shared by two runs; `hz` overrides the tick rate the measured runs' kernels
/// gave.
pub fn by_period(runs: &[Run], hz: Option<u32>) -> Result<Option<PeriodTable>, HistogramError> {
    let periods: Vec<Vec<(String, Nanos)>> = runs.iter().map(phase_periods).collect();
    let all: BTreeSet<Nanos> = periods.iter().flatten().map(|(_, p)| *p).collect();
    let shared = all.iter().any(|p| {
        periods
            .iter()
            .filter(|r| r.iter().any(|(_, q)| q == p))
            .count()
            > 1
    });
    if !shared || !runs.iter().any(|r| r.published.is_some()) {
        return Ok(None);
    }
    let tick_model = match hz {
        Some(hz) => Some(TickModel {
            hz,
            from: "given".to_string(),
        }),
        None => runs
            .iter()
            .filter(|r| r.published.is_none())
            .find_map(|r| Some((r.host.as_ref()?.hz?, r)))
            .map(|(hz, run)| TickModel {
                hz,
                from: format!("the kernel configuration of {}", run_label(run)),
            }),
    };
    let mut rows = Vec::with_capacity(all.len());
    for period in all {
        let mut figures = Vec::with_capacity(runs.len());
        for (run, phases) in runs.iter().zip(&periods) {
            let phase = phases.iter().find(|(_, p)| *p == period);
            figures.push(match phase {
                Some((name, _)) => {
                    let f = RunFigures::of_phase(run, name)?;
                    Some(PhaseFigures {
                        phase: name.clone(),
                        samples: f.samples,
                        min_ns: f.min,
                        mean_ns: f.mean,
                        max_ns: f.max,
                    })
                }
                None => None,
            });
        }
        rows.push(PeriodRow {
            period_ns: period,
            runs: figures,
            expected_without_hrtimers_ns: tick_model
                .as_ref()
                .and_then(|t| tick_delay(period, t.hz)),
        });
    }
    Ok(Some(PeriodTable {
        runs: runs.iter().map(run_label).collect(),
        published: runs.iter().map(|r| r.published.is_some()).collect(),
        tick_model,
        rows,
    }))
}
