//! Comparing runs: the seeds' table shape (rows = runs; min, mean, p50, p99, p99.9,
//! max, samples, missed periods) and a regression verdict that accounts for sampling
//! noise.
//!
//! Method, for a percentile metric: each run's value comes with a 95 % distribution-
//! free confidence interval from order statistics — the ranks n·q ± 1.96·√(n·q·(1−q))
//! of its merged histogram (the normal approximation to the binomial distribution of
//! the number of samples below the true quantile). A new run regresses when the lower
//! end of its interval lies above the upper end of the base's by more than the
//! tolerance; it improves in the mirror case; anything else is "no significant change".
//! The mean gets a 95 % interval from its standard error. The maximum has no interval:
//! it is compared as it is, and said so.

use latlab_model::hist::{HistogramError, LatencyHistogram};
use latlab_model::run::Run;
use latlab_model::threshold::Metric;
use latlab_model::Nanos;

/// The z value of a two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// One run, all its streams merged.
#[derive(Debug, Clone)]
pub struct RunFigures {
    /// Run id.
    pub id: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Scenario, if any.
    pub scenario: Option<String>,
    /// Samples over all streams.
    pub samples: u64,
    /// Missed periods over all streams.
    pub missed_periods: u64,
    /// Smallest sample.
    pub min: Option<Nanos>,
    /// Mean over all samples.
    pub mean: Option<f64>,
    /// Population standard deviation over all samples.
    pub stddev: Option<f64>,
    /// Largest sample.
    pub max: Option<Nanos>,
    histogram: LatencyHistogram,
}

impl RunFigures {
    /// Merges a run's streams.
    pub fn of(run: &Run) -> Result<RunFigures, HistogramError> {
        let mut histogram = LatencyHistogram::new();
        let (mut samples, mut missed) = (0u64, 0u64);
        let (mut sum, mut sum_sq) = (0f64, 0f64);
        for s in &run.streams {
            histogram.merge(&s.decode_histogram()?);
            samples += s.samples;
            missed += s.missed_periods;
            if let (Some(mean), Some(sd)) = (s.stats.mean_ns, s.stats.stddev_ns) {
                let n = s.samples as f64;
                sum += mean * n;
                sum_sq += (sd * sd + mean * mean) * n;
            }
        }
        let mean = (samples > 0).then(|| sum / samples as f64);
        let stddev = mean.map(|m| (sum_sq / samples as f64 - m * m).max(0.0).sqrt());
        Ok(RunFigures {
            id: run.id.clone(),
            host: run.host.hostname.clone(),
            kernel: run.host.kernel_release.clone(),
            scenario: run.scenario.clone(),
            samples,
            missed_periods: missed,
            min: run.streams.iter().filter_map(|s| s.stats.min_ns).min(),
            mean,
            stddev,
            max: run.streams.iter().filter_map(|s| s.stats.max_ns).max(),
            histogram,
        })
    }

    /// Every stream's histogram, merged.
    pub fn histogram(&self) -> &LatencyHistogram {
        &self.histogram
    }

    /// A percentile of the merged samples (0–100), clamped to the exact min and max.
    pub fn percentile(&self, p: f64) -> Option<Nanos> {
        let (min, max) = (self.min?, self.max?);
        Some(Nanos(self.histogram.percentile(p) as i64).clamp(min, max))
    }

    /// The metric's value and its 95 % interval (`None` interval for the maximum).
    pub fn estimate(&self, metric: Metric) -> Option<Estimate> {
        let n = self.samples;
        if n == 0 {
            return None;
        }
        match metric {
            Metric::Max => self.max.map(|m| Estimate {
                value: m.0 as f64,
                interval: None,
            }),
            Metric::Mean => {
                let (mean, sd) = (self.mean?, self.stddev?);
                let half = Z95 * sd / (n as f64).sqrt();
                Some(Estimate {
                    value: mean,
                    interval: Some((mean - half, mean + half)),
                })
            }
            Metric::Percentile(p) => {
                let q = p / 100.0;
                let centre = n as f64 * q;
                let half = Z95 * (n as f64 * q * (1.0 - q)).sqrt();
                let rank = |r: f64| (r.clamp(1.0, n as f64)) as u64;
                let (min, max) = (self.min?.0, self.max?.0);
                let at = |r: u64| (self.histogram.value_at_rank(r) as i64).clamp(min, max) as f64;
                Some(Estimate {
                    value: self.percentile(p)?.0 as f64,
                    interval: Some((
                        at(rank((centre - half).floor())),
                        at(rank((centre + half).ceil() + 1.0)),
                    )),
                })
            }
        }
    }
}

/// A metric's value with its confidence interval, in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The value.
    pub value: f64,
    /// Lower and upper end of the 95 % interval, when one exists.
    pub interval: Option<(f64, f64)>,
}

/// What a comparison concluded for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Significantly worse, beyond the tolerance.
    Regression,
    /// Significantly better, beyond the tolerance.
    Improvement,
    /// Neither.
    NoSignificantChange,
}

/// One metric compared between the base and one new run.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The metric.
    pub metric: Metric,
    /// The new run's id.
    pub new_id: String,
    /// Base estimate.
    pub base: Estimate,
    /// New estimate.
    pub new: Estimate,
    /// Relative change of the values, new / base − 1.
    pub relative_change: f64,
    /// The conclusion.
    pub change: Change,
}

/// Compares `metric` between `base` and `new` with a relative `tolerance` (0.1 = 10 %).
pub fn compare(
    base: &RunFigures,
    new: &RunFigures,
    metric: Metric,
    tolerance: f64,
) -> Option<Comparison> {
    let (b, n) = (base.estimate(metric)?, new.estimate(metric)?);
    // Without intervals (the maximum) the values themselves are the bounds.
    let (b_low, b_high) = b.interval.unwrap_or((b.value, b.value));
    let (n_low, n_high) = n.interval.unwrap_or((n.value, n.value));
    let change = if n_low > b_high * (1.0 + tolerance) {
        Change::Regression
    } else if n_high < b_low * (1.0 - tolerance) {
        Change::Improvement
    } else {
        Change::NoSignificantChange
    };
    Some(Comparison {
        metric,
        new_id: new.id.clone(),
        base: b,
        new: n,
        relative_change: if b.value > 0.0 {
            n.value / b.value - 1.0
        } else {
            0.0
        },
        change,
    })
}

/// The method, in one sentence, for the output.
pub const METHOD: &str = "95 % distribution-free confidence intervals of each percentile from \
order statistics (ranks n·q ± 1.96·√(n·q·(1−q))) and of the mean from its standard error; \
a regression is a new interval entirely above the base's by more than the tolerance. \
The maximum has no interval and is compared as it is.";

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(id: &str, values: impl Iterator<Item = i64>) -> RunFigures {
        let mut histogram = LatencyHistogram::new();
        let (mut n, mut sum, mut sum_sq) = (0u64, 0f64, 0f64);
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for v in values {
            histogram.record(v);
            n += 1;
            sum += v as f64;
            sum_sq += (v as f64) * (v as f64);
            min = min.min(v);
            max = max.max(v);
        }
        let mean = sum / n as f64;
        RunFigures {
            id: id.into(),
            host: "h".into(),
            kernel: "k".into(),
            scenario: None,
            samples: n,
            missed_periods: 0,
            min: Some(Nanos(min)),
            mean: Some(mean),
            stddev: Some((sum_sq / n as f64 - mean * mean).sqrt()),
            max: Some(Nanos(max)),
            histogram,
        }
    }

    /// A deterministic spread of values around `centre` (a linear congruential walk).
    fn spread(centre: i64, width: i64, n: usize, seed: u64) -> impl Iterator<Item = i64> {
        let mut x = seed;
        (0..n).map(move |_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            centre + ((x >> 33) % width as u64) as i64
        })
    }

    #[test]
    fn the_same_distribution_twice_is_no_change() {
        let a = figures("a", spread(10_000, 2_000, 20_000, 1));
        let b = figures("b", spread(10_000, 2_000, 20_000, 2));
        for metric in [
            Metric::Percentile(50.0),
            Metric::Percentile(99.9),
            Metric::Mean,
        ] {
            let c = compare(&a, &b, metric, 0.0).unwrap();
            assert_eq!(c.change, Change::NoSignificantChange, "{metric}: {c:?}");
        }
    }

    #[test]
    fn a_shifted_distribution_is_a_regression_unless_tolerated() {
        let a = figures("a", spread(10_000, 2_000, 20_000, 1));
        let b = figures("b", spread(13_000, 2_000, 20_000, 2));
        let c = compare(&a, &b, Metric::Percentile(99.0), 0.05).unwrap();
        assert_eq!(c.change, Change::Regression);
        assert!(c.relative_change > 0.2 && c.relative_change < 0.3, "{c:?}");
        let tolerated = compare(&a, &b, Metric::Percentile(99.0), 0.5).unwrap();
        assert_eq!(tolerated.change, Change::NoSignificantChange);
        let back = compare(&b, &a, Metric::Percentile(99.0), 0.05).unwrap();
        assert_eq!(back.change, Change::Improvement);
    }

    #[test]
    fn few_samples_give_wide_intervals() {
        let a = figures("a", spread(10_000, 2_000, 30, 1));
        let b = figures("b", spread(10_500, 2_000, 30, 2));
        let c = compare(&a, &b, Metric::Percentile(90.0), 0.0).unwrap();
        let (low, high) = c.new.interval.unwrap();
        assert!(low <= c.new.value && c.new.value <= high);
        assert_eq!(c.change, Change::NoSignificantChange);
    }

    #[test]
    fn the_maximum_has_no_interval() {
        let a = figures("a", spread(10_000, 2_000, 1_000, 1));
        let e = a.estimate(Metric::Max).unwrap();
        assert_eq!(e.interval, None);
        assert_eq!(e.value, a.max.unwrap().0 as f64);
    }
}
