//! `latlab show RUN`: a stored run's summary.

use crate::cli::ShowArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_model::run::Run;
use latlab_report::report::render_summary;
use latlab_store::{RunStore, SqliteStore, StoreError};

/// Opens the store at `path` (or the default) and finds `reference` in it.
pub fn find_run(path: Option<&std::path::Path>, reference: &str) -> Result<Run, CliError> {
    let mut runs = find_runs(path, std::slice::from_ref(&reference))?;
    Ok(runs.remove(0))
}

/// Opens the store at `path` (or the default) once and finds every reference in it, in
/// order; a reference it does not hold is a usage error (exit 2).
pub fn find_runs(
    path: Option<&std::path::Path>,
    references: &[impl AsRef<str>],
) -> Result<Vec<Run>, CliError> {
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
    // The summary names the run and says when it ran.
    Human::Stdout.write(&summary_for(&run, Human::Stdout))?;
    Ok(exit::OK)
}

/// The run's summary as `latlab run` and `latlab show` print it to `human`: emphasised
/// when `human` is coloured (`--color`), plain otherwise.
pub fn summary_for(run: &Run, human: Human) -> String {
    render_summary(run, crate::terminal::ansi(human))
}
