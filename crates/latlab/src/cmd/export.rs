//! `latlab export RUN --format F`: a stored run in the formats other tools read.

use crate::cli::ExportArgs;
use crate::cmd::show::find_run;
use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_model::export::{exporter, exporters};

/// Writes the run in the chosen format to stdout or a file.
pub fn execute(args: &ExportArgs) -> Result<u8, CliError> {
    let format = exporter(&args.format).ok_or_else(|| {
        CliError::usage(
            "--format",
            format!(
                "unknown format '{}': choose {}",
                args.format,
                exporters()
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let run = find_run(args.store.as_deref(), &args.run)?;
    let text = format.export(&run).map_err(CliError::runtime)?;
    match &args.output {
        None => Human::Stdout.write(&text)?,
        Some(path) => std::fs::write(path, text).map_err(|e| {
            CliError::usage("--output", format!("cannot write {}: {e}", path.display()))
        })?,
    }
    Ok(exit::OK)
}
