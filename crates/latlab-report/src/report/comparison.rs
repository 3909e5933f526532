//! Runs side by side: the seeds' table (one row per run) and each later run's verdict
//! against the first, per metric. The report of several runs and `latlab compare`
//! both show these very blocks.

use super::document::{Block, Table};
use super::figures;
use crate::compare::{compare, Change, Estimate, RunFigures, METHOD};
use latlab_model::run::Run;
use latlab_model::threshold::Metric;

/// The comparison's blocks and what its verdicts came to.
pub(crate) struct Compared {
    /// The table, one line per verdict, and the method.
    pub blocks: Vec<Block>,
    /// Verdicts of significant regression.
    pub regressions: usize,
    /// Comparisons that could not be judged: a figure a run lacks, or a bound that may
    /// lie either side.
    pub undecided: usize,
}

/// The table and the verdicts of `metrics` (each later run against the first) with a
/// relative `tolerance`.
pub(crate) fn blocks(
    runs: &[Run],
    merged: &[RunFigures],
    metrics: &[Metric],
    tolerance: f64,
) -> Compared {
    let (lines, regressions, undecided) = verdicts(merged, metrics, tolerance);
    Compared {
        blocks: vec![
            Block::Table(table(runs, merged)),
            Block::List(lines),
            Block::Paragraph(format!("Method: {METHOD}")),
        ],
        regressions,
        undecided,
    }
}

/// The seeds' table: one row per run.
fn table(runs: &[Run], merged: &[RunFigures]) -> Table {
    let mut table = Table::new(&[
        ("run", false),
        ("host", false),
        ("scenario", false),
        ("kernel", false),
        ("verdict", false),
        ("samples", true),
        ("missed periods", true),
        ("min (µs)", true),
        ("mean (µs)", true),
        ("p50 (µs)", true),
        ("p99 (µs)", true),
        ("p99.9 (µs)", true),
        ("max (µs)", true),
    ]);
    for (colour, (run, f)) in runs.iter().zip(merged).enumerate() {
        let status = run.verdict.status.word();
        let verdict = if run.degraded {
            format!("{status} · DEGRADED")
        } else {
            status.to_string()
        };
        let stat = |value: String, known: bool| figures::stat(f.samples, value, known);
        let percentile = |p: f64| {
            let value = f.percentile(p);
            stat(figures::us_percentile(value), value.is_some())
        };
        table.push(
            vec![
                run.id.clone(),
                figures::fact(f.host.clone(), |h| h),
                run.scenario
                    .clone()
                    .unwrap_or_else(|| figures::MISSING.to_string()),
                figures::fact(f.kernel.clone(), |k| k),
                verdict,
                f.samples.to_string(),
                figures::cell(f.missed_periods, |m| m.to_string()),
                stat(figures::us(f.min), f.min.is_some()),
                stat(figures::us_f64(f.mean), f.mean.is_some()),
                percentile(50.0),
                percentile(99.0),
                percentile(99.9),
                stat(figures::us(f.max), f.max.is_some()),
            ],
            Some(colour),
        );
    }
    table
}

/// An estimate for a verdict line: `12.345 µs [11.0, 13.1]`, `≥ 400.000 µs`.
fn estimate(e: &Estimate) -> String {
    let value = format!("{:.3} µs", e.value / 1e3);
    if e.bound {
        return format!("≥ {value}");
    }
    match e.interval {
        Some((low, high)) if high.is_finite() => {
            format!("{value} [{:.3}, {:.3}]", low / 1e3, high / 1e3)
        }
        Some((low, _)) => format!("{value} [{:.3}, unbounded]", low / 1e3),
        None => value,
    }
}

/// One line per later run and metric, and the counts of regressions and of
/// comparisons that could not be judged.
fn verdicts(
    merged: &[RunFigures],
    metrics: &[Metric],
    tolerance: f64,
) -> (Vec<String>, usize, usize) {
    let Some((base, later)) = merged.split_first() else {
        return (Vec::new(), 0, 0);
    };
    let beyond = format!("beyond {:.0} %", tolerance * 100.0);
    let (mut lines, mut regressions, mut undecided) = (Vec::new(), 0, 0);
    for new in later {
        for &metric in metrics {
            let c = match compare(base, new, metric, tolerance) {
                Ok(c) => c,
                Err(why) => {
                    undecided += 1;
                    lines.push(format!("{metric}: CANNOT BE JUDGED: {why}"));
                    continue;
                }
            };
            let verdict = match c.change {
                Change::Regression => {
                    regressions += 1;
                    format!("REGRESSION ({beyond})")
                }
                Change::Improvement => format!("improvement ({beyond})"),
                Change::NoSignificantChange => "no significant change".to_string(),
                Change::Undecided => {
                    undecided += 1;
                    "CANNOT BE JUDGED: a value known only as a lower bound (≥) may lie either \
                     side of the other"
                        .to_string()
                }
            };
            let relative = c
                .relative_change
                .map_or_else(String::new, |r| format!(" ({:+.1} %)", r * 100.0));
            let unmeasured = if metric == Metric::Mean
                && !c.base.bound
                && (c.base.interval.is_none() || c.new.interval.is_none())
            {
                " (no interval: a standard deviation is unknown, the means are compared as \
                 they are)"
            } else {
                ""
            };
            lines.push(format!(
                "{metric}: base {} {} vs {} {}{relative}: {verdict}{unmeasured}",
                base.id,
                estimate(&c.base),
                new.id,
                estimate(&c.new),
            ));
        }
    }
    (lines, regressions, undecided)
}
