//! `latlab show RUN`: a stored run's summary.

use crate::cli::ShowArgs;
use crate::error::{exit, CliError};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_model::published::{self, PublishedError};
use latlab_model::run::Run;
use latlab_model::text::{terminal_safe as safe, terminal_safe_lines};
use latlab_report::report::render_summary;
use latlab_store::StoreError;

/// Opens the store at `location` and finds `reference` in it.
pub fn find_run(location: &StoreLocation, reference: &str) -> Result<Run, CliError> {
    let mut runs = find_runs(location, std::slice::from_ref(&reference))?;
    Ok(runs.remove(0))
}

/// Finds every reference, in order: a published reference (`ref:NAME`) among those
/// latlab ships, any other in the store at `location`, opened once and only when one is
/// needed; a reference neither holds is a usage error (exit 2).
pub fn find_runs(
    location: &StoreLocation,
    references: &[impl AsRef<str>],
) -> Result<Vec<Run>, CliError> {
    let mut store = None;
    let mut runs = Vec::with_capacity(references.len());
    for reference in references.iter().map(AsRef::as_ref) {
        if let Some(name) = published::reference_name(reference) {
            runs.push(published::reference_run(name).map_err(|e| match e {
                PublishedError::Unknown { .. } => CliError::usage("RUN", e),
                PublishedError::Table(_) => CliError::runtime(e),
            })?);
            continue;
        }
        let store = match &mut store {
            Some(store) => store,
            None => store.insert(crate::store::open_read_only(location)?),
        };
        runs.push(store.resolve(reference).map_err(|e| match e {
            StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => CliError::usage("RUN", e),
            other => CliError::runtime(other),
        })?);
    }
    Ok(runs)
}

/// Prints the run's summary, as `latlab run` printed it, or (`--json`) the Run.
pub fn execute(args: &ShowArgs) -> Result<u8, CliError> {
    let store = StoreLocation::resolve(args.store.as_ref())?;
    let mut json = args
        .json
        .as_deref()
        .map(|target| OutputTarget::checked("--json", target, store.path()))
        .transpose()?;
    let run = find_run(&store, &args.run)?;
    let text = format!("{}\n", run.to_json_pretty());
    match json.as_mut() {
        // The Run instead of the summary, as `latlab check --json` gives the audit.
        Some(OutputTarget::Stdout) => {
            output::ignore_closed(OutputTarget::Stdout.write(text.as_bytes()))
        }
        Some(target) => {
            target.write(text.as_bytes())?;
            let written = target
                .path()
                .map(|p| format!("Run written to {}\n", p.display()))
                .unwrap_or_default();
            let summary = summary_for(&run, Human::Stdout);
            output::ignore_closed(Human::Stdout.write(&format!("{summary}{written}")))
        }
        // The summary names the run and says when it ran.
        None => Human::Stdout.write(&summary_for(&run, Human::Stdout)),
    }?;
    Ok(exit::OK)
}

/// The run's summary as `latlab run` and `latlab show` print it to `human`: emphasised
/// when `human` is coloured (`--color`), plain otherwise, and as wide as `human` may be;
/// then the user's labels, if any.
pub fn summary_for(run: &Run, human: Human) -> String {
    let width = crate::terminal::width(human);
    let mut text = render_summary(run, crate::terminal::ansi(human), width);
    text.push_str(&width.fold(&labels_of(run)));
    text
}

/// The user's name, tags and note, one line each; nothing when there are none. They
/// come from a Run file: none reaches the terminal raw.
fn labels_of(run: &Run) -> String {
    let mut text = String::new();
    if let Some(name) = &run.name {
        text.push_str(&format!("Name: {}\n", safe(name)));
    }
    if !run.tags.is_empty() {
        let tags: Vec<String> = run
            .tags
            .iter()
            .map(|(k, v)| format!("{}={}", safe(k), safe(v)))
            .collect();
        text.push_str(&format!("Tags: {}\n", tags.join(", ")));
    }
    if let Some(note) = &run.note {
        text.push_str(&format!("Note: {}\n", terminal_safe_lines(note)));
    }
    text
}
