//! `latlab check`: the real-time readiness audit, as a table (check, verdict,
//! evidence, fix) or as JSON; exit 1 when any check fails.

use crate::cli::CheckArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::output::OutputTarget;
use latlab_measure::check::{self, CheckContext};
use latlab_measure::cpus::CpuInventory;
use latlab_measure::facts::FactReader;
use latlab_model::spec::{CpuSelection, SchedSpec};
use latlab_report::report::render_audit as render;
use std::path::Path;

/// Runs `latlab check`.
pub fn execute(args: &CheckArgs) -> Result<u8, CliError> {
    if !args.root.is_dir() {
        return Err(CliError::usage(
            "--root",
            format!(
                "{} is not a directory: give the root of a tree holding proc/ and sys/",
                args.root.display()
            ),
        ));
    }
    let files = FactReader::at(&args.root);
    // The CPUs judged are those `latlab run` with the same -c measures: without -c,
    // the isolated ones where the kernel isolates any (see latlab_measure::cpus).
    let inventory = match args.root == Path::new("/") {
        true => CpuInventory::of_this_process(),
        false => CpuInventory::read(&files),
    };
    let selection = args
        .cpus
        .as_deref()
        .map(CpuSelection::parse)
        .transpose()
        .map_err(|e| CliError::usage("--cpus", e))?;
    let cpus = match (selection, inventory.online.is_empty()) {
        // The online CPUs are unknown: take a list as given, judge every CPU else.
        (Some(CpuSelection::List(list)), true) => Some(list),
        (_, true) => None,
        (selection, false) => Some(
            inventory
                .resolve(selection.as_ref())
                .map_err(|e| CliError::usage("--cpus", e))?
                .0,
        ),
    };
    let policy = match args.priority.as_deref() {
        Some(text) => SchedSpec::parse(text).map_err(|e| CliError::usage("--priority", e))?,
        None => SchedSpec::DEFAULT,
    };
    let mut json = args
        .json
        .as_deref()
        .map(|p| OutputTarget::checked("--json", p, None))
        .transpose()?;

    let ctx = CheckContext::new(files, cpus.as_deref(), check::priority_of(&policy));
    let audit = check::audit(&ctx);
    let code = if audit.failed() {
        exit::FAILED
    } else {
        exit::OK
    };
    let text = serde_json::to_string_pretty(&audit)
        .map_err(|e| CliError::runtime(format!("cannot encode the audit: {e}")))?
        + "\n";
    match json.as_mut() {
        Some(OutputTarget::Stdout) => {
            crate::output::ignore_closed(OutputTarget::Stdout.write(text.as_bytes()))?;
        }
        Some(target) => {
            target.write(text.as_bytes())?;
            let path = target.path().map(|p| p.display().to_string());
            let mut out = render(&audit, crate::terminal::width(Human::Stdout));
            if let Some(path) = path {
                out.push_str(&format!("Audit written to {path}\n"));
            }
            crate::output::ignore_closed(Human::Stdout.write(&out))?;
        }
        None => {
            let text = render(&audit, crate::terminal::width(Human::Stdout));
            crate::output::ignore_closed(Human::Stdout.write(&text))?
        }
    }
    Ok(code)
}
