//! `latlab show RUN`: a stored run's summary.

use crate::cli::ShowArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::summary;
use latlab_model::text::terminal_safe as safe;
use latlab_store::{RunStore, SqliteStore, StoreError};

/// Opens the store at `path` (or the default) and finds `reference` in it.
pub fn find_run(
    path: Option<&std::path::Path>,
    reference: &str,
) -> Result<latlab_model::run::Run, CliError> {
    let mut runs = find_runs(path, std::slice::from_ref(&reference))?;
    Ok(runs.remove(0))
}

/// Opens the store at `path` (or the default) once and finds every reference in it, in
/// order; a reference it does not hold is a usage error (exit 2).
pub fn find_runs(
    path: Option<&std::path::Path>,
    references: &[impl AsRef<str>],
) -> Result<Vec<latlab_model::run::Run>, CliError> {
    let path = path
        .map(|p| p.to_path_buf())
        .unwrap_or_else(latlab_store::default_path);
    let store = SqliteStore::open_read_only(&path)?;
    references
        .iter()
        .map(|reference| {
            store.resolve(reference.as_ref()).map_err(|e| match e {
                StoreError::NotFound { .. } => CliError::usage("RUN", e),
                other => CliError::runtime(other),
            })
        })
        .collect()
}

/// Prints the run's summary, as `latlab run` printed it.
pub fn execute(args: &ShowArgs) -> Result<u8, CliError> {
    let run = find_run(args.store.as_deref(), &args.run)?;
    let started = run.started_at.as_deref().unwrap_or("at an unknown time");
    let (id, started) = (safe(&run.id), safe(started));
    let mut text = format!("Run {id} started {started}\n");
    text.push_str(&summary::render(&run, Human::Stdout.is_terminal()));
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}
