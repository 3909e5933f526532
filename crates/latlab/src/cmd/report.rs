//! `latlab report RUN...`: one or several stored runs as HTML (with plots), Markdown,
//! text, or one plot as SVG.

use crate::cli::ReportArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_report::report::{render, ReportKind};
use latlab_store::{RunStore, SqliteStore, StoreError};
use std::path::Path;

/// Writes the report to stdout or the --output file.
pub fn execute(args: &ReportArgs) -> Result<u8, CliError> {
    let kind = kind_of(args)?;
    let path = args
        .store
        .clone()
        .unwrap_or_else(latlab_store::default_path);
    let store = SqliteStore::open(&path)?;
    let mut runs = Vec::with_capacity(args.runs.len());
    for reference in &args.runs {
        runs.push(store.resolve(reference).map_err(|e| match e {
            StoreError::NotFound { .. } => CliError::usage("RUN", e),
            other => CliError::runtime(other),
        })?);
    }
    let text = render(&runs, kind).map_err(CliError::runtime)?;
    match &args.output {
        None => Human::Stdout.write(&text)?,
        Some(file) => std::fs::write(file, text).map_err(|e| {
            CliError::usage("--output", format!("cannot write {}: {e}", file.display()))
        })?,
    }
    Ok(exit::OK)
}

/// --format, else the output file's extension, else text.
fn kind_of(args: &ReportArgs) -> Result<ReportKind, CliError> {
    if let Some(name) = &args.format {
        return name.parse().map_err(|e| CliError::usage("--format", e));
    }
    let extension = args
        .output
        .as_deref()
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        None => Ok(ReportKind::Text),
        Some("html" | "htm") => Ok(ReportKind::Html),
        Some("md" | "markdown") => Ok(ReportKind::Markdown),
        Some("txt") => Ok(ReportKind::Text),
        Some("svg") => Err(CliError::usage(
            "--format",
            "an SVG holds one plot: name it with --format svg-histogram, svg-profile or svg-timeline",
        )),
        Some(other) => Err(CliError::usage(
            "--format",
            format!(
                "cannot tell the kind from the extension '.{other}': give --format html, \
                 markdown, text, svg-histogram, svg-profile or svg-timeline"
            ),
        )),
    }
}
