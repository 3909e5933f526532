//! The model of a plot, ready to draw: its axes, lines, labels and caption, and what
//! every plot says of its latency axis (`latency_scale.rs` chooses it).

use super::latency_scale::{decade_floor, LatencyScale, TAIL_RATIO};

/// Columns a plot's x axis is reduced to: at least the plot area's width in pixels, so
/// the reduction cannot be seen.
pub(crate) const COLUMNS: usize = 900;

/// One plot, ready to draw.
pub(crate) struct Chart {
    /// Which plot (`timeline`, `trend`): what an error names.
    pub name: &'static str,
    /// The title drawn above the plot.
    pub caption: String,
    /// The x axis' description, with its unit.
    pub x_label: String,
    /// The y axis' description, with its unit.
    pub y_label: String,
    /// The x axis.
    pub x_axis: Axis,
    /// The y axis.
    pub y_axis: Axis,
    /// One line per stream or run.
    pub series: Vec<Series>,
    /// How to read the plot, one or two sentences.
    pub explanation: String,
}

/// An axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Axis {
    /// Logarithmic from `min` to `max`, labelled at powers of ten.
    Log {
        /// Bottom of the axis.
        min: f64,
        /// Top of the axis.
        max: f64,
    },
    /// Linear from 0 to `max`.
    Linear {
        /// Top of the axis.
        max: f64,
    },
    /// Instants, in days since the Unix epoch, from `min` to `max`, labelled with UTC
    /// dates (and times of day between midnights).
    Dates {
        /// The earliest instant.
        min: f64,
        /// The latest instant.
        max: f64,
    },
}

/// One line of a plot.
pub(crate) struct Series {
    /// Its legend entry.
    pub label: String,
    /// Its palette index.
    pub colour: usize,
    /// Its points, in pieces where the line is interrupted (timeline gaps).
    pub segments: Vec<Vec<(f64, f64)>>,
    /// Points drawn as markers: each run of a trend, a timeline's largest sample.
    pub marks: Vec<Mark>,
}

/// A marked point of a line.
pub(crate) struct Mark {
    /// Where, in the axes' values.
    pub at: (f64, f64),
    /// Drawn hollow: the value is only a bound (`≥`).
    pub hollow: bool,
    /// Written beside the point.
    pub label: Option<String>,
}

impl Axis {
    /// The pixel column of `x` on this axis (for [`COLUMNS`] columns).
    pub fn column(self, x: f64) -> usize {
        let fraction = match self {
            Axis::Linear { max } if max > 0.0 => x / max,
            Axis::Dates { min, max } if max > min => (x - min) / (max - min),
            Axis::Log { min, max } if x > 0.0 && max > min => {
                (x / min).log10() / (max / min).log10()
            }
            _ => 0.0,
        };
        ((fraction.max(0.0) * COLUMNS as f64) as usize).min(COLUMNS - 1)
    }
}

/// The latency axis' description: `latency (µs)`, with the reason on a log scale.
pub(crate) fn latency_label(scale: &LatencyScale) -> String {
    if scale.log {
        format!("latency (µs, {})", scale.reason)
    } else {
        "latency (µs)".to_string()
    }
}

/// The caption's sentence on the latency axis: which scale, and the rule.
pub(crate) fn scale_sentence(scale: &LatencyScale) -> String {
    format!(
        " Latency axis: {}; unless asked otherwise it is logarithmic when max > {} × \
         p99, so that a far spike does not squeeze the body into a few pixels.",
        scale.reason, TAIL_RATIO
    )
}

/// The latency axis of a profile or timeline reaching `top_us`: from 0, or on a log
/// scale from the decade at or below `lowest_us` (a positive value).
pub(crate) fn latency_axis(scale: &LatencyScale, lowest_us: f64, top_us: f64) -> Axis {
    if scale.log {
        let min = decade_floor(lowest_us.max(0.001));
        Axis::Log {
            min,
            max: (top_us * 1.3).max(min * 10.0),
        }
    } else {
        Axis::Linear { max: top_us * 1.02 }
    }
}
