//! `latlab export RUN --format F`: a stored run in the formats other tools read.

use crate::cli::ExportArgs;
use crate::cmd::show::find_run;
use crate::error::{exit, CliError};
use crate::output::{refuse_store_path, say_removed, sweep_beside, Human, OutputTarget};
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
    let store = args
        .store
        .clone()
        .unwrap_or_else(latlab_store::default_path);
    // Checked and opened before anything is read: a bad path fails at once.
    let mut output = match &args.output {
        None => None,
        Some(path) => {
            refuse_store_path("--output", path, &[&store])?;
            say_removed(&sweep_beside(path));
            Some(OutputTarget::open("--output", path)?)
        }
    };
    let run = find_run(Some(&store), &args.run)?;
    let text = format.export(&run).map_err(CliError::runtime)?;
    match output.as_mut() {
        None => Human::Stdout.write(&text)?,
        Some(target) => target.write(text.as_bytes())?,
    }
    Ok(exit::OK)
}
