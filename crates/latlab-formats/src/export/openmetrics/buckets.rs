//! The histogram buckets of the Prometheus exports: bounds on one log-spaced lattice,
//! fine enough that Prometheus's `histogram_quantile` estimates a percentile within
//! 6 %, and cumulative counts read from each stream's HdrHistogram.

use latlab_model::hist::LatencyHistogram;
use latlab_model::run::Stream;

/// Bounds per decade: consecutive bounds lie 10^(1/40) ≈ 5.9 % apart. Prometheus's
/// `histogram_quantile` interpolates linearly inside the bucket that holds the rank,
/// where the sample itself also lies (both are the rank's), so its estimate is off by at
/// most the bucket's width: 6 %, where the 1-2-5 steps of most exporters give 150 %.
const BOUNDS_PER_DECADE: i32 = 40;

/// The lattice's `k`-th bound in ns: 10^(k/40) ns, to three significant digits (bounds
/// a reader can name, `le="0.0000422"`), to the whole ns below 100 ns (samples are whole
/// ns; equal neighbours there are dropped by [`span`]).
fn lattice(k: i32) -> u64 {
    let raw = 10f64.powf(f64::from(k) / f64::from(BOUNDS_PER_DECADE));
    let digits = raw.log10().floor() as i32;
    let scale = 10u64.pow((digits - 2).max(0) as u32);
    ((raw / scale as f64).round() as u64 * scale).max(1)
}

/// One stream's samples, as its buckets count them.
pub(super) struct StreamValues<'a> {
    histogram: &'a LatencyHistogram,
    /// The stream's exact minimum and maximum (0 and no limit when unknown, and never
    /// below 0).
    low: u64,
    high: u64,
    /// (value in ns, count), ascending: the HdrHistogram's buckets of known values,
    /// each read at its highest value (within 0.1 % of its samples, as latlab's
    /// percentiles read it) kept within the stream's exact minimum and maximum, which
    /// no sample passes; samples below zero (early wakes) are at 0.
    values: Vec<(u64, u64)>,
}

impl<'a> StreamValues<'a> {
    /// The samples of `stream`, whose histogram is `histogram`.
    pub(super) fn new(stream: &'a Stream, histogram: &'a LatencyHistogram) -> Self {
        let low = stream.stats.min_ns.map_or(0, |m| m.0.max(0) as u64);
        let high = stream.stats.max_ns.map_or(u64::MAX, |m| m.0.max(0) as u64);
        let values = histogram
            .known_buckets()
            .into_iter()
            .map(|(value, count)| (value.clamp(low, high.max(low)), count))
            .collect();
        StreamValues {
            histogram,
            low,
            high,
            values,
        }
    }

    /// The samples of known value at or below each bound. Samples known only as
    /// bounds ("at least N": a source's overflow bucket, samples beyond the histogram's
    /// range) are at no finite bound: where they lie between their bound and the
    /// stream's maximum is not known, so they are counted in `+Inf` only.
    pub(super) fn cumulative(&self, bounds: &[u64]) -> Vec<u64> {
        let mut below = 0;
        let mut next = self.values.iter().peekable();
        bounds
            .iter()
            .map(|&bound| {
                while let Some(&&(value, count)) = next.peek() {
                    if value > bound {
                        break;
                    }
                    below += count;
                    next.next();
                }
                below
            })
            .collect()
    }

    /// Where what is known of the samples ends: the lowest bound of those known only as
    /// bounds, else the largest sample; `None` without samples.
    fn known_up_to(&self) -> Option<u64> {
        self.lowest_bound()
            .or_else(|| self.values.last().map(|&(v, _)| v))
    }

    /// The lowest value a sample known only as a bound may have, when it has any: its
    /// bound within the stream's exact extremes, as latlab's percentiles read it.
    fn lowest_bound(&self) -> Option<u64> {
        let lowest = self.histogram.bounds().map(|b| b.at_least_ns).min()?;
        Some(lowest.clamp(self.low, self.high.max(self.low)))
    }
}

/// The bounds shared by every stream of a Run, on the lattice: from the bound just
/// below the smallest positive sample to the first at or above where what is known of
/// the samples ends, so the bucket holding any sample has both its edges written. That
/// end is a stream's largest sample, or, for a stream with samples known only as
/// bounds ("at least N"), the lowest of those bounds: its samples above are counted in
/// `+Inf` only, and `histogram_quantile` of a rank among them gives that bound, what
/// latlab reports, rather than a value nobody measured. Empty when no stream has a
/// sample above 0.
pub(super) fn span(streams: &[&StreamValues]) -> Vec<u64> {
    let Some(highest) = streams.iter().filter_map(|s| s.known_up_to()).max() else {
        return Vec::new();
    };
    let lowest = streams
        .iter()
        .flat_map(|s| s.values.iter().map(|&(v, _)| v).chain(s.lowest_bound()))
        .filter(|&v| v > 0 && v <= highest)
        .min();
    let Some(lowest) = lowest else {
        return Vec::new();
    };
    let mut k = first_at_or_above(lowest);
    while k > 0 && lattice(k) >= lowest {
        k -= 1;
    }
    let mut bounds = vec![lattice(k)];
    while bounds.last().is_some_and(|&b| b < highest) {
        k += 1;
        let bound = lattice(k);
        if bounds.last() != Some(&bound) {
            bounds.push(bound);
        }
    }
    bounds
}

/// The smallest lattice index whose bound is at or above `ns` (0 for `ns` ≤ 1).
fn first_at_or_above(ns: u64) -> i32 {
    // A guess from the logarithm, corrected for the rounding of bounds.
    let mut k = ((ns.max(1) as f64).log10() * f64::from(BOUNDS_PER_DECADE)).floor() as i32;
    k = (k - 2).max(0);
    while lattice(k) < ns {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_bounds_are_readable_and_at_most_6_percent_apart() {
        assert_eq!(lattice(0), 1);
        assert_eq!(lattice(120), 1_000);
        assert_eq!(lattice(160), 10_000);
        assert_eq!(lattice(161), 10_600);
        assert_eq!(lattice(200), 100_000);
        for k in 80..400 {
            let (a, b) = (lattice(k), lattice(k + 1));
            assert!(b > a, "{k}: {a} {b}");
            assert!((b as f64) / (a as f64) <= 1.066, "{k}: {a} {b}");
        }
    }

    #[test]
    fn the_first_bound_at_or_above_a_value_is_found_near_any_bound() {
        for k in 0..480 {
            let bound = lattice(k);
            let first = first_at_or_above(bound);
            assert_eq!(lattice(first), bound, "{k}");
            assert!(lattice(first_at_or_above(bound + 1)) > bound, "{k}");
        }
    }
}
