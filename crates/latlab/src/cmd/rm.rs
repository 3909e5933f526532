//! `latlab rm RUN...` and `latlab prune --older-than AGE`: runs out of the store, after
//! a confirmation on a terminal, or with `--yes`; what was removed is printed.

use crate::cli::{PruneArgs, RmArgs};
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::store::StoreLocation;
use latlab_model::stamp::parse_time_bound;
use latlab_model::text::{counted, terminal_safe as safe};
use latlab_store::{resolve_reference, RunFilter, RunSummary, StoreError};
use std::io::{BufRead, IsTerminal};
use std::time::SystemTime;

/// Removes the runs named.
pub fn execute(args: &RmArgs) -> Result<u8, CliError> {
    let location = StoreLocation::resolve(args.store.as_ref())?;
    let store = crate::store::open_read_only(&location)?;
    let all = store.summaries().map_err(CliError::runtime)?;
    // Every reference is resolved before anything is removed: `last last~1` are the
    // two runs that were last when the command was given.
    let mut chosen: Vec<RunSummary> = Vec::new();
    for reference in &args.runs {
        let id = resolve_reference(reference, &all).map_err(|e| match e {
            StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => CliError::usage("RUN", e),
            other => CliError::runtime(other),
        })?;
        if !chosen.iter().any(|r| r.id == id) {
            chosen.extend(all.iter().find(|r| r.id == id).cloned());
        }
    }
    drop(store);
    remove(&location, &chosen, args.yes)
}

/// Removes the runs added before the time given.
pub fn prune(args: &PruneArgs) -> Result<u8, CliError> {
    let before = parse_time_bound(&args.older_than, SystemTime::now())
        .map_err(|e| CliError::usage("--older-than", e))?;
    let location = StoreLocation::resolve(args.store.as_ref())?;
    let filter = RunFilter {
        added_before: Some(before),
        ..RunFilter::default()
    };
    let chosen = crate::store::open_read_only(&location)?
        .list(&filter, None)
        .map_err(CliError::runtime)?;
    if chosen.is_empty() {
        Human::Stdout.write(&format!(
            "no run in {} was added before {}: nothing removed\n",
            location,
            latlab_model::stamp::rfc3339(before)
        ))?;
        return Ok(exit::OK);
    }
    remove(&location, &chosen, args.yes)
}

/// One run as the confirmation and the report name it.
fn describe(run: &RunSummary) -> String {
    let mut text = safe(&run.id).into_owned();
    if let Some(name) = &run.name {
        text.push_str(&format!(" ({})", safe(name)));
    }
    let when = match (&run.started_at, &run.added_at) {
        (Some(started), _) => format!("started {}", safe(started)),
        (None, Some(added)) => format!("added {}", safe(added)),
        (None, None) => "time unknown".to_string(),
    };
    let host = run.host.as_deref().map_or("?".into(), safe);
    format!("{text} · {when} · host {host}")
}

/// Asks on the terminal, or requires `--yes`, then removes `runs` and says which.
fn remove(location: &StoreLocation, runs: &[RunSummary], yes: bool) -> Result<u8, CliError> {
    let listing: String = runs
        .iter()
        .map(|r| format!("  {}\n", describe(r)))
        .collect();
    let what = counted(runs.len() as u64, "run");
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::usage(
                "--yes",
                format!(
                    "this would remove {what} from {}:\n{listing}standard input is not a \
                     terminal to confirm on: give --yes to remove them",
                    location
                ),
            ));
        }
        Human::Stderr.write(&format!(
            "Remove {what} from {}?\n{listing}[y/N] ",
            location
        ))?;
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(|e| CliError::runtime(format!("cannot read the answer: {e}")))?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            Human::Stdout.write("nothing removed\n")?;
            return Ok(exit::OK);
        }
    }
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let removed = crate::store::open_writable(location)?.remove(&ids)?;
    let mut text = String::new();
    for run in runs {
        text.push_str(&format!("removed {}\n", describe(run)));
    }
    if removed < runs.len() {
        text.push_str(&format!(
            "of these, {} gone already (removed by another latlab meanwhile)\n",
            counted((runs.len() - removed) as u64, "run")
        ));
    }
    text.push_str(&format!(
        "{} removed from {}\n",
        counted(removed as u64, "run"),
        location
    ));
    crate::output::ignore_closed(Human::Stdout.write(&text))?;
    Ok(exit::OK)
}
