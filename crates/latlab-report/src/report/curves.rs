//! The data of the plots, computed from histograms and timelines with a bounded number
//! of points: histograms are re-binned into at most [`MAX_BINS`] bins, profiles and
//! timelines keep at most two points, respectively one, per pixel column
//! ([`COLUMNS`]). Histograms are walked bucket by bucket, never sample by sample.

use super::figures::{self, DecodedRun};
use super::{PlotKind, ReportError};
use crate::compare::RunFigures;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{Run, Timeline};
use latlab_model::Nanos;

/// Columns a plot's x axis is reduced to: at least the plot area's width in pixels, so
/// the reduction cannot be seen.
pub(crate) const COLUMNS: usize = 900;

/// Most bins of a histogram plot (OSADL's 1 µs bins up to 500 µs of latency).
pub(crate) const MAX_BINS: u64 = 500;

/// Where a histogram's empty bins are drawn: below one sample, on the axis.
const EMPTY_BIN: f64 = 0.5;

/// One plot, ready to draw.
pub(crate) struct Chart {
    /// Which plot.
    pub kind: PlotKind,
    /// The title drawn above the plot.
    pub caption: String,
    /// The x axis' description, with its unit.
    pub x_label: String,
    /// The y axis' description, with its unit.
    pub y_label: String,
    /// The x axis runs from 0 to this.
    pub x_max: f64,
    /// The y axis.
    pub y_axis: YAxis,
    /// One line per stream or run.
    pub series: Vec<Series>,
    /// How to read the plot, one or two sentences.
    pub explanation: String,
}

/// A y axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum YAxis {
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
}

/// One line of a plot.
pub(crate) struct Series {
    /// Its legend entry.
    pub label: String,
    /// Its palette index.
    pub colour: usize,
    /// Its points, in pieces where the line is interrupted (timeline gaps).
    pub segments: Vec<Vec<(f64, f64)>>,
}

/// A histogram to draw as one line.
struct HistogramLine<'a> {
    name: String,
    colour: usize,
    histogram: &'a LatencyHistogram,
    max: Option<Nanos>,
}

/// A timeline to draw as one line: one or several streams' timelines, each starting at
/// its offset into the run.
struct TimelineLine<'a> {
    name: String,
    colour: usize,
    parts: Vec<(Nanos, &'a Timeline)>,
}

/// The plots of the given runs: one line per stream for one run, one line per run
/// (its streams merged) for several.
pub(crate) fn chart_of_runs(runs: &[Run], plot: PlotKind) -> Result<Chart, ReportError> {
    let decoded = runs
        .iter()
        .map(DecodedRun::decode)
        .collect::<Result<Vec<_>, _>>()?;
    match decoded.as_slice() {
        [one] => Ok(chart_of_run(one, plot)),
        several => {
            let merged = merged_figures(runs)?;
            Ok(overlay(several, &merged, plot))
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

/// One run's plot, one line per stream with samples.
pub(crate) fn chart_of_run(run: &DecodedRun, plot: PlotKind) -> Chart {
    let caption = format!("run {}", figures::run_label(run.run));
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
                histogram(caption, "stream", lines)
            } else {
                profile(caption, "stream", lines)
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
            timeline(caption, "stream", lines)
        }
    }
}

/// Several runs in one plot, one line per run with its streams merged.
pub(crate) fn overlay(runs: &[DecodedRun], merged: &[RunFigures], plot: PlotKind) -> Chart {
    let caption = format!("{} runs", runs.len());
    match plot {
        PlotKind::Histogram | PlotKind::Profile => {
            let lines = runs
                .iter()
                .zip(merged)
                .enumerate()
                .filter(|(_, (_, f))| f.samples > 0)
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
                histogram(caption, "run", lines)
            } else {
                profile(caption, "run", lines)
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
            timeline(caption, "run", lines)
        }
    }
}

/// The legend entry of a histogram line: name, samples and worst case.
fn histogram_label(line: &HistogramLine) -> String {
    let max = line
        .max
        .map_or_else(|| figures::MISSING.to_string(), figures::us_unit);
    // Samples known only as bounds have no bin: said in the legend.
    let beyond = match line.histogram.bounded() {
        0 => String::new(),
        n => format!(" ({n} beyond the source's range, not drawn)"),
    };
    format!(
        "{} · {} samples{beyond} · max {max}",
        line.name,
        line.histogram.len()
    )
}

/// The worst case over every line, with the (first such) line's name.
fn worst_case(lines: &[HistogramLine]) -> String {
    lines
        .iter()
        .rev()
        .filter_map(|l| l.max.map(|m| (m, &l.name)))
        .max_by_key(|(m, _)| *m)
        .map_or_else(String::new, |(m, name)| {
            format!("; worst case {} ({name})", figures::us_unit(m))
        })
}

/// The smallest bin width of 1, 2 or 5 × 10ⁿ ns that covers `top_ns` in at most
/// [`MAX_BINS`] bins.
fn bin_width(top_ns: u64) -> u64 {
    let mut decade = 1u64;
    loop {
        for step in [1, 2, 5] {
            let width = step * decade;
            if top_ns / width < MAX_BINS {
                return width;
            }
        }
        decade *= 10;
    }
}

/// OSADL-style histogram: samples per bin (log y) against latency (linear x).
fn histogram(caption: String, per: &str, lines: Vec<HistogramLine>) -> Chart {
    let buckets: Vec<Vec<(u64, u64)>> = lines.iter().map(|l| l.histogram.known_buckets()).collect();
    let top_ns = buckets
        .iter()
        .filter_map(|b| b.last().map(|(v, _)| *v))
        .max()
        .unwrap_or(1)
        .max(1);
    let width = bin_width(top_ns);
    let bins = (top_ns / width + 1) as usize;
    let centre = |bin: usize| (bin as f64 + 0.5) * width as f64 / 1e3;
    let mut highest = 1u64;
    let series = lines
        .iter()
        .zip(&buckets)
        .map(|(line, buckets)| {
            let mut counts = vec![0u64; bins];
            for &(value, count) in buckets {
                counts[((value / width) as usize).min(bins - 1)] += count;
            }
            highest = highest.max(counts.iter().copied().max().unwrap_or(0));
            Series {
                label: histogram_label(line),
                colour: line.colour,
                segments: vec![bin_points(&counts, centre)],
            }
        })
        .collect();
    Chart {
        kind: PlotKind::Histogram,
        caption: format!("Latency histogram · {caption}"),
        x_label: format!("latency (µs){}", worst_case(&lines)),
        y_label: format!("samples per {} bin (log scale)", Nanos(width as i64)),
        x_max: bins as f64 * width as f64 / 1e3,
        y_axis: YAxis::Log {
            min: EMPTY_BIN,
            max: highest as f64 * 2.0,
        },
        series,
        explanation: format!(
            "OSADL-style latency histogram, one line per {per}: samples per {} bin on a log \
             scale against latency; bins without samples lie on the axis.",
            Nanos(width as i64)
        ),
    }
}

/// A histogram's line from its first to its last non-empty bin. A run of empty bins
/// needs only its two ends (on the axis), which keeps the line short.
fn bin_points(counts: &[u64], centre: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let first = counts.iter().position(|&c| c > 0);
    let last = counts.iter().rposition(|&c| c > 0);
    let (Some(first), Some(last)) = (first, last) else {
        return Vec::new();
    };
    let mut points = Vec::new();
    for bin in first..=last {
        let count = counts[bin];
        let inside_empty_run = count == 0 && counts[bin - 1] == 0 && counts[bin + 1] == 0;
        if !inside_empty_run {
            let y = if count == 0 { EMPTY_BIN } else { count as f64 };
            points.push((centre(bin), y));
        }
    }
    points
}

/// The column of `x` on an axis from 0 to `x_max`.
fn column(x: f64, x_max: f64) -> usize {
    if x_max <= 0.0 {
        return 0;
    }
    ((x / x_max * COLUMNS as f64) as usize).min(COLUMNS - 1)
}

/// Latency profile: the fraction of samples at or above each latency (log y).
fn profile(caption: String, per: &str, lines: Vec<HistogramLine>) -> Chart {
    let buckets: Vec<Vec<(u64, u64)>> = lines.iter().map(|l| l.histogram.buckets()).collect();
    let top_us = buckets
        .iter()
        .filter_map(|b| b.last().map(|(v, _)| *v as f64 / 1e3))
        .fold(0.001, f64::max);
    let x_max = top_us * 1.02;
    let most_samples = lines.iter().map(|l| l.histogram.len()).max().unwrap_or(1);
    let series = lines
        .iter()
        .zip(&buckets)
        .map(|(line, buckets)| Series {
            label: histogram_label(line),
            colour: line.colour,
            segments: vec![profile_points(buckets, line.histogram.len(), x_max)],
        })
        .collect();
    Chart {
        kind: PlotKind::Profile,
        caption: format!("Latency profile · {caption}"),
        x_label: format!("latency (µs){}", worst_case(&lines)),
        y_label: "fraction of samples ≥ latency (log scale)".to_string(),
        x_max,
        y_axis: YAxis::Log {
            min: 0.5 / most_samples.max(1) as f64,
            max: 1.5,
        },
        series,
        explanation: format!(
            "Latency profile (reverse cumulative distribution), one line per {per}: the \
             fraction of samples at or above each latency, on a log scale from 1 down to \
             one sample. A line crosses 10⁻³ at its p99.9 and 10⁻⁴ at its p99.99."
        ),
    }
}

/// The profile of one histogram, at most two points per column: the first (highest
/// fraction) and the last (lowest) of the buckets falling into it.
fn profile_points(buckets: &[(u64, u64)], samples: u64, x_max: f64) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let mut remaining = samples;
    let mut current = usize::MAX;
    let mut last_in_column: Option<(f64, f64)> = None;
    for &(value, count) in buckets {
        let point = (value as f64 / 1e3, remaining as f64 / samples as f64);
        let col = column(point.0, x_max);
        if col == current {
            last_in_column = Some(point);
        } else {
            points.extend(last_in_column.take());
            points.push(point);
            current = col;
        }
        remaining = remaining.saturating_sub(count);
    }
    points.extend(last_in_column);
    points
}

/// The unit of a timeline's axis for a span: seconds up to 10 min, minutes up to 10 h,
/// hours beyond.
fn time_unit(span: Nanos) -> (&'static str, f64) {
    let secs = span.as_secs_f64();
    if secs <= 600.0 {
        ("s", 1e9)
    } else if secs <= 36_000.0 {
        ("min", 60e9)
    } else {
        ("h", 3_600e9)
    }
}

/// Timeline: the largest sample per interval against the time into the run.
fn timeline(caption: String, per: &str, lines: Vec<TimelineLine>) -> Chart {
    let span_ns = lines
        .iter()
        .flat_map(|l| &l.parts)
        .map(|(offset, t)| offset.0 + t.interval_ns.0 * t.max_ns.len() as i64)
        .max()
        .unwrap_or(0);
    let (unit, scale) = time_unit(Nanos(span_ns));
    let mut highest_us = 0f64;
    let series: Vec<Series> = lines
        .iter()
        .filter_map(|line| {
            let columns = column_maxima(&line.parts, span_ns);
            let line_max = columns.iter().flatten().max().copied()?;
            highest_us = highest_us.max(line_max as f64 / 1e3);
            let x = |col: usize| (col as f64 + 0.5) * span_ns as f64 / COLUMNS as f64 / scale;
            let mut segments = Vec::new();
            let mut current = Vec::new();
            for (col, value) in columns.iter().enumerate() {
                match value {
                    Some(v) => current.push((x(col), *v as f64 / 1e3)),
                    None if !current.is_empty() => segments.push(std::mem::take(&mut current)),
                    None => {}
                }
            }
            if !current.is_empty() {
                segments.push(current);
            }
            Some(Series {
                label: format!("{} · max {}", line.name, figures::us_unit(Nanos(line_max))),
                colour: line.colour,
                segments,
            })
        })
        .collect();
    let intervals = figures::distinct(
        lines
            .iter()
            .flat_map(|l| &l.parts)
            .map(|(_, t)| t.interval_ns.to_string()),
    );
    Chart {
        kind: PlotKind::Timeline,
        caption: format!("Largest sample per interval · {caption}"),
        x_label: format!("time into the run ({unit})"),
        y_label: "largest sample per interval (µs)".to_string(),
        x_max: (span_ns as f64 / scale).max(f64::MIN_POSITIVE),
        y_axis: YAxis::Linear {
            max: if highest_us > 0.0 {
                highest_us * 1.1
            } else {
                1.0
            },
        },
        series,
        explanation: format!(
            "The largest sample of each interval ({intervals}) against the time into the \
             run, one line per {per}; each pixel column shows the largest of its intervals, \
             and gaps are intervals without samples."
        ),
    }
}

/// The largest sample in each of [`COLUMNS`] columns over `span_ns`; an interval wider
/// than a column fills every column it covers.
fn column_maxima(parts: &[(Nanos, &Timeline)], span_ns: i64) -> Vec<Option<i64>> {
    let mut columns: Vec<Option<i64>> = vec![None; COLUMNS];
    if span_ns <= 0 {
        return columns;
    }
    let to_column = |t: i64| (t.max(0) as u128 * COLUMNS as u128 / span_ns as u128) as usize;
    for (offset, timeline) in parts {
        let width = timeline.interval_ns.0.max(1);
        for (i, value) in timeline.max_ns.iter().enumerate() {
            let Some(value) = value else { continue };
            let start = offset.0 + i as i64 * width;
            let first = to_column(start).min(COLUMNS - 1);
            // The column holding the interval's last nanosecond.
            let last = to_column(start + width - 1).clamp(first, COLUMNS - 1);
            for column in &mut columns[first..=last] {
                *column = Some(column.map_or(value.0, |c| c.max(value.0)));
            }
        }
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_widths_are_round_and_bounded() {
        assert_eq!(bin_width(1), 1);
        assert_eq!(bin_width(400_000), 1_000);
        assert_eq!(bin_width(2_283_378), 5_000);
        assert_eq!(bin_width(60_000_000_000), 200_000_000);
        for top in [1, 999, 12_345, 7_777_777, 60_000_000_000] {
            assert!(top / bin_width(top) < MAX_BINS);
        }
    }

    #[test]
    fn empty_runs_of_bins_keep_only_their_ends() {
        let points = bin_points(&[0, 3, 0, 0, 0, 0, 7, 0], |b| b as f64);
        assert_eq!(points, vec![(1.0, 3.0), (2.0, 0.5), (5.0, 0.5), (6.0, 7.0)]);
        assert!(bin_points(&[0, 0], |b| b as f64).is_empty());
    }

    #[test]
    fn profiles_fall_from_one_to_one_sample() {
        let buckets = [(1_000, 5), (2_000, 3), (3_000, 2)];
        let points = profile_points(&buckets, 10, 3.06);
        assert_eq!(points.first(), Some(&(1.0, 1.0)));
        assert_eq!(points.last(), Some(&(3.0, 0.2)));
        assert!(points.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    #[test]
    fn profiles_keep_two_points_per_column() {
        let buckets: Vec<(u64, u64)> = (1..=100_000).map(|v| (v, 1)).collect();
        let points = profile_points(&buckets, 100_000, 100.0);
        assert!(points.len() <= 2 * COLUMNS, "{}", points.len());
    }

    #[test]
    fn timelines_keep_each_columns_largest() {
        let timeline = Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: (0..86_400).map(|i| Some(Nanos(i % 1_000))).collect(),
            count: vec![1; 86_400],
        };
        let columns = column_maxima(&[(Nanos::ZERO, &timeline)], 86_400_000_000_000);
        assert_eq!(columns.len(), COLUMNS);
        assert!(columns.iter().all(|c| c.is_some()));
        assert_eq!(columns.iter().flatten().max(), Some(&999));
    }

    #[test]
    fn wide_intervals_fill_their_columns_and_gaps_stay_empty() {
        let timeline = Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: vec![Some(Nanos(5)), None, Some(Nanos(7))],
            count: vec![1, 0, 1],
        };
        let columns = column_maxima(&[(Nanos::ZERO, &timeline)], 3_000_000_000);
        assert_eq!(columns[0], Some(5));
        assert_eq!(columns[COLUMNS / 3 - 1], Some(5));
        assert_eq!(columns[COLUMNS / 2], None);
        assert_eq!(columns[COLUMNS - 1], Some(7));
    }

    #[test]
    fn time_units_follow_the_span() {
        assert_eq!(time_unit(Nanos::from_secs(30)).0, "s");
        assert_eq!(time_unit(Nanos::from_secs(3_600)).0, "min");
        assert_eq!(time_unit(Nanos::from_secs(86_400)).0, "h");
    }
}
