//! `latlab compare BASE NEW...`: the seeds' table shape and a regression verdict.

use crate::cli::CompareArgs;
use crate::cmd::show::find_runs;
use crate::error::{exit, CliError};
use crate::output::Human;
use comfy_table::{presets, Cell, CellAlignment, Table};
use latlab_model::threshold::Metric;
use latlab_model::Nanos;
use latlab_report::compare::{compare, Change, RunFigures, METHOD};
use std::fmt::Write as _;

fn parse_tolerance(text: &str) -> Result<f64, CliError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(v) if (0.0..=10.0).contains(&v) => Ok(v),
        _ => Err(CliError::usage(
            "--tolerance",
            format!("'{text}' is not a tolerance: write e.g. 10% or 0.1"),
        )),
    }
}

fn us(ns: f64) -> String {
    format!("{:.3}", ns / 1e3)
}

/// Compares the runs and prints the table and the verdicts.
pub fn execute(args: &CompareArgs) -> Result<u8, CliError> {
    let tolerance = parse_tolerance(&args.tolerance)?;
    let metrics = if args.metrics.is_empty() {
        vec![Metric::Percentile(99.9)]
    } else {
        args.metrics
            .iter()
            .map(|m| Metric::parse(m).map_err(|e| CliError::usage("--metric", e)))
            .collect::<Result<Vec<_>, _>>()?
    };
    let figures = find_runs(args.store.as_deref(), &args.runs)?
        .iter()
        .zip(&args.runs)
        .map(|(run, r)| RunFigures::of(run).map_err(|e| CliError::runtime(format!("run {r}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;

    let mut table = Table::new();
    table.load_preset(presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "run",
        "host",
        "kernel",
        "samples",
        "missed",
        "min µs",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
    ]);
    for (i, f) in figures.iter().enumerate() {
        let n = |v: Option<Nanos>| v.map_or("-".to_string(), |n| us(n.0 as f64));
        table.add_row(vec![
            Cell::new(format!("{}{}", if i == 0 { "base " } else { "" }, f.id)),
            Cell::new(&f.host),
            Cell::new(&f.kernel),
            Cell::new(f.samples),
            Cell::new(f.missed_periods),
            Cell::new(n(f.min)),
            Cell::new(f.mean.map_or("-".to_string(), us)),
            Cell::new(n(f.percentile(50.0))),
            Cell::new(n(f.percentile(99.0))),
            Cell::new(n(f.percentile(99.9))),
            Cell::new(n(f.max)),
        ]);
    }
    for i in 3..11 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = format!("{table}\n");
    let mut regressions = 0;
    let base = &figures[0];
    for new in &figures[1..] {
        for &metric in &metrics {
            let Some(c) = compare(base, new, metric, tolerance) else {
                let _ = writeln!(out, "{metric}: {} has no samples to compare", new.id);
                continue;
            };
            let interval = |e: &latlab_report::compare::Estimate| match e.interval {
                Some((lo, hi)) => format!("{} µs [{}, {}]", us(e.value), us(lo), us(hi)),
                None => format!("{} µs", us(e.value)),
            };
            let verdict = match c.change {
                Change::Regression => {
                    regressions += 1;
                    format!("REGRESSION (beyond {:.0} %)", tolerance * 100.0)
                }
                Change::Improvement => format!("improvement (beyond {:.0} %)", tolerance * 100.0),
                Change::NoSignificantChange => "no significant change".to_string(),
            };
            let _ = writeln!(
                out,
                "{metric}: base {} vs {} {} ({:+.1} %): {verdict}",
                interval(&c.base),
                new.id,
                interval(&c.new),
                c.relative_change * 100.0
            );
        }
    }
    let _ = writeln!(out, "Method: {METHOD}");
    Human::Stdout.write(&out)?;
    Ok(if regressions > 0 {
        exit::FAILED
    } else {
        exit::OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances() {
        assert_eq!(parse_tolerance("10%").unwrap(), 0.1);
        assert_eq!(parse_tolerance("0.25").unwrap(), 0.25);
        assert!(parse_tolerance("ten").is_err());
        assert!(parse_tolerance("-5%").is_err());
    }
}
