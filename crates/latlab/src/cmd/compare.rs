//! `latlab compare BASE NEW...`: the seeds' table shape, a regression verdict per
//! figure, the loads side by side, and an exit status a CI job can gate on.

use crate::cli::CompareArgs;
use crate::cmd::show::find_runs;
use crate::error::{exit, CliError};
use crate::output::{ignore_closed, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_report::compare::{compare_runs, Comparisons, Judged, Tolerance};
use latlab_report::report::render_comparison;

/// Compares the runs and prints the table and the verdicts.
pub fn execute(args: &CompareArgs) -> Result<u8, CliError> {
    let tolerance: Tolerance = args
        .tolerance
        .parse()
        .map_err(|e| CliError::usage("--tolerance", e))?;
    let metrics = if args.metrics.is_empty() {
        vec![Judged::DEFAULT]
    } else {
        args.metrics
            .iter()
            .map(|m| Judged::parse(m).map_err(|e| CliError::usage("--metric", e)))
            .collect::<Result<Vec<_>, _>>()?
    };
    let store = StoreLocation::resolve(args.store.as_ref())?;
    let mut json = args
        .json
        .as_deref()
        .map(|p| OutputTarget::checked("--json", p, store.path()))
        .transpose()?;
    let runs = find_runs(&store, &args.runs)?;
    let compared = compare_runs(&runs, &metrics, tolerance, args.hz).map_err(CliError::runtime)?;
    if compared.unlike() && !args.force {
        return Err(unlike(&compared));
    }
    let width = crate::terminal::width(Human::Stdout);
    let table = || render_comparison(&runs, &compared, width).map_err(CliError::runtime);
    match json.as_mut() {
        Some(target) => {
            let text = serde_json::to_string_pretty(&compared)
                .map_err(|e| CliError::runtime(format!("cannot encode the comparison: {e}")))?
                + "\n";
            if let OutputTarget::Stdout = target {
                ignore_closed(target.write(text.as_bytes()))?;
            } else {
                target.write(text.as_bytes())?;
                let mut out = table()?;
                if let Some(path) = target.path() {
                    out.push_str(&format!("\nComparison written to {}\n", path.display()));
                }
                ignore_closed(Human::Stdout.write(&out))?;
            }
        }
        None => ignore_closed(Human::Stdout.write(&table()?))?,
    }
    // A regression, or a new run without samples, fails; a verdict that cannot be
    // reached is not a pass either: the figure asked for is not one these runs have.
    Ok(if compared.failures > 0 {
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

/// The refusal of runs that measured different things, naming each difference.
fn unlike(compared: &Comparisons) -> CliError {
    let runs: Vec<String> = compared
        .comparisons
        .iter()
        .filter(|c| !c.differences.is_empty())
        .map(|c| {
            let differences: Vec<String> = c.differences.iter().map(|d| d.to_string()).collect();
            format!("{} differs in {}", c.new.label(), differences.join("; "))
        })
        .collect();
    CliError::config(format!(
        "the runs measured different things, so their latencies do not tell what a change \
         did: against the base {}, {}. Compare runs made alike, or give --force to compare \
         them anyway",
        compared.base.label(),
        runs.join(", ")
    ))
}
