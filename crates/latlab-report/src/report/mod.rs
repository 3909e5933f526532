//! Reports: one or several Runs as a self-contained HTML page, GitHub-flavoured
//! Markdown, terminal text, or one plot as a standalone SVG document; and the trend of
//! a figure over many runs ([`Trend`], [`render_trend`]).
//!
//! Every kind is written from the same document model (`report/document.rs`): the facts,
//! the verdict, the tables and the plots are chosen and formatted once, so an HTML page
//! and a text report of the same runs say the same thing. Plots are drawn with
//! `plotters` into SVG and are bounded in size whatever the run's length: histograms
//! are re-binned into at most a few hundred bins, a profile keeps at most two points
//! per pixel column and a timeline each column's largest sample, and histograms are
//! walked bucket by bucket, never value by value.
//!
//! Everything taken from a Run (host names, kernel versions, warnings, file names) is
//! escaped for the output's language: HTML/XML in pages and plots, Markdown in
//! Markdown, and control characters are replaced in text.

mod assemble;
mod audit_table;
mod bars;
mod chart;
mod comparison;
mod curves;
mod distribution;
mod document;
mod explain;
pub mod farm;
mod figures;
mod html;
mod latency_scale;
mod markdown;
mod plot;
mod png;
mod run_section;
mod run_tables;
pub mod site;
mod summary;
mod telemetry;
mod text;
mod timeline;
mod trend;

use crate::compare::{CompareError, Comparisons};
use latlab_model::explain::{Explain, Explanation};
use latlab_model::hist::HistogramError;
use latlab_model::run::Run;
use latlab_model::width::Width;
use std::fmt;
use std::str::FromStr;

pub use audit_table::render_audit;
pub use text::Ansi;
pub use trend::{
    render_trend, Figure, GroupBy, Trend, TrendError, TrendFormat, TrendGroup, TrendMetric,
    TrendPoint,
};

/// What [`render`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportKind {
    /// One self-contained HTML page: inline CSS and SVG, no script, no network.
    Html,
    /// GitHub-flavoured Markdown: the facts and tables, without plots.
    Markdown,
    /// Plain text for a terminal: the facts and aligned tables, without plots.
    Text,
    /// The run summary `latlab run` prints: what was measured, the warnings, the
    /// statistics, the verdict; a shorter text report.
    Summary,
    /// One plot as a standalone SVG document.
    Svg(PlotKind),
}

impl ReportKind {
    /// Every kind, in the order of [`ReportKind::name`]'s help text.
    pub const ALL: [ReportKind; 7] = [
        ReportKind::Html,
        ReportKind::Markdown,
        ReportKind::Text,
        ReportKind::Summary,
        ReportKind::Svg(PlotKind::Histogram),
        ReportKind::Svg(PlotKind::Profile),
        ReportKind::Svg(PlotKind::Timeline),
    ];

    /// The kind's name, as [`FromStr`] reads it: `html`, `markdown`, `text`, `summary`,
    /// `svg-histogram`, `svg-profile`, `svg-timeline`.
    pub fn name(self) -> &'static str {
        match self {
            ReportKind::Html => "html",
            ReportKind::Markdown => "markdown",
            ReportKind::Text => "text",
            ReportKind::Summary => "summary",
            ReportKind::Svg(PlotKind::Histogram) => "svg-histogram",
            ReportKind::Svg(PlotKind::Profile) => "svg-profile",
            ReportKind::Svg(PlotKind::Timeline) => "svg-timeline",
        }
    }
}

impl fmt::Display for ReportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReportKind {
    type Err = ReportError;

    /// Reads a kind's [`name`](ReportKind::name), case-insensitively; `md` and `txt`
    /// are accepted too.
    fn from_str(text: &str) -> Result<ReportKind, ReportError> {
        let name = text.trim().to_ascii_lowercase();
        match name.as_str() {
            "md" => return Ok(ReportKind::Markdown),
            "txt" => return Ok(ReportKind::Text),
            _ => {}
        }
        ReportKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| ReportError::UnknownKind(text.to_string()))
    }
}

/// The plots a report draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlotKind {
    /// OSADL-style latency histogram: latency (µs, linear) against the number of
    /// samples (log scale), one line per stream, the worst case in the legend.
    Histogram,
    /// Latency profile: the fraction of samples at or above each latency (log scale,
    /// from 1 down to one sample), one line per stream.
    Profile,
    /// The largest sample of each timeline interval against the time into the run.
    Timeline,
}

impl PlotKind {
    /// Every plot, in the order a report shows them.
    pub const ALL: [PlotKind; 3] = [PlotKind::Histogram, PlotKind::Profile, PlotKind::Timeline];

    /// The plot's name: `histogram`, `profile`, `timeline`.
    pub fn name(self) -> &'static str {
        match self {
            PlotKind::Histogram => "histogram",
            PlotKind::Profile => "profile",
            PlotKind::Timeline => "timeline",
        }
    }
}

impl fmt::Display for PlotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How plots draw their latency axis: the histogram's and the profile's x axis, the
/// timeline's y axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LatencyAxis {
    /// Logarithmic when the largest sample exceeds 10 × p99 (one far spike would
    /// squeeze the body of the distribution into a few pixels), else linear. The plot
    /// says which and why.
    #[default]
    Auto,
    /// Always linear, from 0.
    Linear,
    /// Always logarithmic, labelled at every power of ten.
    Log,
}

impl LatencyAxis {
    /// Every choice, in the order of [`LatencyAxis::name`]'s help text.
    pub const ALL: [LatencyAxis; 3] = [LatencyAxis::Auto, LatencyAxis::Linear, LatencyAxis::Log];

    /// The choice's name, as [`FromStr`] reads it: `auto`, `linear`, `log`.
    pub fn name(self) -> &'static str {
        match self {
            LatencyAxis::Auto => "auto",
            LatencyAxis::Linear => "linear",
            LatencyAxis::Log => "log",
        }
    }
}

impl fmt::Display for LatencyAxis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LatencyAxis {
    type Err = ReportError;

    /// Reads a choice's [`name`](LatencyAxis::name), case-insensitively.
    fn from_str(text: &str) -> Result<LatencyAxis, ReportError> {
        let name = text.trim().to_ascii_lowercase();
        LatencyAxis::ALL
            .into_iter()
            .find(|axis| axis.name() == name)
            .ok_or_else(|| ReportError::UnknownAxis(text.to_string()))
    }
}

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No run was given.
    #[error("nothing to report: give at least one run")]
    NoRuns,
    /// A report kind's name was not recognised.
    #[error(
        "unknown report kind '{0}': choose html, markdown, text, summary, svg-histogram, \
         svg-profile or svg-timeline"
    )]
    UnknownKind(String),
    /// A latency axis' name was not recognised.
    #[error("unknown latency axis '{0}': choose auto, linear or log")]
    UnknownAxis(String),
    /// A stream's histogram could not be decoded.
    #[error(
        "run {run}, {stream}: {source}; the Run is damaged: export it again from the store \
         or measure again"
    )]
    Histogram {
        /// The run's id.
        run: String,
        /// The stream (`cpu 1 [main]`).
        stream: String,
        /// What was wrong.
        source: HistogramError,
    },
    /// No font to draw a PNG's text with.
    #[error(
        "no font for the PNG's text: install one (apt-get install fonts-dejavu-core), or \
         write the plot as SVG (--format svg-{0})"
    )]
    NoFont(PlotKind),
    /// The plotting library failed (a bug: drawing into a string cannot fail otherwise).
    #[error("could not draw the {plot} plot: {message}; please report this as a bug")]
    Plot {
        /// Which plot (`histogram`, `trend`).
        plot: &'static str,
        /// The library's message.
        message: String,
    },
}

impl From<CompareError> for ReportError {
    fn from(e: CompareError) -> ReportError {
        match e {
            CompareError::TooFewRuns => ReportError::NoRuns,
            CompareError::Histogram { run, source } => ReportError::Histogram {
                run,
                stream: "every stream merged".to_string(),
                source,
            },
        }
    }
}

/// Renders `runs` as `kind`.
///
/// One run gives its report; several give a comparison first (overlaid plots, one line
/// per run, and a table with one row per run), then each run's own report. For
/// [`ReportKind::Svg`], one run gives one line per stream, several one line per run.
/// Plots choose their latency axis by themselves ([`LatencyAxis::Auto`]); text is as
/// wide as it is ([`Width::Unlimited`]).
pub fn render(runs: &[Run], kind: ReportKind) -> Result<String, ReportError> {
    render_with_axis(runs, kind, LatencyAxis::Auto, Width::Unlimited)
}

/// [`render`], with the plots' latency axis drawn as `axis` says, and the text kinds
/// (text, summary) laid out for `width`.
pub fn render_with_axis(
    runs: &[Run],
    kind: ReportKind,
    axis: LatencyAxis,
    width: Width,
) -> Result<String, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    match kind {
        ReportKind::Html => html::render(&assemble::report(runs, Some(axis))?),
        ReportKind::Markdown => Ok(markdown::render(&assemble::report(runs, None)?)),
        ReportKind::Text => Ok(text::render(
            &assemble::report(runs, None)?,
            Ansi::Off,
            width,
        )),
        ReportKind::Summary => Ok(text::render(&assemble::summary(runs), Ansi::Off, width)),
        ReportKind::Svg(plot) => plot::standalone(&curves::chart_of_runs(runs, plot, axis)?),
    }
}

/// `latlab compare`: the comparison table of `runs`, how each later run differs from
/// the first, its verdicts and its loads, as terminal text (the blocks a report of
/// several runs shows). `compared` is [`compare_runs`](crate::compare::compare_runs)
/// of the same runs. Laid out for `width`.
pub fn render_comparison(
    runs: &[Run],
    compared: &Comparisons,
    width: Width,
) -> Result<String, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let merged = curves::merged_figures(runs)?;
    Ok(text::render(
        &document::Document {
            title: "comparison".to_string(),
            blocks: comparison::blocks(runs, &merged, compared),
        },
        Ansi::Off,
        width,
    ))
}

/// The summary of `run` as `latlab run` prints it: [`ReportKind::Summary`], with ANSI
/// emphasis when `ansi` is on (for a terminal), laid out for `width`.
pub fn render_summary(run: &Run, ansi: Ansi, width: Width) -> String {
    text::render(&assemble::summary(std::slice::from_ref(run)), ansi, width)
}

/// `latlab explain`: what got in the way of `run`'s spikes, as terminal text — how it
/// was traced, the kernel's limits, the observer effect, the counts, the catalogue of
/// causes per phase and CPU, then the `top` largest spikes in a few lines each, laid
/// out for `width`. `None` when the run holds no explanation (it was not measured with
/// `--explain`).
pub fn render_explain(run: &Run, top: usize, ansi: Ansi, width: Width) -> Option<String> {
    let explained = run.explain.as_ref()?;
    let mut blocks = vec![document::Block::Heading {
        level: 1,
        text: format!("What got in the way: run {}", figures::run_label(run)),
    }];
    blocks.extend(explain::view(explained, top, 2));
    Some(text::render(
        &document::Document {
            title: "latlab explain".to_string(),
            blocks,
        },
        ansi,
        width,
    ))
}

/// `latlab explain --spike N`: spike `rank` (1-based, largest first) of those `explain`
/// keeps in full, event by event, then its parts, as terminal text laid out for
/// `width`. `None` when there is no such spike ([`explained_spikes`] says how many there
/// are).
pub fn render_explain_spike(
    explain: &Explain,
    rank: usize,
    ansi: Ansi,
    width: Width,
) -> Option<String> {
    let blocks = explain::spike_timeline(explain, rank, 1)?;
    Some(text::render(
        &document::Document {
            title: "latlab explain".to_string(),
            blocks,
        },
        ansi,
        width,
    ))
}

/// The spikes `explain` keeps in full, largest first: what `--spike N` numbers.
pub fn explained_spikes(explain: &Explain) -> Vec<&Explanation> {
    explain::ranked(explain)
}

/// The catalogue `latlab run --explain` ends with: the counts, the largest causes per
/// phase and CPU, and where to read the rest (`next`: the command, e.g. `latlab explain
/// last`); laid out for `width`.
pub fn render_explain_summary(explain: &Explain, next: &str, ansi: Ansi, width: Width) -> String {
    text::render(
        &document::Document {
            title: "latlab summary".to_string(),
            blocks: explain::summary(explain, next),
        },
        ansi,
        width,
    )
}

/// Renders one plot of `runs` as a PNG image (the SVG plot rasterised at twice its
/// size, with the system's fonts), for documents that do not take SVG; its latency
/// axis drawn as `axis` says.
pub fn render_png(runs: &[Run], plot: PlotKind, axis: LatencyAxis) -> Result<Vec<u8>, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    png::rasterise(
        &plot::standalone(&curves::chart_of_runs(runs, plot, axis)?)?,
        plot,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_their_names() {
        for kind in ReportKind::ALL {
            assert_eq!(kind.name().parse::<ReportKind>().unwrap(), kind);
        }
        assert_eq!("MD".parse::<ReportKind>().unwrap(), ReportKind::Markdown);
        assert_eq!("txt".parse::<ReportKind>().unwrap(), ReportKind::Text);
        let err = "pdf".parse::<ReportKind>().unwrap_err().to_string();
        assert!(
            err.contains("'pdf'") && err.contains("svg-timeline"),
            "{err}"
        );
    }

    #[test]
    fn latency_axes_read_their_names() {
        for axis in LatencyAxis::ALL {
            assert_eq!(axis.name().parse::<LatencyAxis>().unwrap(), axis);
        }
        let err = "cubic".parse::<LatencyAxis>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown latency axis 'cubic': choose auto, linear or log"
        );
    }

    #[test]
    fn no_runs_is_an_error() {
        assert!(matches!(
            render(&[], ReportKind::Html),
            Err(ReportError::NoRuns)
        ));
    }
}
