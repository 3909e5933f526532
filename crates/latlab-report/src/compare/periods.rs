//! Runs side by side period by period, as Rapid Reaction Linux's Tables 3 and 4 sweep
//! periods: each run's phases matched by their period (a period-sweep run's `3.25ms`
//! phase and a published table's `3.250 ms` row), with the tick model beside them:
//! how late Linux 2.4's jiffies `nanosleep` wakes at each period (the papers' kernel,
//! not this one).

use super::{run_label, run_name, RunFigures};
use latlab_model::hist::HistogramError;
use latlab_model::published::tick::tick_delay;
use latlab_model::run::Run;
use latlab_model::Nanos;
use serde::Serialize;
use std::collections::BTreeSet;

/// Every run's figures at every period some run measured in a phase of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodTable {
    /// The runs, in the order given: their ids.
    pub runs: Vec<String>,
    /// Their names ([`run_name`]), where they have one.
    pub names: Vec<Option<String>>,
    /// Which runs are published figures, not measured here (same order).
    pub published: Vec<bool>,
    /// The tick rate the tick model is computed for, and where it came from; `None`
    /// when not known (no measured run read its kernel's `CONFIG_HZ`).
    pub tick_model: Option<TickModel>,
    /// One row per period and phase, shortest period first: where a run has several
    /// phases at one period, as many rows there as the run with the most, the k-th row
    /// holding each run's k-th phase at that period (in phase order).
    pub rows: Vec<PeriodRow>,
}

/// The tick rate of the tick model (Linux 2.4's jiffies `nanosleep`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TickModel {
    /// `CONFIG_HZ`.
    pub hz: u32,
    /// Where it came from: `given` (`--hz`) or the run whose kernel configuration said.
    pub from: String,
}

/// One period and phase: each run's figures there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodRow {
    /// The period.
    pub period_ns: Nanos,
    /// Per run, in order: its phase in this row (`None`: it has no phase at this period,
    /// or fewer than this row's).
    pub runs: Vec<Option<PhaseFigures>>,
    /// The tick model's delay of a relative sleep at this period: Linux 2.4's jiffies
    /// `nanosleep` at the model's HZ, not an expectation for the measured kernel
    /// (`None`: the tick rate is not known). Its JSON name is the one the comparison
    /// schema was published with.
    pub expected_without_hrtimers_ns: Option<Nanos>,
}

/// A run's figures in the phase at one period; `None` where the run lacks a figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// The phase (or published row).
    pub phase: String,
    /// Samples (`None`: the source did not count them).
    pub samples: Option<u64>,
    /// Smallest sample.
    pub min_ns: Option<Nanos>,
    /// Mean.
    pub mean_ns: Option<f64>,
    /// Largest sample.
    pub max_ns: Option<Nanos>,
}

/// The period of each phase that measured at one period only, in phase order; a
/// published run's from its rows as printed (a row without a sample count is no
/// stream, but its period and figures are the paper's all the same).
fn phase_periods(run: &Run) -> Vec<(String, Nanos)> {
    if let Some(published) = &run.published {
        return published
            .rows
            .iter()
            .filter_map(|row| {
                let period = published.figures(row).ok()?.period?;
                Some((row.label.clone(), period))
            })
            .collect();
    }
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

/// A run's figures in its phase `name`; a published run's are its row's as printed.
fn phase_figures(run: &Run, name: &str) -> Result<PhaseFigures, HistogramError> {
    let row = run
        .published
        .as_ref()
        .and_then(|p| Some((p, p.rows.iter().find(|r| r.label == name)?)));
    if let Some((published, row)) = row {
        // The rows were read when the run was made: a row that does not read has none.
        let f = published.figures(row).unwrap_or_default();
        return Ok(PhaseFigures {
            phase: name.to_string(),
            samples: row.samples,
            min_ns: f.min,
            mean_ns: f.mean,
            max_ns: f.max,
        });
    }
    let f = RunFigures::of_phase(run, name)?;
    Ok(PhaseFigures {
        phase: name.to_string(),
        samples: f.samples,
        min_ns: f.min,
        mean_ns: f.mean,
        max_ns: f.max,
    })
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
        // Each run's phases at this period, in phase order: a table of six rows at one
        // period (Rapid Reaction Linux's Table 1) is six rows here too.
        let at: Vec<Vec<&str>> = periods
            .iter()
            .map(|phases| {
                phases
                    .iter()
                    .filter(|(_, p)| *p == period)
                    .map(|(name, _)| name.as_str())
                    .collect()
            })
            .collect();
        let depth = at.iter().map(Vec::len).max().unwrap_or(0);
        for k in 0..depth {
            let mut figures = Vec::with_capacity(runs.len());
            for (run, names) in runs.iter().zip(&at) {
                figures.push(match names.get(k) {
                    Some(name) => Some(phase_figures(run, name)?),
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
    }
    Ok(Some(PeriodTable {
        runs: runs.iter().map(|r| r.id.clone()).collect(),
        names: runs.iter().map(run_name).collect(),
        published: runs.iter().map(|r| r.published.is_some()).collect(),
        tick_model,
        rows,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use latlab_model::published::reference_run;

    /// `docs/example-run.json` as a two-phase sweep at 3.25 and 4 ms, relative sleeps.
    pub(crate) fn sweep() -> Run {
        phases_at(&[("3.25ms", 3_250_000), ("4ms", 4_000_000)])
    }

    /// `docs/example-run.json` with one phase of one stream per `(name, period)`, each
    /// phase's minimum, mean and maximum a millisecond above the one before, so that
    /// phases taken for each other show.
    pub(crate) fn phases_at(phases: &[(&str, i64)]) -> Run {
        let mut run = Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap();
        let (phase, stream) = (run.phases[0].clone(), run.streams[0].clone());
        run.phases.clear();
        run.streams.clear();
        for (k, &(name, period)) in phases.iter().enumerate() {
            let shift = k as i64 * 1_000_000;
            let mut stats = stream.stats.clone();
            stats.min_ns = stats.min_ns.map(|m| Nanos(m.0 + shift));
            stats.mean_ns = stats.mean_ns.map(|m| m + shift as f64);
            stats.max_ns = stats.max_ns.map(|m| Nanos(m.0 + shift));
            run.phases.push(Phase {
                name: name.to_string(),
                ..phase.clone()
            });
            run.streams.push(Stream {
                phase: name.to_string(),
                period_ns: Some(Nanos(period)),
                method: Some("rel".to_string()),
                stats,
                ..stream.clone()
            });
        }
        run
    }

    use latlab_model::run::{Phase, Stream};

    #[test]
    fn phases_are_matched_by_period_and_a_missing_one_is_none() {
        let runs = [sweep(), reference_run("rr-table3").unwrap()];
        let table = by_period(&runs, None).unwrap().unwrap();
        assert_eq!(table.published, [false, true]);
        assert_eq!(table.rows.len(), 8);
        let at = |ns| {
            table
                .rows
                .iter()
                .find(|r| r.period_ns == Nanos(ns))
                .unwrap()
        };
        let row = at(3_250_000);
        let (measured, published) = (row.runs[0].as_ref().unwrap(), row.runs[1].as_ref().unwrap());
        assert_eq!(measured.phase, "3.25ms");
        assert_eq!(measured.min_ns, runs[0].streams[0].stats.min_ns);
        assert_eq!(published.phase, "3.250 ms");
        assert_eq!(
            (published.min_ns, published.mean_ns, published.max_ns),
            (Some(Nanos(18_000)), Some(20_000.0), Some(Nanos(110_000)))
        );
        assert_eq!(at(50_000_000).runs[0], None);
        // Each phase its own figures, not another phase's.
        let four = at(4_000_000).runs[0].as_ref().unwrap();
        assert_eq!(four.phase, "4ms");
        assert_eq!(four.min_ns, runs[0].streams[1].stats.min_ns);
        assert_ne!(four.min_ns, measured.min_ns);
        // The example run's kernel said HZ=250.
        assert_eq!(table.tick_model.as_ref().map(|t| t.hz), Some(250));
        assert_eq!(row.expected_without_hrtimers_ns, Some(Nanos(4_750_000)));
        let given = by_period(&runs, Some(100)).unwrap().unwrap();
        assert_eq!(given.tick_model.unwrap().from, "given");
        assert_eq!(
            given.rows[1].expected_without_hrtimers_ns,
            Some(Nanos(16_750_000))
        );
    }

    /// Rapid Reaction Linux's Table 1 has six rows, all at 50 ms; a run with two phases
    /// at 50 ms beside it.
    #[test]
    fn every_phase_at_a_shared_period_has_a_row_of_its_own() {
        let two = phases_at(&[("idle", 50_000_000), ("disk", 50_000_000)]);
        let table1 = reference_run("rr-table1").unwrap();
        let runs = [two, table1];
        let table = by_period(&runs, None).unwrap().unwrap();
        assert_eq!(table.rows.len(), 6, "one row per row of Table 1");
        assert!(table.rows.iter().all(|r| r.period_ns == Nanos(50_000_000)));
        let published: Vec<&str> = table
            .rows
            .iter()
            .map(|r| r.runs[1].as_ref().unwrap().phase.as_str())
            .collect();
        let rows = &runs[1].published.as_ref().unwrap().rows;
        let printed: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(published, printed);
        // Each published row's own figures: row B's minimum is its -9.8 ms.
        assert_eq!(
            table.rows[1].runs[1].as_ref().unwrap().min_ns,
            Some(Nanos(-9_800_000))
        );
        // The run's two phases in the first two rows, each with its own figures.
        for (k, stream) in runs[0].streams.iter().enumerate() {
            let mine = table.rows[k].runs[0].as_ref().unwrap();
            assert_eq!(mine.phase, stream.phase);
            assert_eq!(
                (mine.min_ns, mine.max_ns),
                (stream.stats.min_ns, stream.stats.max_ns)
            );
        }
        assert!(table.rows[2..].iter().all(|r| r.runs[0].is_none()));
    }

    #[test]
    fn without_published_figures_there_is_no_period_table() {
        assert_eq!(by_period(&[sweep(), sweep()], None).unwrap(), None);
        let other = reference_run("realfeel-table1").unwrap();
        assert_eq!(by_period(&[sweep(), other], None).unwrap(), None);
    }
}
