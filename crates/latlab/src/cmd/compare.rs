//! `latlab compare BASE NEW...`: the seeds' table shape and a regression verdict.

use crate::cli::CompareArgs;
use crate::cmd::show::find_runs;
use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_model::threshold::Metric;
use latlab_report::report::render_comparison;

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
    let runs = find_runs(args.store.as_deref(), &args.runs)?;
    let compared = render_comparison(&runs, &metrics, tolerance).map_err(CliError::runtime)?;
    Human::Stdout.write(&compared.text)?;
    // A regression fails; a verdict that cannot be reached is not a pass either: the
    // metric asked for is not one these runs can be judged on.
    Ok(if compared.regressions > 0 {
        exit::FAILED
    } else if compared.undecided > 0 {
        Human::Stderr.write(&format!(
            "latlab: {} comparison(s) cannot be judged (see above): choose a metric every \
             run has (--metric)\n",
            compared.undecided
        ))?;
        exit::USAGE
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
