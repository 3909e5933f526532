//! `latlab show RUN`: a stored run's summary.

use crate::cli::ShowArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::summary;
use latlab_store::{RunStore, SqliteStore, StoreError};

/// Opens the store at `path` (or the default) and finds `reference` in it.
pub fn find_run(
    path: Option<&std::path::Path>,
    reference: &str,
) -> Result<latlab_model::run::Run, CliError> {
    let path = path
        .map(|p| p.to_path_buf())
        .unwrap_or_else(latlab_store::default_path);
    let store = SqliteStore::open(&path)?;
    store.resolve(reference).map_err(|e| match e {
        StoreError::NotFound { .. } => CliError::usage("RUN", e),
        other => CliError::runtime(other),
    })
}

/// Prints the run's summary, as `latlab run` printed it.
pub fn execute(args: &ShowArgs) -> Result<u8, CliError> {
    let run = find_run(args.store.as_deref(), &args.run)?;
    let started = if run.is_unknown("started_at") {
        "at an unknown time"
    } else {
        &run.started_at
    };
    let mut text = format!("Run {} started {started}\n", run.id);
    text.push_str(&summary::render(&run, Human::Stdout.is_terminal()));
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}
