//! The plots of a latency distribution, from histograms walked bucket by bucket, never
//! sample by sample: the OSADL-style histogram, re-binned into at most [`MAX_BINS`]
//! bins (linear) or [`BINS_PER_DECADE`] per decade (log), and the latency profile, at
//! most two points per pixel column ([`COLUMNS`](super::chart::COLUMNS)).

use super::chart::{latency_axis, latency_label, scale_sentence, Axis, Chart, Series};
use super::figures;
use super::latency_scale::{decade_floor, LatencyScale, LogBins, BINS_PER_DECADE};
use super::PlotKind;
use latlab_model::hist::LatencyHistogram;
use latlab_model::Nanos;

/// Most bins of a histogram plot (OSADL's 1 µs bins up to 500 µs of latency).
pub(crate) const MAX_BINS: u64 = 500;

/// Where a histogram's empty bins are drawn: below one sample, on the axis.
const EMPTY_BIN: f64 = 0.5;

/// A histogram to draw as one line.
pub(crate) struct HistogramLine<'a> {
    /// Its name in the legend.
    pub name: String,
    /// Its palette index.
    pub colour: usize,
    /// The samples.
    pub histogram: &'a LatencyHistogram,
    /// The largest sample.
    pub max: Option<Nanos>,
}

/// The legend entry of a histogram line: name, samples and worst case; on a log axis,
/// the samples of 0 it cannot show.
fn histogram_label(line: &HistogramLine, scale: &LatencyScale) -> String {
    let max = line
        .max
        .map_or_else(|| figures::MISSING.to_string(), figures::us_unit);
    // Samples known only as bounds have no bin: said in the legend.
    let beyond = match line.histogram.bounded() {
        0 => String::new(),
        n => format!(" ({n} beyond the source's range, not drawn)"),
    };
    let zeros = match line.histogram.known_buckets().first() {
        Some(&(0, n)) if scale.log => format!(" ({n} of 0 µs, left of the log axis)"),
        _ => String::new(),
    };
    format!(
        "{} · {} samples{beyond}{zeros} · max {max}",
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

/// Bins of a histogram plot: equal on a linear axis, or equal on a log one.
enum Bins {
    /// `count` bins of `width` ns from 0.
    Linear { width: u64, count: usize },
    /// Log bins.
    Log(LogBins),
}

impl Bins {
    fn len(&self) -> usize {
        match self {
            Bins::Linear { count, .. } => *count,
            Bins::Log(bins) => bins.len(),
        }
    }

    /// The bin of `value` ns; `None` for 0 on a log axis.
    fn of(&self, value: u64) -> Option<usize> {
        match self {
            Bins::Linear { width, count } => Some(((value / width) as usize).min(count - 1)),
            Bins::Log(bins) => bins.bin(value),
        }
    }

    /// Where bin `i`'s point is drawn, in µs.
    fn centre(&self, i: usize) -> f64 {
        match self {
            Bins::Linear { width, .. } => (i as f64 + 0.5) * *width as f64 / 1e3,
            Bins::Log(bins) => bins.centre_us(i),
        }
    }
}

/// OSADL-style histogram: samples per bin (log y) against latency, on a linear axis
/// with bins of equal width, or on a log axis with bins of equal width on it (the
/// log-log histogram).
pub(crate) fn histogram(
    caption: String,
    per: &str,
    lines: Vec<HistogramLine>,
    scale: &LatencyScale,
) -> Chart {
    let buckets: Vec<Vec<(u64, u64)>> = lines.iter().map(|l| l.histogram.known_buckets()).collect();
    let top_ns = buckets
        .iter()
        .filter_map(|b| b.last().map(|(v, _)| *v))
        .max()
        .unwrap_or(1)
        .max(1);
    let (bins, x_axis, bin_name) = if scale.log {
        let bins = LogBins::covering(&buckets);
        let axis = Axis::Log {
            min: bins.start_us(),
            max: bins.end_us() * 1.1,
        };
        let name = format!("bin (1/{} decade, log scale)", BINS_PER_DECADE);
        (Bins::Log(bins), axis, name)
    } else {
        let width = bin_width(top_ns);
        let count = (top_ns / width + 1) as usize;
        let axis = Axis::Linear {
            max: count as f64 * width as f64 / 1e3,
        };
        let name = format!("{} bin (log scale)", Nanos(width as i64));
        (Bins::Linear { width, count }, axis, name)
    };
    let mut highest = 1u64;
    let series = lines
        .iter()
        .zip(&buckets)
        .map(|(line, buckets)| {
            let mut counts = vec![0u64; bins.len()];
            for &(value, count) in buckets {
                if let Some(bin) = bins.of(value) {
                    counts[bin] += count;
                }
            }
            highest = highest.max(counts.iter().copied().max().unwrap_or(0));
            Series {
                label: histogram_label(line, scale),
                colour: line.colour,
                segments: vec![bin_points(&counts, |bin| bins.centre(bin))],
                marks: Vec::new(),
            }
        })
        .collect();
    Chart {
        name: PlotKind::Histogram.name(),
        caption: format!("Latency histogram · {caption}"),
        x_label: format!("{}{}", latency_label(scale), worst_case(&lines)),
        y_label: format!("samples per {bin_name}"),
        x_axis,
        y_axis: Axis::Log {
            min: EMPTY_BIN,
            max: highest as f64 * 2.0,
        },
        series,
        explanation: format!(
            "OSADL-style latency histogram, one line per {per}: samples per {bin_name} \
             against latency; bins without samples lie on the axis.{}",
            scale_sentence(scale)
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

/// Latency profile: the fraction of samples at or above each latency (log y), drawn
/// as the step function it is.
pub(crate) fn profile(
    caption: String,
    per: &str,
    lines: Vec<HistogramLine>,
    scale: &LatencyScale,
) -> Chart {
    let buckets: Vec<Vec<(u64, u64)>> = lines.iter().map(|l| l.histogram.buckets()).collect();
    let top_us = buckets
        .iter()
        .filter_map(|b| b.last().map(|(v, _)| *v as f64 / 1e3))
        .fold(0.001, f64::max);
    let lowest_us = buckets
        .iter()
        .flatten()
        .map(|&(v, _)| v)
        .filter(|&v| v > 0)
        .min()
        .map_or(1.0, |v| v as f64 / 1e3);
    let x_axis = latency_axis(scale, lowest_us, top_us);
    let most_samples = lines.iter().map(|l| l.histogram.len()).max().unwrap_or(1);
    // Every decade down to one sample is labelled: the axis ends at a power of ten.
    let y_min = decade_floor(0.5 / most_samples.max(1) as f64) * 0.999;
    let series = lines
        .iter()
        .zip(&buckets)
        .map(|(line, buckets)| Series {
            label: histogram_label(line, scale),
            colour: line.colour,
            segments: vec![profile_points(buckets, line.histogram.len(), x_axis, y_min)],
            marks: Vec::new(),
        })
        .collect();
    Chart {
        name: PlotKind::Profile.name(),
        caption: format!("Latency profile · {caption}"),
        x_label: format!("{}{}", latency_label(scale), worst_case(&lines)),
        y_label: "fraction of samples ≥ latency (log scale)".to_string(),
        x_axis,
        y_axis: Axis::Log {
            min: y_min,
            max: 1.5,
        },
        series,
        explanation: format!(
            "Latency profile (reverse cumulative distribution), one line per {per}: the \
             fraction of samples at or above each latency, on a log scale from 1 down to \
             one sample, as steps: a line drops where samples lie and is flat between \
             them. A line crosses 10⁻³ at its p99.9 and 10⁻⁴ at its p99.99.{}",
            scale_sentence(scale)
        ),
    }
}

/// The profile of one histogram as steps: flat at the fraction of samples at or above
/// each bucket up to it, then down by the bucket's share. At most two points per
/// column: where the line enters it and where it leaves it. Buckets of 0 have no place
/// on a log axis: the line starts at the first bucket it can show. After the last
/// sample the line drops to `floor`, the bottom of the fraction axis.
fn profile_points(buckets: &[(u64, u64)], samples: u64, axis: Axis, floor: f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut remaining = samples;
    let mut current = usize::MAX;
    for &(value, count) in buckets {
        let x = value as f64 / 1e3;
        let before = remaining as f64 / samples as f64;
        remaining = remaining.saturating_sub(count);
        if matches!(axis, Axis::Log { .. }) && value == 0 {
            continue;
        }
        // After the last sample nothing is at or above: the line ends on the axis.
        let after = if remaining == 0 {
            floor
        } else {
            remaining as f64 / samples as f64
        };
        let col = axis.column(x);
        if col == current {
            if let Some(last) = points.last_mut() {
                *last = (x, after);
            }
        } else {
            points.push((x, before));
            points.push((x, after));
            current = col;
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart::COLUMNS;

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
    fn profiles_fall_in_steps_from_one_to_the_axis() {
        let buckets = [(1_000, 5), (2_000, 3), (3_000, 2)];
        let points = profile_points(&buckets, 10, Axis::Linear { max: 3.06 }, 1e-3);
        assert_eq!(
            points,
            vec![
                (1.0, 1.0),
                (1.0, 0.5),
                (2.0, 0.5),
                (2.0, 0.2),
                (3.0, 0.2),
                (3.0, 1e-3)
            ]
        );
    }

    #[test]
    fn profiles_on_a_log_axis_leave_out_zeros_and_keep_two_points_per_column() {
        let buckets = [(0, 5), (1_000, 3), (10_000_000, 2)];
        let axis = Axis::Log {
            min: 0.1,
            max: 20_000.0,
        };
        let points = profile_points(&buckets, 10, axis, 1e-3);
        assert_eq!(points[0], (1.0, 0.5), "{points:?}");
        let buckets: Vec<(u64, u64)> = (1..=100_000).map(|v| (v * 100, 1)).collect();
        let points = profile_points(&buckets, 100_000, axis, 1e-5);
        assert!(points.len() <= 2 * COLUMNS, "{}", points.len());
    }

    #[test]
    fn profiles_keep_two_points_per_column() {
        let buckets: Vec<(u64, u64)> = (1..=100_000).map(|v| (v, 1)).collect();
        let points = profile_points(&buckets, 100_000, Axis::Linear { max: 100.0 }, 1e-5);
        assert!(points.len() <= 2 * COLUMNS, "{}", points.len());
    }
}
