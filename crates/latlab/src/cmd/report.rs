//! `latlab report RUN...`: one or several stored runs as HTML (with plots), Markdown,
//! text, or one plot as SVG.

use crate::cli::ReportArgs;
use crate::cmd::show::find_runs;
use crate::error::{exit, CliError};
use crate::output::{Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_model::width::Width;
use latlab_report::report::{
    render_png, render_trend, render_with_axis, GroupBy, LatencyAxis, PlotKind, ReportKind, Trend,
    TrendFormat, TrendMetric,
};
use std::path::Path;

/// What to write: a text kind, or one plot as PNG.
enum Output {
    Text(ReportKind),
    Png(PlotKind),
}

/// Writes the report to stdout or the --output file.
pub fn execute(args: &ReportArgs) -> Result<u8, CliError> {
    if let Some(metric) = &args.trend {
        return trend(args, metric);
    }
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
            // A file is not narrowed; the terminal's width is for the terminal.
            let width = match target {
                None => crate::terminal::width(Human::Stdout),
                Some(_) => Width::Unlimited,
            };
            let text = render_with_axis(&runs, kind, axis, width).map_err(CliError::runtime)?;
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

/// `--trend METRIC`: the trend of the runs given, instead of their report.
fn trend(args: &ReportArgs, metric: &str) -> Result<u8, CliError> {
    let metric: TrendMetric = metric.parse().map_err(|e| CliError::usage("--trend", e))?;
    let by = GroupBy::parse_list(&args.by).map_err(|e| CliError::usage("--by", e))?;
    let axis: LatencyAxis = match &args.latency_axis {
        Some(name) => name
            .parse()
            .map_err(|e| CliError::usage("--latency-axis", e))?,
        None => LatencyAxis::Auto,
    };
    let extension = args
        .output
        .as_deref()
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let name = args.format.clone().or(extension).unwrap_or_default();
    let format = match name.to_ascii_lowercase().as_str() {
        "" | "text" | "txt" => TrendFormat::Text,
        "html" | "htm" => TrendFormat::Html,
        "markdown" | "md" => TrendFormat::Markdown,
        "svg" | "svg-trend" => TrendFormat::Svg,
        other => {
            return Err(CliError::usage(
                "--format",
                format!("a trend is written as html, markdown, text or svg, not '{other}'"),
            ))
        }
    };
    let store = StoreLocation::resolve(args.store.as_ref())?;
    let mut target = match &args.output {
        None => None,
        Some(path) => Some(OutputTarget::checked("--output", path, store.path())?),
    };
    let runs = find_runs(&store, &args.runs)?;
    let text =
        render_trend(&Trend::of(&runs, metric, by), format, axis).map_err(CliError::runtime)?;
    match target.as_mut() {
        Some(target) => target.write(text.as_bytes())?,
        None => Human::Stdout.write(&text)?,
    }
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
