//! `latlab trend`: a figure of many stored runs over time, per group of runs (OSADL's
//! long-term view): a table per group on standard output, the plot (and the tables)
//! with `-o`, everything as JSON with `--json`.

use crate::cli::TrendArgs;
use crate::cmd::runs::filter_of;
use crate::error::{exit, CliError};
use crate::output::{ignore_closed, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_model::run::Run;
use latlab_model::stamp::rfc3339;
use latlab_report::report::{
    render_trend, Figure, GroupBy, LatencyAxis, Trend, TrendFormat, TrendMetric,
};
use latlab_store::{RunFilter, RunStore};
use serde_json::json;
use std::path::Path;

/// Prints the trend, and writes its plot or JSON where asked.
pub fn execute(args: &TrendArgs) -> Result<u8, CliError> {
    let metric: TrendMetric = args
        .metric
        .parse()
        .map_err(|e| CliError::usage("--metric", e))?;
    let by = GroupBy::parse_list(&args.by).map_err(|e| CliError::usage("--by", e))?;
    let axis: LatencyAxis = match &args.latency_axis {
        Some(name) => name
            .parse()
            .map_err(|e| CliError::usage("--latency-axis", e))?,
        None => LatencyAxis::Auto,
    };
    let filter = filter_of(&args.filter)?;
    let location = StoreLocation::resolve(args.store.as_ref())?;
    let format = args.output.as_deref().map(format_of).transpose()?;
    let mut output = args
        .output
        .as_deref()
        .map(|target| OutputTarget::checked("--output", target, location.path()))
        .transpose()?;
    let mut json = args
        .json
        .as_deref()
        .map(|target| OutputTarget::checked("--json", target, location.path()))
        .transpose()?;
    let store = open_store(&location)?;
    let runs = matching_runs(store.as_ref(), &filter)?;
    let trend = Trend::of(&runs, metric, by);
    if let (Some(target), Some(format)) = (output.as_mut(), format) {
        let text = render_trend(&trend, format, axis).map_err(CliError::runtime)?;
        target.write(text.as_bytes())?;
    }
    if let Some(target) = json.as_mut() {
        let text = serde_json::to_string_pretty(&as_json(&trend))
            .map_err(|e| CliError::runtime(format!("cannot encode the trend: {e}")))?
            + "\n";
        target.write(text.as_bytes())?;
        if matches!(target, OutputTarget::Stdout) {
            return Ok(exit::OK);
        }
    }
    let mut text = render_trend(&trend, TrendFormat::Text, axis).map_err(CliError::runtime)?;
    text.push_str(&format!("\nRuns from {location}\n"));
    for (what, target) in [("Plot", &output), ("JSON", &json)] {
        if let Some(file) = target.as_ref().and_then(OutputTarget::path) {
            text.push_str(&format!("{what} written to {}\n", file.display()));
        }
    }
    ignore_closed(Human::Stdout.write(&text))?;
    Ok(exit::OK)
}

/// Opens the store at `location` for reading and nothing else: the one place the farm
/// views open theirs. A run whose process is gone is shown died without writing it.
pub fn open_store(location: &StoreLocation) -> Result<Box<dyn RunStore + Send>, CliError> {
    crate::store::open_to_show(location)
}

/// Every run `filter` lets through, loaded whole (a trend's figures other than p99.9
/// and the maximum are only in the Run).
pub fn matching_runs(store: &dyn RunStore, filter: &RunFilter) -> Result<Vec<Run>, CliError> {
    let listed = store.list(filter, None).map_err(CliError::runtime)?;
    let mut runs = Vec::with_capacity(listed.len());
    for summary in listed {
        // A run removed since it was listed is not part of the trend.
        if let Some(run) = store.load(&summary.id).map_err(CliError::runtime)? {
            runs.push(run);
        }
    }
    Ok(runs)
}

/// What `-o FILE` writes, from its extension.
fn format_of(path: &Path) -> Result<TrendFormat, CliError> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("svg") => Ok(TrendFormat::Svg),
        Some("html" | "htm") => Ok(TrendFormat::Html),
        Some("md" | "markdown") => Ok(TrendFormat::Markdown),
        Some("txt") => Ok(TrendFormat::Text),
        _ => Err(CliError::usage(
            "--output",
            format!(
                "cannot tell what to write to {} from its extension: name it .svg (the \
                 plot), .html (the plot and the tables), .md or .txt",
                path.display()
            ),
        )),
    }
}

/// A figure in JSON: a latency in ns or `{"at_least_ns": N}`, a rate as a number,
/// unknown as `null`.
fn figure_json(figure: Option<Figure>) -> serde_json::Value {
    match figure {
        None => serde_json::Value::Null,
        Some(Figure::Latency(p)) => json!(p),
        Some(Figure::PerMillion(rate) | Figure::PerHour(rate)) => json!(rate),
    }
}

/// The trend as `--json` writes it: each group with its values, worst, median and runs.
fn as_json(trend: &Trend) -> serde_json::Value {
    let by: Vec<String> = trend.by.iter().map(GroupBy::name).collect();
    let groups: Vec<serde_json::Value> = trend
        .groups
        .iter()
        .map(|group| {
            let values: serde_json::Map<String, serde_json::Value> = by
                .iter()
                .zip(&group.values)
                .map(|(name, value)| (name.clone(), json!(value)))
                .collect();
            let runs: Vec<serde_json::Value> = group
                .points
                .iter()
                .map(|p| {
                    json!({
                        "id": p.run,
                        "started_at": p.started_at.map(rfc3339),
                        "value": figure_json(p.figure),
                        "samples": p.samples,
                    })
                })
                .collect();
            json!({
                "probe": group.probe,
                "series": group.series,
                "label": group.label(&trend.by),
                "group": values,
                "worst": figure_json(group.worst()),
                "median": figure_json(group.median()),
                "runs": runs,
            })
        })
        .collect();
    json!({
        "metric": trend.metric.name(),
        "unit": if trend.metric.is_latency() { "ns" } else { trend.metric.rate_unit() },
        "by": by,
        "groups": groups,
    })
}
