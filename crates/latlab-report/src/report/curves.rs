//! The plots of a report: one run's (a line per stream) or several runs' overlaid (a
//! line per run, its streams merged), each built by `distribution.rs` or
//! `timeline.rs`. The latency axis is linear or logarithmic (`latency_scale.rs`): one
//! choice for a run's, or an overlay's, three plots, said on the axis and in the
//! caption.

use super::chart::Chart;
use super::distribution::{histogram, profile, HistogramLine};
use super::figures::{self, DecodedRun};
use super::latency_scale::LatencyScale;
use super::timeline::{timeline, TimelineLine};
use super::{LatencyAxis, PlotKind, ReportError};
use crate::compare::RunFigures;
use latlab_model::run::Run;

/// The plots of the given runs: one line per stream for one run, one line per run
/// (its streams merged) for several.
pub(crate) fn chart_of_runs(
    runs: &[Run],
    plot: PlotKind,
    axis: LatencyAxis,
) -> Result<Chart, ReportError> {
    let decoded = runs
        .iter()
        .map(DecodedRun::decode)
        .collect::<Result<Vec<_>, _>>()?;
    match decoded.as_slice() {
        [one] => Ok(chart_of_run(one, plot, axis)),
        several => {
            let merged = merged_figures(runs)?;
            Ok(overlay(several, &merged, plot, axis))
        }
    }
}

/// Each run with its streams merged (for overlays and the comparison table).
pub(crate) fn merged_figures(runs: &[Run]) -> Result<Vec<RunFigures>, ReportError> {
    runs.iter()
        .map(|run| {
            RunFigures::of(run).map_err(|source| ReportError::Histogram {
                run: run.id.clone(),
                stream: "every stream merged".to_string(),
                source,
            })
        })
        .collect()
}

/// The latency scale of one run's plots, from its streams' maxima and p99s.
fn run_scale(run: &DecodedRun, axis: LatencyAxis) -> LatencyScale {
    LatencyScale::choose(
        axis,
        run.streams
            .iter()
            .filter(|s| s.stream.samples > 0)
            .map(|s| {
                let stats = &s.stream.stats;
                (stats.max_ns, stats.percentile(99.0).map(|p| p.value()))
            }),
    )
}

/// One run's plot, one line per stream with samples.
pub(crate) fn chart_of_run(run: &DecodedRun, plot: PlotKind, axis: LatencyAxis) -> Chart {
    let caption = format!("run {}", figures::run_label(run.run));
    let scale = run_scale(run, axis);
    let with_samples = || run.streams.iter().filter(|s| s.stream.samples > 0);
    match plot {
        PlotKind::Histogram | PlotKind::Profile => {
            // A stream whose source kept no histogram has no line.
            let lines = with_samples()
                .filter_map(|s| {
                    Some(HistogramLine {
                        name: s.name.clone(),
                        colour: s.colour,
                        histogram: s.histogram.as_ref().filter(|h| !h.is_empty())?,
                        max: s.stream.stats.max_ns,
                    })
                })
                .collect();
            if plot == PlotKind::Histogram {
                histogram(caption, "stream", lines, &scale)
            } else {
                profile(caption, "stream", lines, &scale)
            }
        }
        PlotKind::Timeline => {
            let lines = with_samples()
                .map(|s| TimelineLine {
                    name: s.name.clone(),
                    colour: s.colour,
                    parts: vec![(s.offset, &s.stream.timeline)],
                })
                .collect();
            timeline(caption, "stream", lines, &scale)
        }
    }
}

/// Several runs in one plot, one line per run with its streams merged.
pub(crate) fn overlay(
    runs: &[DecodedRun],
    merged: &[RunFigures],
    plot: PlotKind,
    axis: LatencyAxis,
) -> Chart {
    let caption = format!("{} runs", runs.len());
    let scale = LatencyScale::choose(
        axis,
        merged
            .iter()
            .filter(|f| f.samples.is_some_and(|n| n > 0))
            .map(|f| (f.max, f.percentile(99.0).map(|p| p.value()))),
    );
    match plot {
        PlotKind::Histogram | PlotKind::Profile => {
            let lines = runs
                .iter()
                .zip(merged)
                .enumerate()
                .filter(|(_, (_, f))| f.samples.is_some_and(|n| n > 0))
                .filter_map(|(colour, (run, f))| {
                    Some(HistogramLine {
                        name: figures::run_label(run.run),
                        colour,
                        histogram: f.histogram()?,
                        max: f.max,
                    })
                })
                .collect();
            if plot == PlotKind::Histogram {
                histogram(caption, "run", lines, &scale)
            } else {
                profile(caption, "run", lines, &scale)
            }
        }
        PlotKind::Timeline => {
            let lines = runs
                .iter()
                .enumerate()
                .map(|(colour, run)| TimelineLine {
                    name: figures::run_label(run.run),
                    colour,
                    parts: run
                        .streams
                        .iter()
                        .map(|s| (s.offset, &s.stream.timeline))
                        .collect(),
                })
                .collect();
            timeline(caption, "run", lines, &scale)
        }
    }
}
