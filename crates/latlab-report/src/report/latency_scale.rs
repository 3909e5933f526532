//! The latency axis of the plots: linear, or logarithmic when one far-out sample would
//! squeeze the body of the distribution into a few pixels. A 9 ms spike on a linear
//! axis leaves a 5–60 µs body half a percent of the width; on a log axis (the log-log
//! histogram of the realfeel benchmark) every decade gets the same width, so body and
//! tail are both seen. One choice holds for every plot of a report's figure set.
//!
//! The log histogram's bins are equal on the log axis ([`BINS_PER_DECADE`]), but never
//! narrower than the data's own resolution: a histogram imported at 1 µs resolution
//! would otherwise show a comb of empty bins between its values.

use super::figures;
use super::LatencyAxis;
use latlab_model::Nanos;

/// The automatic rule: a log axis when the largest sample exceeds this many times p99.
pub(crate) const TAIL_RATIO: u32 = 10;

/// Bins per decade of a log histogram: at 20 µs a bin is about 1 µs wide, OSADL's bin.
pub(crate) const BINS_PER_DECADE: u32 = 50;

/// How the latency axis of a report's plots is drawn, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencyScale {
    /// True for a log axis.
    pub log: bool,
    /// Why this scale, in one clause for the axis and the caption.
    pub reason: String,
}

impl LatencyScale {
    /// The scale for lines with these (largest sample, p99) figures: `axis` when it is
    /// not [`LatencyAxis::Auto`], else log when the largest maximum exceeds
    /// [`TAIL_RATIO`] times the largest p99.
    pub fn choose(
        axis: LatencyAxis,
        figures: impl IntoIterator<Item = (Option<Nanos>, Option<Nanos>)>,
    ) -> LatencyScale {
        let (max, p99) = figures
            .into_iter()
            .fold((None, None), |(max, p99), (m, p)| (max.max(m), p99.max(p)));
        match axis {
            LatencyAxis::Log => LatencyScale {
                log: true,
                reason: "log scale, as asked".to_string(),
            },
            LatencyAxis::Linear => LatencyScale {
                log: false,
                reason: "linear, as asked".to_string(),
            },
            LatencyAxis::Auto => match (max, p99) {
                (Some(max), Some(p99)) if p99.0 > 0 && max.0 > TAIL_RATIO as i64 * p99.0 => {
                    LatencyScale {
                        log: true,
                        reason: format!(
                            "log scale as max {} > {TAIL_RATIO} × p99 {}",
                            figures::us_unit(max),
                            figures::us_unit(p99)
                        ),
                    }
                }
                _ => LatencyScale {
                    log: false,
                    reason: format!("linear as max ≤ {TAIL_RATIO} × p99"),
                },
            },
        }
    }
}

/// The power of ten at or below `value` (> 0).
pub(crate) fn decade_floor(value: f64) -> f64 {
    10f64.powf(value.log10().floor())
}

/// The edges of a log histogram's bins, in ns, ascending: bin `i` holds values in
/// `edges[i]..edges[i + 1]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogBins {
    edges: Vec<u64>,
}

impl LogBins {
    /// Bins from the decade below the smallest positive value of `lines` (buckets as
    /// (value ns, count), ascending) past the largest, [`BINS_PER_DECADE`] per decade,
    /// each a whole number of the data's resolution wide.
    pub fn covering(lines: &[Vec<(u64, u64)>]) -> LogBins {
        let positive = || lines.iter().flatten().map(|&(v, _)| v).filter(|&v| v > 0);
        let lowest = positive().min().unwrap_or(1);
        let highest = positive().max().unwrap_or(1);
        let start = (decade_floor(lowest as f64) as u64).max(1);
        // A resolution is no coarser than the smallest value (a line of two far-apart
        // samples has one wide gap); so capped, it divides `start`.
        let step = resolution(lines).min(start);
        // Edges are multiples of the resolution: a value of k × step (which a bucket
        // reports up to 0.1 % higher) lies in the bin its true value does.
        let snap = |edge: f64| ((edge / step as f64).ceil() as u64).max(1) * step;
        let mut edges = vec![start];
        let mut i = 1;
        while *edges.last().unwrap_or(&0) <= highest {
            let next = snap(start as f64 * 10f64.powf(i as f64 / BINS_PER_DECADE as f64));
            let last = *edges.last().unwrap_or(&0);
            edges.push(next.max(last + step));
            i += 1;
        }
        LogBins { edges }
    }

    /// How many bins.
    pub fn len(&self) -> usize {
        self.edges.len() - 1
    }

    /// The bin holding `value` (ns), `None` below the first edge (0 on a log axis).
    pub fn bin(&self, value: u64) -> Option<usize> {
        let after = self.edges.partition_point(|&edge| edge <= value);
        (after > 0).then(|| (after - 1).min(self.len() - 1))
    }

    /// The geometric centre of bin `i`, in µs, where its point is drawn on a log axis.
    pub fn centre_us(&self, i: usize) -> f64 {
        (self.edges[i] as f64 * self.edges[i + 1] as f64).sqrt() / 1e3
    }

    /// The first edge, in µs: the start of the axis.
    pub fn start_us(&self) -> f64 {
        self.edges[0] as f64 / 1e3
    }

    /// The last edge, in µs.
    pub fn end_us(&self) -> f64 {
        self.edges[self.edges.len() - 1] as f64 / 1e3
    }
}

/// The data's resolution in ns: the smallest gap between two values of a line, rounded
/// to 1, 2 or 5 × 10ⁿ (1000 for a histogram kept in whole µs, 1 for latlab's own).
fn resolution(lines: &[Vec<(u64, u64)>]) -> u64 {
    let gap = lines
        .iter()
        .flat_map(|buckets| buckets.windows(2).map(|w| w[1].0 - w[0].0))
        .filter(|&gap| gap > 0)
        .min()
        .unwrap_or(1);
    let decade = decade_floor(gap as f64);
    // The nearest of 1, 2, 5 and 10 × decade, measured on a log scale.
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .min_by(|a, b| {
            let distance = |x: f64| (x / gap as f64).ln().abs();
            distance(*a).total_cmp(&distance(*b))
        })
        .map_or(1, |step| step.round() as u64)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_far_tail_picks_the_log_axis_and_says_why() {
        let body = (Some(Nanos(60_000)), Some(Nanos(50_000)));
        let spiked = (Some(Nanos(10_000_000)), Some(Nanos(55_000)));
        let linear = LatencyScale::choose(LatencyAxis::Auto, [body]);
        assert!(!linear.log);
        assert_eq!(linear.reason, "linear as max ≤ 10 × p99");
        let log = LatencyScale::choose(LatencyAxis::Auto, [body, spiked]);
        assert!(log.log);
        assert_eq!(
            log.reason,
            "log scale as max 10000.000 µs > 10 × p99 55.000 µs"
        );
        assert!(LatencyScale::choose(LatencyAxis::Log, [body]).log);
        assert!(!LatencyScale::choose(LatencyAxis::Linear, [spiked]).log);
        // Unknown figures, or a p99 of 0 (a log axis has no 0): linear.
        assert!(!LatencyScale::choose(LatencyAxis::Auto, [(Some(Nanos(9)), None)]).log);
        assert!(!LatencyScale::choose(LatencyAxis::Auto, [(Some(Nanos(9)), Some(Nanos(0)))]).log);
    }

    #[test]
    fn log_bins_start_a_decade_below_and_cover_the_largest() {
        let bins = LogBins::covering(&[vec![(5_003, 1), (10_000_000, 1)]]);
        assert_eq!(bins.start_us(), 1.0);
        assert!(bins.end_us() > 10_000.0);
        assert_eq!(bins.bin(5_003).map(|b| bins.edges[b] <= 5_003), Some(true));
        assert_eq!(bins.bin(0), None);
        assert_eq!(bins.bin(10_000_000), Some(bins.len() - 1));
        assert!(bins.len() <= 5 * BINS_PER_DECADE as usize);
    }

    #[test]
    fn whole_microsecond_data_leaves_no_empty_bin_between_its_values() {
        // cyclictest's 1 µs buckets as HdrHistogram reports them: up to 0.1 % high.
        let buckets: Vec<(u64, u64)> = (1..=80u64)
            .map(|us| (us * 1_000 + us * 1_000 / 2_048, 1))
            .collect();
        assert_eq!(resolution(std::slice::from_ref(&buckets)), 1_000);
        let bins = LogBins::covering(std::slice::from_ref(&buckets));
        let mut counts = vec![0; bins.len()];
        for &(value, count) in &buckets {
            counts[bins.bin(value).unwrap()] += count;
        }
        let first = counts.iter().position(|&c| c > 0).unwrap();
        assert!(counts[first..].iter().all(|&c| c > 0), "{counts:?}");
    }
}
