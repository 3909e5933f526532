//! `latlab explain RUN`: what got in the way of a stored run's spikes.

use crate::cli::ExplainArgs;
use crate::cmd::show::find_run;
use crate::error::{exit, CliError};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_model::text::terminal_safe;
use latlab_report::report::{explained_spikes, render_explain, render_explain_spike};

/// Prints the catalogue and the largest spikes, or (`--spike N`) one spike event by
/// event; as JSON with `--json`.
pub fn execute(args: &ExplainArgs) -> Result<u8, CliError> {
    if args.top == 0 {
        return Err(CliError::usage(
            "--top",
            "0 spikes would show none: give 1 or more (default 5)",
        ));
    }
    let store = StoreLocation::resolve(args.store.as_ref())?;
    let mut json = args
        .json
        .as_deref()
        .map(|target| OutputTarget::checked("--json", target, store.path()))
        .transpose()?;
    let run = find_run(&store, &args.run)?;
    let Some(explain) = &run.explain else {
        return Err(CliError {
            code: exit::FAILED,
            message: format!(
                "run {} was not measured with --explain, so there is nothing to explain: \
                 measure with `latlab run --explain` (add -d, -c and the load as before)",
                terminal_safe(&run.id)
            ),
        });
    };
    let ansi = crate::terminal::ansi(Human::Stdout);
    let width = crate::terminal::width(Human::Stdout);
    let (text, value) = match args.spike {
        None => (
            render_explain(&run, args.top, ansi, width).unwrap_or_default(),
            serde_json::to_string_pretty(explain),
        ),
        Some(rank) => {
            let spikes = explained_spikes(explain);
            let Some(spike) = rank.checked_sub(1).and_then(|i| spikes.get(i)) else {
                let range = match spikes.len() {
                    0 => "this run kept no spike in full".to_string(),
                    1 => "this run kept 1 spike in full: give --spike 1".to_string(),
                    n => format!("this run kept {n} spikes in full: give 1 to {n}"),
                };
                return Err(CliError::usage(
                    "--spike",
                    format!("there is no spike {rank}: {range}"),
                ));
            };
            (
                render_explain_spike(explain, rank, ansi, width).unwrap_or_default(),
                serde_json::to_string_pretty(spike),
            )
        }
    };
    match json.as_mut() {
        None => Human::Stdout.write(&text)?,
        Some(target) => {
            let value = value.map_err(CliError::runtime)?;
            let written = target.write(format!("{value}\n").as_bytes());
            match target {
                OutputTarget::Stdout => output::ignore_closed(written)?,
                _ => written?,
            }
        }
    }
    Ok(exit::OK)
}
