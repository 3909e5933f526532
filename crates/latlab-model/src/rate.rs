//! How often samples exceed a latency: the rate per hour of samples above a level L,
//! with its exact (Garwood) Poisson interval, the mean time between such spikes, and
//! how long a run must be to see one with a given confidence — "how long must I run?".
//!
//! Spikes above a level are taken as a Poisson process over the measured time (rare,
//! independent events at a steady rate): k seen in T give the rate k/T, and the
//! interval of every rate under which seeing k was not too unlikely. Runs of one series
//! add up: their counts and their times. The model fails for spikes that come in
//! bursts (one disturbance, many late wake-ups): the count is then of samples, not of
//! disturbances, and the interval is too narrow — said in docs/compare-and-report.md.

use crate::hist::LatencyHistogram;
use crate::run::{Run, Stream};
use crate::threshold::Metric;
use crate::Nanos;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The confidence of intervals and durations unless asked otherwise.
pub const CONFIDENCE: f64 = 0.95;

/// The level spikes are counted above when a run names none.
pub const DEFAULT_LEVEL: Nanos = Nanos(100_000);

/// The level a run's spike rates are counted above: the `--spike` level it kept
/// samples above, else its `max` threshold, else [`DEFAULT_LEVEL`] — one level for all
/// its streams, so that their rates add up.
pub fn level_of(run: &Run) -> Nanos {
    let spike = run.streams.iter().find_map(|s| s.spikes.threshold_ns);
    let max = run
        .thresholds
        .iter()
        .find(|t| t.metric == Metric::Max)
        .map(|t| t.limit_ns);
    spike.or(max).unwrap_or(DEFAULT_LEVEL)
}

/// Nanoseconds in an hour.
const HOUR_NS: f64 = 3_600e9;

/// How often samples were above a level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpikeRate {
    /// The level: samples above it count (within the histogram's 0.1 %).
    pub above_ns: Nanos,
    /// Samples above it.
    pub count: u64,
    /// The measured time they were seen in.
    pub span_ns: Nanos,
    /// Samples above it per hour.
    pub per_hour: f64,
    /// The interval of the rate at `confidence`, two-sided.
    pub per_hour_low: f64,
    /// See `per_hour_low`.
    pub per_hour_high: f64,
    /// The interval's confidence, e.g. 0.95.
    pub confidence: f64,
}

impl SpikeRate {
    /// The rate of `count` samples above `above` in `span`; `None` without a measured
    /// time to divide by, or for a confidence outside (0, 1).
    pub fn from_count(above: Nanos, count: u64, span: Nanos, confidence: f64) -> Option<SpikeRate> {
        if span.0 <= 0 || !(confidence > 0.0 && confidence < 1.0) {
            return None;
        }
        let hours = span.0 as f64 / HOUR_NS;
        let (low, high) = poisson_interval(count, confidence)?;
        Some(SpikeRate {
            above_ns: above,
            count,
            span_ns: span,
            per_hour: count as f64 / hours,
            per_hour_low: low / hours,
            per_hour_high: high / hours,
            confidence,
        })
    }

    /// The rate of a stream's samples above `above`, counted in its histogram over its
    /// measured span; `None` when it has no histogram or no known span.
    pub fn of_stream(stream: &Stream, above: Nanos, confidence: f64) -> Option<SpikeRate> {
        let histogram = stream.histogram.as_ref()?.decode().ok()?;
        let span = stream.elapsed_ns?;
        SpikeRate::from_count(above, count_above(&histogram, above)?, span, confidence)
    }

    /// The rate of several streams or runs of one series together: their counts and
    /// times added; `None` when any has another level or confidence, or none is given.
    pub fn combined(rates: &[SpikeRate]) -> Option<SpikeRate> {
        let first = rates.first()?;
        if rates
            .iter()
            .any(|r| r.above_ns != first.above_ns || r.confidence != first.confidence)
        {
            return None;
        }
        let count = rates.iter().map(|r| r.count).sum();
        let span = rates.iter().map(|r| r.span_ns.0).sum();
        SpikeRate::from_count(first.above_ns, count, Nanos(span), first.confidence)
    }

    /// The mean time between spikes: the span over the count; `None` before the first
    /// (then it is longer than the span: [`SpikeRate::span_ns`] is its bound).
    pub fn mean_time_between(&self) -> Option<Nanos> {
        (self.count > 0).then(|| Nanos(self.span_ns.0 / self.count as i64))
    }

    /// How long a run must be to see at least one spike with probability `confidence`
    /// (1 − e^(−λt) ≥ c), taking the rate at the low end of its interval: a duration
    /// that suffices unless the rate is lower than the data allow. `None` when no spike
    /// was seen (no rate to go by: the time is unknown, longer than seen so far).
    pub fn time_to_first(&self, confidence: f64) -> Option<Nanos> {
        if self.per_hour_low <= 0.0 || !(confidence > 0.0 && confidence < 1.0) {
            return None;
        }
        let hours = -(1.0 - confidence).ln() / self.per_hour_low;
        let ns = hours * HOUR_NS;
        (ns.is_finite() && ns < i64::MAX as f64).then_some(Nanos(ns as i64))
    }

    /// Whether this rate is above `before`'s beyond both intervals: this one's low end
    /// above `before`'s high end. Below is the mirror; overlap is no difference.
    pub fn against(&self, before: &SpikeRate) -> RateChange {
        if self.per_hour_low > before.per_hour_high {
            RateChange::Higher
        } else if self.per_hour_high < before.per_hour_low {
            RateChange::Lower
        } else {
            RateChange::Same
        }
    }
}

/// The samples of `histogram` above `level` (within its 0.1 %); `None` when some are
/// known only as bounds at or below the level (a source's overflow, "at least N"):
/// whether they are above it is not known, and a count without them would be shown as
/// the rate when it is only a lower bound.
pub fn count_above(histogram: &LatencyHistogram, level: Nanos) -> Option<u64> {
    let level = level.0.max(0) as u64;
    if histogram.bounds().any(|b| b.at_least_ns <= level) {
        return None;
    }
    Some(histogram.count_at_least(level + 1))
}

/// How a rate compares with an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateChange {
    /// Higher, beyond both intervals.
    Higher,
    /// The intervals overlap.
    Same,
    /// Lower, beyond both intervals.
    Lower,
}

/// The exact two-sided interval of a Poisson mean after seeing `k` events (Garwood):
/// from χ²(α/2; 2k)/2 (0 for k = 0) to χ²(1 − α/2; 2k + 2)/2.
fn poisson_interval(k: u64, confidence: f64) -> Option<(f64, f64)> {
    let alpha = 1.0 - confidence;
    let low = match k {
        0 => 0.0,
        _ => {
            ChiSquared::new(2.0 * k as f64)
                .ok()?
                .inverse_cdf(alpha / 2.0)
                / 2.0
        }
    };
    let high = ChiSquared::new(2.0 * k as f64 + 2.0)
        .ok()?
        .inverse_cdf(1.0 - alpha / 2.0)
        / 2.0;
    (low.is_finite() && high.is_finite()).then_some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Nanos = Nanos(3_600_000_000_000);

    /// The textbook values (Garwood 1936, as tabulated by e.g. Ulm 1990): k = 0 gives
    /// 0 … 3.689, k = 1 gives 0.0253 … 5.572, k = 10 gives 4.795 … 18.39.
    #[test]
    fn the_interval_is_garwoods() {
        for (k, low, high) in [(0, 0.0, 3.689), (1, 0.0253, 5.572), (10, 4.795, 18.39)] {
            let r = SpikeRate::from_count(Nanos(100_000), k, HOUR, 0.95).unwrap();
            assert!(
                (r.per_hour_low - low).abs() < 0.001,
                "{k}: {}",
                r.per_hour_low
            );
            assert!(
                (r.per_hour_high - high).abs() < 0.01,
                "{k}: {}",
                r.per_hour_high
            );
            assert_eq!(r.per_hour, k as f64);
        }
    }

    #[test]
    fn rates_per_hour_scale_with_the_span_and_add_up_over_runs() {
        let half = Nanos(HOUR.0 / 2);
        let a = SpikeRate::from_count(Nanos(50_000), 3, half, 0.95).unwrap();
        assert_eq!(a.per_hour, 6.0);
        assert_eq!(a.mean_time_between(), Some(Nanos(HOUR.0 / 6)));
        let b = SpikeRate::from_count(Nanos(50_000), 7, half, 0.95).unwrap();
        let both = SpikeRate::combined(&[a, b]).unwrap();
        assert_eq!((both.count, both.span_ns, both.per_hour), (10, HOUR, 10.0));
        // Another level is another question: not added.
        let other = SpikeRate::from_count(Nanos(60_000), 7, half, 0.95).unwrap();
        assert_eq!(SpikeRate::combined(&[a, other]), None);
    }

    #[test]
    fn no_span_no_rate_and_no_spike_no_mean_time_or_time_to_first() {
        assert_eq!(SpikeRate::from_count(Nanos(1), 1, Nanos(0), 0.95), None);
        assert_eq!(SpikeRate::from_count(Nanos(1), 1, HOUR, 1.0), None);
        let none = SpikeRate::from_count(Nanos(1), 0, HOUR, 0.95).unwrap();
        assert_eq!(none.mean_time_between(), None);
        assert_eq!(none.time_to_first(0.95), None);
        assert!(none.per_hour_high > 3.0);
    }

    /// One spike an hour seen over ten hours: to see one with 95 % confidence takes
    /// ln 20 ≈ 3 h at the point rate, longer at the rate's low end (0.48/h: 6.2 h).
    #[test]
    fn the_time_to_a_first_spike_answers_how_long_to_run() {
        let r = SpikeRate::from_count(Nanos(1), 10, Nanos(10 * HOUR.0), 0.95).unwrap();
        let t = r.time_to_first(0.95).unwrap().0 as f64 / HOUR.0 as f64;
        assert!((6.0..6.5).contains(&t), "{t} h");
    }

    #[test]
    fn rates_differ_only_beyond_both_intervals() {
        let at = |k| SpikeRate::from_count(Nanos(1), k, HOUR, 0.95).unwrap();
        assert_eq!(at(10).against(&at(12)), RateChange::Same);
        assert_eq!(at(40).against(&at(10)), RateChange::Higher);
        assert_eq!(at(0).against(&at(20)), RateChange::Lower);
    }

    /// Samples known only as "at least 200 µs" are above 300 µs or not: no count
    /// above 300 µs, but one above 100 µs.
    #[test]
    fn samples_known_only_as_bounds_below_the_level_make_the_count_unknown() {
        let mut h = LatencyHistogram::new();
        h.record(50_000);
        h.record_overflow(200_000, 3);
        assert_eq!(count_above(&h, Nanos(300_000)), None);
        assert_eq!(count_above(&h, Nanos(100_000)), Some(3));
        assert_eq!(count_above(&h, Nanos(10_000)), Some(4));
    }
}
