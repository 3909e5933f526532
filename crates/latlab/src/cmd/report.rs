//! `latlab report RUN...`: one or several stored runs as HTML (with plots), Markdown,
//! text, or one plot as SVG.

use crate::cli::ReportArgs;
use crate::cmd::show::find_runs;
use crate::error::{exit, CliError};
use crate::output::{Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_report::report::{render_png, render_with_axis, LatencyAxis, PlotKind, ReportKind};
use std::path::Path;

/// What to write: a text kind, or one plot as PNG.
enum Output {
    Text(ReportKind),
    Png(PlotKind),
}

/// Writes the report to stdout or the --output file.
pub fn execute(args: &ReportArgs) -> Result<u8, CliError> {
    let output = output_of(args)?;
    let axis: LatencyAxis = match &args.latency_axis {
        Some(name) => name
            .parse()
            .map_err(|e| CliError::usage("--latency-axis", e))?,
        None => LatencyAxis::Auto,
    };
    let store = StoreLocation::resolve(args.store.as_ref())?;
    // Checked and opened before the runs are read: a bad path fails at once.
    let mut target = match &args.output {
        None => None,
        Some(path) => Some(OutputTarget::checked("--output", path, store.path())?),
    };
    let runs = find_runs(&store, &args.runs)?;
    let bytes = match output {
        Output::Text(kind) => {
            let text = render_with_axis(&runs, kind, axis).map_err(CliError::runtime)?;
            if target.is_none() {
                Human::Stdout.write(&text)?;
                return Ok(exit::OK);
            }
            text.into_bytes()
        }
        Output::Png(plot) => render_png(&runs, plot, axis).map_err(CliError::runtime)?,
    };
    target
        .as_mut()
        .ok_or_else(|| CliError::usage("--output", "a PNG goes to a file: give -o FILE.png"))?
        .write(&bytes)?;
    Ok(exit::OK)
}

/// --format, else the output file's extension, else text.
fn output_of(args: &ReportArgs) -> Result<Output, CliError> {
    if let Some(name) = &args.format {
        if let Some(plot) = name.strip_prefix("png-") {
            return PlotKind::ALL
                .into_iter()
                .find(|p| p.name() == plot)
                .map(Output::Png)
                .ok_or_else(|| {
                    CliError::usage(
                        "--format",
                        "choose png-histogram, png-profile or png-timeline",
                    )
                });
        }
        return name
            .parse()
            .map(Output::Text)
            .map_err(|e| CliError::usage("--format", e));
    }
    let extension = args
        .output
        .as_deref()
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        None => Ok(Output::Text(ReportKind::Text)),
        Some("html" | "htm") => Ok(Output::Text(ReportKind::Html)),
        Some("md" | "markdown") => Ok(Output::Text(ReportKind::Markdown)),
        Some("txt") => Ok(Output::Text(ReportKind::Text)),
        Some(image @ ("svg" | "png")) => Err(CliError::usage(
            "--format",
            format!(
                "{} holds one plot: name it with --format {image}-histogram, \
                 {image}-profile or {image}-timeline",
                image.to_uppercase()
            ),
        )),
        Some(other) => Err(CliError::usage(
            "--format",
            format!(
                "cannot tell the kind from the extension '.{other}': give --format html, \
                 markdown, text, or one plot: svg-histogram, png-histogram, ... (-profile, \
                 -timeline)"
            ),
        )),
    }
}
