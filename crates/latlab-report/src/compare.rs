//! Comparing runs: the seeds' table shape (rows = runs; min, mean, p50, p99, p99.9,
//! max, samples, missed periods), a regression verdict that accounts for sampling
//! noise, what the runs' loads achieved, and whether the runs measured alike at all.
//!
//! Method, for a percentile metric: each run's value comes with a 95 % distribution-
//! free confidence interval from order statistics — the ranks n·q ± 1.96·√(n·q·(1−q))
//! of its merged histogram (the normal approximation to the binomial distribution of
//! the number of samples below the true quantile). A new run regresses when the lower
//! end of its interval lies above the upper end of the base's by more than the
//! tolerance; it improves in the mirror case; intervals apart by less than the
//! tolerance are "within tolerance"; overlapping ones are "no significant change".
//! The mean gets a 95 % interval from its standard error. The maximum has no interval:
//! it is compared as it is, and said so. The missed-period rate (missed periods over
//! periods elapsed) gets a 95 % Wilson score interval (Wilson 1927), which stays
//! meaningful at 0 missed periods, where the normal approximation collapses to a point.

mod judged;
mod likeness;
mod loads;
mod periods;
mod runs;

pub use judged::{Judged, Tolerance};
pub use likeness::{differences, Difference};
pub use loads::{compare_loads, LoadComparison, LoadFigures, ThroughputChange};
#[cfg(test)]
pub(crate) use periods::tests::{
    phases_at as periods_tests_phases_at, sweep as periods_tests_sweep,
};
pub use periods::{by_period, PeriodRow, PeriodTable, PhaseFigures, TickModel};
pub use runs::{
    compare_runs, run_label, run_name, CompareError, Comparisons, Outcome, RunComparison, RunRef,
    Verdict, SCHEMA,
};

use latlab_model::hist::{Edge, HistogramError, LatencyHistogram};
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{Percentile, Run, Stream};
use latlab_model::threshold::Metric;
use latlab_model::Nanos;
use serde::Serialize;

/// The z value of a two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// One run, all its streams merged. A figure is `None` when any stream with samples
/// lacks it (an imported Run whose source did not have it): a merge of the streams that
/// have it would be some other figure.
#[derive(Debug, Clone)]
pub struct RunFigures {
    /// Run id.
    pub id: String,
    /// Host name, when known.
    pub host: Option<String>,
    /// Kernel release, when known.
    pub kernel: Option<String>,
    /// Scenario, if any.
    pub scenario: Option<String>,
    /// Samples over all streams (`None`: not counted, as in a published table without
    /// sample counts).
    pub samples: Option<u64>,
    /// Missed periods over all streams (`None`: not counted).
    pub missed_periods: Option<u64>,
    /// Smallest sample.
    pub min: Option<Nanos>,
    /// Mean over all samples.
    pub mean: Option<f64>,
    /// Population standard deviation over all samples.
    pub stddev: Option<f64>,
    /// Largest sample.
    pub max: Option<Nanos>,
    histogram: Option<LatencyHistogram>,
    /// Which value of a bucket stands for its samples ([`Run::bucket_edge`]).
    edge: Edge,
    /// The measured time of its streams together (`None`: a stream's is unknown).
    span: Option<Nanos>,
}

/// The sum of a figure over streams, `None` if any stream lacks it.
fn total<T: std::iter::Sum<T>>(figures: impl Iterator<Item = Option<T>>) -> Option<T> {
    figures
        .collect::<Option<Vec<T>>>()
        .map(|v| v.into_iter().sum())
}

impl RunFigures {
    /// Merges a run's streams. A published table of several rows has no figure over
    /// them all (its rows are different kernels, loads or periods, and no paper
    /// printed one): its minimum, mean, deviation and maximum are its rows' only. A
    /// table of one row has the row's figures as printed, counted or not (a row
    /// without a sample count is no stream).
    pub fn of(run: &Run) -> Result<RunFigures, HistogramError> {
        let mut figures = RunFigures::of_streams(run, |_| true)?;
        if let Some(published) = &run.published {
            figures = match published.rows.as_slice() {
                [row] => {
                    // The rows were read when the run was made: one that does not
                    // read has no figures.
                    let printed = published.figures(row).unwrap_or_default();
                    RunFigures {
                        min: figures.min.or(printed.min),
                        mean: figures.mean.or(printed.mean),
                        stddev: figures.stddev.or(printed.stddev),
                        max: figures.max.or(printed.max),
                        ..figures
                    }
                }
                _ if run.phases.len() > 1 => RunFigures {
                    min: None,
                    mean: None,
                    stddev: None,
                    max: None,
                    histogram: None,
                    ..figures
                },
                _ => figures,
            };
        }
        Ok(match run.total_samples() {
            Some(_) => figures,
            None => figures.uncounted(),
        })
    }

    /// Merges the streams of one phase of a run.
    pub fn of_phase(run: &Run, phase: &str) -> Result<RunFigures, HistogramError> {
        let figures = RunFigures::of_streams(run, |s| s.phase == phase)?;
        // A published row without a sample count is no stream: its samples are not 0.
        Ok(match run.phase_samples(phase) {
            Some(_) => figures,
            None => figures.uncounted(),
        })
    }

    /// Merges the streams of one probe of a run: the run's figures in one of its
    /// series.
    pub fn of_probe(run: &Run, probe: &str) -> Result<RunFigures, HistogramError> {
        RunFigures::of_streams(run, |s| s.probe == probe)
    }

    /// The figures with their counts unknown.
    fn uncounted(self) -> RunFigures {
        RunFigures {
            samples: None,
            missed_periods: None,
            ..self
        }
    }

    fn of_streams(run: &Run, keep: impl Fn(&Stream) -> bool) -> Result<RunFigures, HistogramError> {
        let streams: Vec<&Stream> = run.streams.iter().filter(|s| keep(s)).collect();
        let sampled: Vec<_> = streams.iter().filter(|s| s.samples > 0).collect();
        let mut histogram = Some(LatencyHistogram::new());
        for s in &streams {
            match (s.decode_histogram()?, histogram.as_mut()) {
                (Some(h), Some(merged)) => merged.merge(&h),
                (None, _) if s.samples > 0 => histogram = None,
                _ => {}
            }
        }
        let samples: u64 = streams.iter().map(|s| s.samples).sum();
        // Exact sums back from each stream's mean and deviation.
        let sum = total(
            sampled
                .iter()
                .map(|s| Some(s.stats.mean_ns? * s.samples as f64)),
        );
        let sum_sq = total(sampled.iter().map(|s| {
            let (mean, sd) = (s.stats.mean_ns?, s.stats.stddev_ns?);
            Some((sd * sd + mean * mean) * s.samples as f64)
        }));
        let mean = sum.filter(|_| samples > 0).map(|sum| sum / samples as f64);
        let stddev = mean
            .zip(sum_sq)
            .map(|(m, sq)| (sq / samples as f64 - m * m).max(0.0).sqrt());
        let extreme = |f: fn(&latlab_model::run::Statistics) -> Option<Nanos>| {
            sampled
                .iter()
                .map(|s| f(&s.stats))
                .collect::<Option<Vec<Nanos>>>()
        };
        Ok(RunFigures {
            id: run.id.clone(),
            host: run.host.as_ref().map(|h| h.hostname.clone()),
            kernel: run.host.as_ref().map(|h| h.kernel_release.clone()),
            scenario: run.scenario.clone(),
            samples: Some(samples),
            missed_periods: total(streams.iter().map(|s| s.missed_periods)),
            min: extreme(|st| st.min_ns).and_then(|v| v.into_iter().min()),
            mean,
            stddev,
            max: extreme(|st| st.max_ns).and_then(|v| v.into_iter().max()),
            histogram,
            edge: run.bucket_edge(),
            span: total(streams.iter().map(|s| s.elapsed_ns.map(|e| e.0))).map(Nanos),
        })
    }

    /// Every stream's histogram, merged; `None` when a stream had none.
    pub fn histogram(&self) -> Option<&LatencyHistogram> {
        self.histogram.as_ref()
    }

    /// A percentile of the merged samples (0–100), clamped to the exact min and max; a
    /// bound where it falls among samples known only as bounds.
    pub fn percentile(&self, p: f64) -> Option<Percentile> {
        self.histogram
            .as_ref()?
            .percentile_within(p, self.min?, self.max?, self.edge)
    }

    /// The figure's value and its 95 % interval (`None` interval for the maximum, for
    /// a mean without a known deviation, and for a bound); `Err` says why there is none.
    pub fn estimate(&self, judged: Judged) -> Result<Estimate, Unknown> {
        let n = match self.samples {
            Some(0) => return Err(Unknown::NoSamples),
            None => return Err(Unknown::Uncounted),
            Some(n) => n,
        };
        match judged {
            Judged::Latency(metric) => self.latency(metric, n),
            Judged::MissedRate => self.missed_rate(n),
            Judged::SpikeRate(level) => self.spike_rate(level),
        }
    }

    /// The rate of samples above `level` per hour, with its exact Poisson interval
    /// ([`SpikeRate`]).
    fn spike_rate(&self, level: Option<Nanos>) -> Result<Estimate, Unknown> {
        let judged = Judged::SpikeRate(level);
        let level = level.ok_or(Unknown::NotInSource(judged))?;
        let histogram = self
            .histogram
            .as_ref()
            .ok_or(Unknown::NotInSource(judged))?;
        let span = self.span.ok_or(Unknown::NotInSource(judged))?;
        // Samples known only as bounds below the level: the count is not known.
        let count = rate::count_above(histogram, level).ok_or(Unknown::NotInSource(judged))?;
        let rate = SpikeRate::from_count(level, count, span, rate::CONFIDENCE)
            .ok_or(Unknown::NotInSource(judged))?;
        Ok(Estimate {
            interval: Some((rate.per_hour_low, rate.per_hour_high)),
            ..Estimate::exact(rate.per_hour)
        })
    }

    /// The missed-period rate with its 95 % Wilson score interval (E. B. Wilson,
    /// "Probable inference, the law of succession, and statistical inference", JASA 22,
    /// 1927): for x missed of n periods, p = x/n,
    /// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n).
    fn missed_rate(&self, samples: u64) -> Result<Estimate, Unknown> {
        let missed = self
            .missed_periods
            .ok_or(Unknown::NotInSource(Judged::MissedRate))?;
        let n = (samples + missed) as f64;
        let p = missed as f64 / n;
        let z2 = Z95 * Z95;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        Ok(Estimate {
            interval: Some(((centre - half).max(0.0), (centre + half).min(1.0))),
            ..Estimate::exact(p)
        })
    }

    fn latency(&self, metric: Metric, n: u64) -> Result<Estimate, Unknown> {
        let missing = || Unknown::NotInSource(Judged::Latency(metric));
        match metric {
            Metric::Max => self
                .max
                .map(|m| Estimate::exact(m.0 as f64))
                .ok_or_else(missing),
            Metric::Mean => {
                let mean = self.mean.ok_or_else(missing)?;
                Ok(match self.stddev {
                    Some(sd) => {
                        let half = Z95 * sd / (n as f64).sqrt();
                        Estimate {
                            interval: Some((mean - half, mean + half)),
                            ..Estimate::exact(mean)
                        }
                    }
                    None => Estimate::exact(mean),
                })
            }
            Metric::Percentile(p) => {
                let histogram = self.histogram.as_ref().ok_or_else(missing)?;
                let (min, max) = (self.min.ok_or_else(missing)?, self.max.ok_or_else(missing)?);
                let centre = match histogram.percentile_within(p, min, max, self.edge) {
                    Some(Percentile::Exact(v)) => v.0 as f64,
                    Some(Percentile::AtLeast { at_least_ns }) => {
                        return Ok(Estimate {
                            bound: true,
                            ..Estimate::exact(at_least_ns.0 as f64)
                        })
                    }
                    None => return Err(Unknown::NoSamples),
                };
                let q = p / 100.0;
                let mid = n as f64 * q;
                let half = Z95 * (n as f64 * q * (1.0 - q)).sqrt();
                let rank = |r: f64| (r.clamp(1.0, n as f64)) as u64;
                let at = |r: u64| histogram.rank_within(r, min, max, self.edge);
                // An upper end among bounded samples is not known: unbounded.
                let high = match at(rank((mid + half).ceil() + 1.0)) {
                    Percentile::Exact(v) => v.0 as f64,
                    Percentile::AtLeast { .. } => f64::INFINITY,
                };
                Ok(Estimate {
                    interval: Some((at(rank((mid - half).floor())).value().0 as f64, high)),
                    ..Estimate::exact(centre)
                })
            }
        }
    }
}

/// Why a run has no estimate of a figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unknown {
    /// It has no samples.
    NoSamples,
    /// Its source did not count its samples (a published table without counts).
    Uncounted,
    /// Its source did not have the figure (an imported Run), or its probe does not
    /// count it.
    NotInSource(Judged),
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unknown::NoSamples => f.write_str("it has no samples"),
            Unknown::Uncounted => f.write_str("its source did not count its samples"),
            Unknown::NotInSource(Judged::SpikeRate(_)) => f.write_str(
                "the spike rate is unknown: its source kept no histogram or no measured time, \
                 or holds samples known only as bounds below the level",
            ),
            Unknown::NotInSource(Judged::MissedRate) => f.write_str(
                "the missed-period rate is unknown: its source did not count missed periods",
            ),
            Unknown::NotInSource(judged) => write!(
                f,
                "{} is unknown: the file it was imported from did not have it",
                judged.describe()
            ),
        }
    }
}

/// A figure's value with its confidence interval: ns for a latency, a fraction for
/// the missed-period rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The value (a lower bound when `bound`).
    pub value: f64,
    /// The value is only a lower bound: the percentile falls among samples that
    /// overflowed their source's histogram.
    pub bound: bool,
    /// Lower and upper end of the 95 % interval, when one exists (the upper end is
    /// infinite when it falls among such samples; `null` in JSON).
    pub interval: Option<(f64, f64)>,
}

impl Estimate {
    fn exact(value: f64) -> Estimate {
        Estimate {
            value,
            bound: false,
            interval: None,
        }
    }

    /// The lowest and highest the value may be.
    fn range(&self) -> (f64, f64) {
        match (self.bound, self.interval) {
            (true, _) => (self.value, f64::INFINITY),
            (false, Some(interval)) => interval,
            (false, None) => (self.value, self.value),
        }
    }
}

/// What a comparison concluded for one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Significantly worse, beyond the tolerance.
    Regression,
    /// Significantly better, beyond the tolerance.
    Improvement,
    /// Significantly different, but by no more than the tolerance.
    WithinTolerance,
    /// The intervals overlap: the difference may be noise.
    NoSignificantChange,
    /// Cannot be told: a value known only as a lower bound may lie either side.
    Undecided,
}

/// One figure compared between the base and one new run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The figure.
    pub metric: Judged,
    /// The new run's id.
    pub new_id: String,
    /// Base estimate.
    pub base: Estimate,
    /// New estimate.
    pub new: Estimate,
    /// Relative change of the values, new / base − 1 (`None` when a value is only a
    /// bound, or the base is 0).
    pub relative_change: Option<f64>,
    /// The conclusion.
    pub change: Change,
}

/// Why two runs could not be compared on a metric.
#[derive(Debug, Clone, PartialEq)]
pub struct NotComparable {
    /// The run lacking the figure.
    pub run: String,
    /// Why.
    pub reason: Unknown,
}

impl std::fmt::Display for NotComparable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {}: {}", self.run, self.reason)
    }
}

/// Compares `metric` between `base` and `new` with a `tolerance`.
pub fn compare(
    base: &RunFigures,
    new: &RunFigures,
    metric: Judged,
    tolerance: Tolerance,
) -> Result<Comparison, NotComparable> {
    let estimate = |f: &RunFigures| {
        f.estimate(metric).map_err(|reason| NotComparable {
            run: f.id.clone(),
            reason,
        })
    };
    let (b, n) = (estimate(base)?, estimate(new)?);
    // Without intervals (the maximum) the values themselves are the bounds; a bound
    // reaches up without limit.
    let (b_low, b_high) = b.range();
    let (n_low, n_high) = n.range();
    let latency = matches!(metric, Judged::Latency(_));
    let change = if n_low > tolerance.above(b_high, latency) {
        Change::Regression
    } else if n_high < tolerance.below(b_low, latency) {
        Change::Improvement
    } else if b.bound || n.bound {
        Change::Undecided
    } else if n_low > b_high || n_high < b_low {
        Change::WithinTolerance
    } else {
        Change::NoSignificantChange
    };
    Ok(Comparison {
        metric,
        new_id: new.id.clone(),
        base: b,
        new: n,
        relative_change: (b.value > 0.0 && !b.bound && !n.bound).then(|| n.value / b.value - 1.0),
        change,
    })
}

/// The method, in one sentence, for the output.
pub const METHOD: &str = "95 % distribution-free confidence intervals of each percentile from \
order statistics (ranks n·q ± 1.96·√(n·q·(1−q))), of the mean from its standard error, and \
of the missed-period rate (missed / periods elapsed) as a Wilson score interval (Wilson \
1927), of a spike rate (samples above a level per hour) as an exact Poisson interval \
(Garwood 1936); a regression is a new interval entirely above the base's by more than the tolerance, \
apart by less is within tolerance, overlapping is no significant change. \
The maximum, and a mean whose standard deviation is unknown, have no interval and are \
compared as they are; a percentile shown as ≥ is a lower bound (it falls among samples \
beyond the source's histogram range) and decides only when the other run lies clear of it. \
Missed periods and spikes often come in bursts, not one by one: read a rate's interval as a \
lower bound on the uncertainty.";

/// How the loads are compared, in one sentence, for the output.
pub const LOADS_METHOD: &str = "Loads: each phase's rate is one count over one span, with no \
interval; a load that ran in several phases of a run is also pooled over them (mean rate, \
95 % Student-t interval) and judged lower or higher only when the intervals are apart. \
Load rates are shown beside the latency verdicts and do not set the exit status.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_table_of_one_uncounted_row_has_its_printed_figures() {
        let run = latlab_model::published::reference_run("mckenney-nanosleep").unwrap();
        assert!(run.streams.is_empty(), "no sample count: no stream");
        let figures = RunFigures::of(&run).unwrap();
        assert_eq!(figures.max, Some(Nanos(146_000)), "printed as 146 µs");
        assert_eq!((figures.min, figures.mean), (None, None), "not printed");
        assert_eq!(figures.samples, None, "not counted");
        // Several rows: no figure over them all.
        let table = latlab_model::published::reference_run("rr-table3").unwrap();
        assert_eq!(RunFigures::of(&table).unwrap().max, None);
    }

    fn figures(id: &str, values: impl Iterator<Item = i64>) -> RunFigures {
        with_missed(id, values, 0)
    }

    fn with_missed(id: &str, values: impl Iterator<Item = i64>, missed: u64) -> RunFigures {
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
            host: Some("h".into()),
            kernel: Some("k".into()),
            scenario: None,
            samples: Some(n),
            missed_periods: Some(missed),
            min: Some(Nanos(min)),
            mean: Some(mean),
            stddev: Some((sum_sq / n as f64 - mean * mean).sqrt()),
            max: Some(Nanos(max)),
            histogram: Some(histogram),
            edge: Edge::Highest,
            // A sample a millisecond.
            span: Some(Nanos(n as i64 * 1_000_000)),
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
            let c = compare(&a, &b, Judged::Latency(metric), Tolerance::NONE).unwrap();
            assert_eq!(c.change, Change::NoSignificantChange, "{metric}: {c:?}");
        }
    }

    #[test]
    fn a_shifted_distribution_is_a_regression_unless_tolerated() {
        let a = figures("a", spread(10_000, 2_000, 20_000, 1));
        let b = figures("b", spread(13_000, 2_000, 20_000, 2));
        let p99 = Judged::Latency(Metric::Percentile(99.0));
        let c = compare(&a, &b, p99, Tolerance::Relative(0.05)).unwrap();
        assert_eq!(c.change, Change::Regression);
        let relative = c.relative_change.unwrap();
        assert!(relative > 0.2 && relative < 0.3, "{c:?}");
        // Apart, but by less than the tolerance: not "no significant change".
        let tolerated = compare(&a, &b, p99, Tolerance::Relative(0.5)).unwrap();
        assert_eq!(tolerated.change, Change::WithinTolerance);
        let absolute = compare(&a, &b, p99, Tolerance::Absolute(Nanos(5_000))).unwrap();
        assert_eq!(absolute.change, Change::WithinTolerance);
        let tight = compare(&a, &b, p99, Tolerance::Absolute(Nanos(1_000))).unwrap();
        assert_eq!(tight.change, Change::Regression);
        let back = compare(&b, &a, p99, Tolerance::Relative(0.05)).unwrap();
        assert_eq!(back.change, Change::Improvement);
    }

    #[test]
    fn few_samples_give_wide_intervals() {
        let a = figures("a", spread(10_000, 2_000, 30, 1));
        let b = figures("b", spread(10_500, 2_000, 30, 2));
        let p90 = Judged::Latency(Metric::Percentile(90.0));
        let c = compare(&a, &b, p90, Tolerance::NONE).unwrap();
        let (low, high) = c.new.interval.unwrap();
        assert!(low <= c.new.value && c.new.value <= high);
        assert_eq!(c.change, Change::NoSignificantChange);
    }

    #[test]
    fn the_maximum_has_no_interval() {
        let a = figures("a", spread(10_000, 2_000, 1_000, 1));
        let e = a.estimate(Judged::Latency(Metric::Max)).unwrap();
        assert_eq!(e.interval, None);
        assert_eq!(e.value, a.max.unwrap().0 as f64);
    }

    #[test]
    fn the_missed_period_rate_has_a_wilson_interval_also_at_zero() {
        let none = with_missed("a", spread(10_000, 2_000, 10_000, 1), 0);
        let e = none.estimate(Judged::MissedRate).unwrap();
        let (low, high) = e.interval.unwrap();
        assert_eq!((e.value, low), (0.0, 0.0));
        // Wilson at x = 0: z²/(n + z²).
        let expected = Z95 * Z95 / (10_000.0 + Z95 * Z95);
        assert!((high - expected).abs() < 1e-12, "{high} vs {expected}");
        let some = with_missed("b", spread(10_000, 2_000, 9_900, 2), 100);
        let c = compare(&none, &some, Judged::MissedRate, Tolerance::NONE).unwrap();
        assert_eq!(c.change, Change::Regression);
        assert!((c.new.value - 0.01).abs() < 1e-12);
        let few = with_missed("c", spread(10_000, 2_000, 9_999, 3), 1);
        let c = compare(&none, &few, Judged::MissedRate, Tolerance::NONE).unwrap();
        assert_eq!(c.change, Change::NoSignificantChange, "{c:?}");
    }

    #[test]
    fn a_rate_the_source_did_not_count_is_unknown() {
        let mut imported = figures("a", spread(10_000, 2_000, 100, 1));
        imported.missed_periods = None;
        let err = imported.estimate(Judged::MissedRate).unwrap_err();
        assert_eq!(err, Unknown::NotInSource(Judged::MissedRate));
        assert!(err.to_string().contains("did not count missed periods"));
    }

    /// Samples above 100 µs per hour: 10 of 100,000 one-millisecond periods against
    /// 40 is a regression; against 12, no significant change; a run without a
    /// measured time has no rate.
    #[test]
    fn spike_rates_are_judged_by_their_poisson_intervals() {
        let with_spikes = |id: &str, spikes: usize| {
            figures(
                id,
                spread(10_000, 2_000, 100_000 - spikes, 1)
                    .chain(std::iter::repeat_n(500_000, spikes)),
            )
        };
        let rate = Judged::SpikeRate(Some(Nanos(100_000)));
        let (ten, twelve, forty) = (
            with_spikes("a", 10),
            with_spikes("b", 12),
            with_spikes("c", 40),
        );
        let e = ten.estimate(rate).unwrap();
        assert_eq!(e.value, 360.0, "10 in 100 s is 360 per hour");
        let (low, high) = e.interval.unwrap();
        assert!(low < 360.0 && 360.0 < high);
        assert_eq!(
            compare(&ten, &forty, rate, Tolerance::DEFAULT)
                .unwrap()
                .change,
            Change::Regression
        );
        assert_eq!(
            compare(&ten, &twelve, rate, Tolerance::DEFAULT)
                .unwrap()
                .change,
            Change::NoSignificantChange
        );
        let mut unspanned = ten.clone();
        unspanned.span = None;
        assert_eq!(
            unspanned.estimate(rate).unwrap_err(),
            Unknown::NotInSource(rate)
        );
        assert_eq!(Judged::parse("spike-rate:100us").unwrap(), rate);
        assert_eq!(rate.to_string(), "spike-rate:100us");
        assert_eq!(Judged::parse(&rate.to_string()).unwrap(), rate);
    }
}
