//! `latlab export RUN --format F`: a stored run in the formats other tools read.

use crate::cli::ExportArgs;
use crate::cmd::show::find_run;
use crate::error::{exit, CliError};
use crate::output::{Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_formats::export::{exporter, exporters, narrow};

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
    // Only a format that holds one phase of one probe has one to choose.
    let choices = [("--phase", &args.phase), ("--probe", &args.probe)];
    if let Some((flag, _)) = choices.iter().find(|c| c.1.is_some()) {
        if !format.holds_one_series() {
            return Err(CliError::usage(
                flag,
                format!(
                    "{} holds every phase and probe, each stream named by them; {flag} \
                     chooses one for cyclictest and cyclictest-json",
                    format.name()
                ),
            ));
        }
    }
    let store = StoreLocation::resolve(args.store.as_ref())?;
    // Checked and opened before anything is read: a bad path fails at once.
    let mut output = match &args.output {
        None => None,
        Some(path) => Some(OutputTarget::checked("--output", path, store.path())?),
    };
    let run = find_run(&store, &args.run)?;
    let run = match format.holds_one_series() {
        true => {
            narrow(&run, args.phase.as_deref(), args.probe.as_deref()).map_err(CliError::config)?
        }
        false => run,
    };
    // A Run the format cannot hold (several phases, a primitive probe, no histogram) is
    // refused as the wrong choice of format or phase: exit 2, the message says which.
    let text = format.export(&run).map_err(CliError::config)?;
    match output.as_mut() {
        None => Human::Stdout.write(&text)?,
        Some(target) => target.write(text.as_bytes())?,
    }
    Ok(exit::OK)
}
