//! A source's histogram and summary figures, as cyclictest, rtla, oslat and
//! jitterdebugger print them: each bucket's count at the bucket's lower edge, the samples
//! outside its range, and the tool's own minimum, maximum and mean, which are checked
//! against the buckets and used to refine each other.

use super::provenance::Provenance;
use latlab_model::hist::Percentile;
use latlab_model::Nanos;

/// A source histogram (each bucket's count at the bucket's lower edge) and the source's
/// summary figures.
pub(super) struct Binned {
    /// False when the source kept no histogram at all (cyclictest JSON without `-h`):
    /// then `buckets` is empty and `overflow` counts every sample.
    pub(super) histogram: bool,
    /// Lower edge and count of each bucket, ascending.
    pub(super) buckets: Vec<(Nanos, u64)>,
    /// Width of a bucket.
    pub(super) width: Nanos,
    /// Samples outside the histogram's range.
    pub(super) overflow: u64,
    /// Where the range ends: overflowed samples are at least this (or negative).
    pub(super) overflow_from: Nanos,
    /// The source's own figures.
    pub(super) min: Option<Nanos>,
    pub(super) max: Option<Nanos>,
    pub(super) mean: Option<f64>,
}

/// The most samples a stream holds: an HdrHistogram's counts are signed 64-bit in its
/// encoding.
const MAX_SAMPLES: u64 = i64::MAX as u64;

/// The sum of a source's counts, or why it cannot be one: a damaged file can hold counts
/// that together pass what a histogram holds (2^63 − 1).
pub(super) fn sum_counts(counts: impl IntoIterator<Item = u64>) -> Result<u64, TooManySamples> {
    counts
        .into_iter()
        .try_fold(0u64, u64::checked_add)
        .filter(|&sum| sum <= MAX_SAMPLES)
        .ok_or(TooManySamples)
}

/// Counts that add up to more than a histogram holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the counts add up to more than 2^63 - 1 samples: the file is damaged")]
pub(super) struct TooManySamples;

impl Binned {
    /// Samples in buckets and overflows (importers check with [`sum_counts`] that they
    /// add up; this saturates rather than wrap).
    pub(super) fn samples(&self) -> u64 {
        self.buckets
            .iter()
            .fold(self.overflow, |sum, b| sum.saturating_add(b.1))
    }

    /// The value of rank ⌈q/100 · n⌉ (nearest rank, as [`LatencyHistogram::percentile`](latlab_model::hist::LatencyHistogram::percentile)
    /// ranks): its bucket's lower edge, exact on the source's own buckets; for an
    /// overflowed sample the range's end, or the maximum for the largest. `None` without
    /// samples.
    pub(super) fn percentile(&self, q: f64) -> Option<Percentile> {
        let n = self.samples();
        if n == 0 {
            return None;
        }
        let scaled = (q.clamp(0.0, 100.0) * 1_000_000.0).round() as u128;
        let rank = ((scaled * n as u128).div_ceil(100_000_000) as u64).max(1);
        // Overflowed samples below the range's end can only be negative: they come first.
        let negative = self.max.is_some_and(|m| m < self.overflow_from);
        if negative && rank <= self.overflow {
            return self.min.map(Percentile::Exact);
        }
        let mut seen = if negative { self.overflow } else { 0 };
        for &(edge, count) in &self.buckets {
            seen += count;
            if seen >= rank {
                return Some(Percentile::Exact(edge));
            }
        }
        match self.max {
            Some(max) if rank == n => Some(Percentile::Exact(max)),
            _ => Some(Percentile::AtLeast {
                at_least_ns: self.overflow_from,
            }),
        }
    }

    /// Checks the summary figures against the buckets; the error says what disagrees.
    pub(super) fn check(&self) -> Result<(), Disagreement> {
        let (Some(min), Some(max)) = (self.min, self.max) else {
            return Ok(());
        };
        if min > max {
            return Err(Disagreement::MinAboveMax { min, max });
        }
        // A printed mean is truncated or rounded to the source's unit: within a bucket
        // width of the extremes.
        if let Some(mean) = self.mean {
            let w = self.width.0 as f64;
            if !mean.is_finite() || mean < min.0 as f64 - w || mean > max.0 as f64 + w {
                let mean = Nanos(mean as i64);
                return Err(Disagreement::MeanOutside { mean, min, max });
            }
        }
        let (Some(&(lowest, _)), Some(&(highest, _))) = (
            self.buckets.iter().find(|b| b.1 > 0),
            self.buckets.iter().rev().find(|b| b.1 > 0),
        ) else {
            return Ok(());
        };
        let w = self.width.0;
        if min.0 >= lowest.0 + w {
            return Err(Disagreement::MinAboveLowest { min, lowest });
        }
        if max.0 < highest.0 {
            return Err(Disagreement::MaxBelowHighest { max, highest });
        }
        if self.overflow == 0 && min < lowest {
            return Err(Disagreement::MinBelowLowest { min, lowest });
        }
        if self.overflow == 0 && max.0 >= highest.0 + w {
            return Err(Disagreement::MaxAboveHighest { max, highest });
        }
        Ok(())
    }
}

/// Which of a source's summary figures disagrees with its histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Figure {
    Min,
    Max,
    Mean,
}

/// A summary figure that disagrees with the histogram, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Disagreement {
    #[error("minimum {min} is above maximum {max}")]
    MinAboveMax { min: Nanos, max: Nanos },
    #[error("mean {mean} lies outside minimum {min} and maximum {max}")]
    MeanOutside { mean: Nanos, min: Nanos, max: Nanos },
    #[error("minimum {min} lies above the lowest bucket with samples ({lowest})")]
    MinAboveLowest { min: Nanos, lowest: Nanos },
    #[error("maximum {max} lies below the highest bucket with samples ({highest})")]
    MaxBelowHighest { max: Nanos, highest: Nanos },
    #[error(
        "minimum {min} lies below the lowest bucket with samples ({lowest}) and nothing \
         overflowed"
    )]
    MinBelowLowest { min: Nanos, lowest: Nanos },
    #[error(
        "maximum {max} lies above the highest bucket with samples ({highest}) and nothing \
         overflowed"
    )]
    MaxAboveHighest { max: Nanos, highest: Nanos },
    /// oslat's minimum outside the bucket its convention puts it in.
    #[error("minimum {min} lies outside the lowest bucket with samples ({lowest})")]
    MinOutsideLowest { min: Nanos, lowest: Nanos },
    /// oslat printed buckets without a minimum or a maximum.
    #[error("no minimum or maximum")]
    NoMinOrMax,
    /// The counts overflow (shown against the maximum).
    #[error(transparent)]
    Counts(#[from] TooManySamples),
}

impl Disagreement {
    /// The figure at fault, whose line an error points to.
    pub(super) fn figure(&self) -> Figure {
        match self {
            Disagreement::MeanOutside { .. } => Figure::Mean,
            Disagreement::MaxBelowHighest { .. }
            | Disagreement::MaxAboveHighest { .. }
            | Disagreement::Counts(_) => Figure::Max,
            Disagreement::MinAboveMax { .. }
            | Disagreement::MinAboveLowest { .. }
            | Disagreement::MinBelowLowest { .. }
            | Disagreement::MinOutsideLowest { .. }
            | Disagreement::NoMinOrMax => Figure::Min,
        }
    }
}

/// The mean to record for a source that prints its mean truncated to whole units
/// (`unit` ns): the bucket mean when it truncates to the printed figure, else the figure
/// itself, noted as truncated.
pub(super) fn truncated_mean(b: &Binned, printed: i64, unit: i64, p: &mut Provenance) -> f64 {
    match bucket_mean(b).filter(|m| b.width.0 == unit && (m / unit as f64) as i64 == printed) {
        Some(mean) => mean,
        None => {
            p.lack(format!(
                "a mean only to the whole {} (the source prints it truncated, and its \
                 buckets cannot refine it)",
                if unit == 1 { "ns" } else { "µs" }
            ));
            (printed * unit) as f64
        }
    }
}

/// The mean to record for a source that prints its mean with two decimals (`%.2f`) in
/// units of `unit` ns: the bucket mean when it rounds to the printed figure, else the
/// figure.
pub(super) fn rounded_mean(b: &Binned, printed: f64, unit: i64) -> f64 {
    let figure = (printed * 100.0).round() * unit as f64 / 100.0;
    bucket_mean(b)
        .filter(|m| b.width.0 == unit && ((m / unit as f64) - printed).abs() <= 0.005 + 1e-9)
        .unwrap_or(figure)
}

/// The exact mean of the bucketed values, when every sample is in a bucket. For a source
/// whose buckets are one unit of its resolution wide (cyclictest, jitterdebugger), this
/// is the mean the source computed before printing it rounded or truncated; importers
/// use it where it agrees with the printed figure.
pub(super) fn bucket_mean(b: &Binned) -> Option<f64> {
    let n = b.samples();
    if b.overflow > 0 || !b.histogram || n == 0 {
        return None;
    }
    let sum: i128 = b
        .buckets
        .iter()
        .map(|&(e, c)| e.0 as i128 * c as i128)
        .sum();
    Some(sum as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binned(buckets: &[(i64, u64)], overflow: u64, min: i64, max: i64) -> Binned {
        Binned {
            histogram: true,
            buckets: buckets.iter().map(|&(e, c)| (Nanos(e), c)).collect(),
            width: Nanos::MICROSECOND,
            overflow,
            overflow_from: Nanos(100_000),
            min: Some(Nanos(min)),
            max: Some(Nanos(max)),
            mean: None,
        }
    }

    #[test]
    fn checks_figures_against_buckets() {
        assert!(binned(&[(3_000, 2), (5_000, 1)], 0, 3_000, 5_000)
            .check()
            .is_ok());
        assert!(binned(&[(3_000, 2), (5_000, 1)], 0, 4_000, 5_000)
            .check()
            .is_err());
        assert!(binned(&[(3_000, 2), (5_000, 1)], 0, 3_000, 9_000)
            .check()
            .is_err());
        assert!(binned(&[(3_000, 2), (5_000, 1)], 1, 3_000, 900_000)
            .check()
            .is_ok());
        assert!(binned(&[(3_000, 2)], 0, 5_000, 3_000).check().is_err());
    }

    #[test]
    fn percentiles_are_bucket_edges() {
        let b = binned(&[(3_000, 2), (5_000, 1)], 2, 3_000, 900_000);
        let exact = |ns| Some(Percentile::Exact(Nanos(ns)));
        assert_eq!(b.percentile(0.0), exact(3_000));
        assert_eq!(b.percentile(40.0), exact(3_000));
        assert_eq!(b.percentile(60.0), exact(5_000));
        // The fourth of five is an overflow: only its lower bound is known.
        assert_eq!(
            b.percentile(80.0),
            Some(Percentile::AtLeast {
                at_least_ns: Nanos(100_000)
            })
        );
        assert_eq!(b.percentile(100.0), exact(900_000));
        assert_eq!(binned(&[], 0, 0, 0).percentile(50.0), None);
    }

    #[test]
    fn bucket_mean_needs_every_sample() {
        let b = binned(&[(3_000, 2), (5_000, 1)], 0, 3_000, 5_000);
        assert!((bucket_mean(&b).unwrap() - 11_000.0 / 3.0).abs() < 1e-9);
        assert_eq!(bucket_mean(&binned(&[(3_000, 2)], 1, 3_000, 200_000)), None);
    }
}
