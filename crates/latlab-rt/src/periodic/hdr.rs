//! The bucket layout of latlab's recording histograms (HdrHistogram, lowest
//! discernible value 1 ns, highest 60 s, 3 significant digits), computed here so a
//! periodic task can count its samples straight into shared memory with one store,
//! and a reader can rebuild the very histogram `latlab run` would have recorded.
//!
//! The arithmetic is HdrHistogram's own (sub-bucket count 2048, half 1024, unit
//! magnitude 0); a test checks it against the `hdrhistogram` crate for every
//! boundary.

/// Highest value the histogram tracks; larger samples are counted at it.
pub const HIGHEST_NS: u64 = 60_000_000_000;
/// Significant decimal digits kept.
pub const SIGNIFICANT_DIGITS: u32 = 3;

/// log2 of the sub-bucket count: the smallest power of two ≥ 2·10^digits (2048).
const SUB_BUCKET_COUNT_MAGNITUDE: u32 = 11;
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = SUB_BUCKET_COUNT_MAGNITUDE - 1;
const SUB_BUCKET_COUNT: u64 = 1 << SUB_BUCKET_COUNT_MAGNITUDE;
const SUB_BUCKET_HALF_COUNT: u64 = SUB_BUCKET_COUNT / 2;
const SUB_BUCKET_MASK: u64 = SUB_BUCKET_COUNT - 1;
const LEADING_ZERO_COUNT_BASE: u32 = 64 - SUB_BUCKET_COUNT_MAGNITUDE;

/// Buckets needed to reach [`HIGHEST_NS`].
const BUCKET_COUNT: u64 = {
    let mut smallest_untrackable = SUB_BUCKET_COUNT;
    let mut buckets = 1;
    while smallest_untrackable <= HIGHEST_NS {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    buckets
};

/// Number of counts in the histogram.
pub const LEN: usize = ((BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT) as usize;

/// The count index of `value` (≤ [`HIGHEST_NS`]).
#[inline(always)]
pub fn index_of(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = value >> bucket;
    (((bucket as u64 + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT)
        as usize
}

/// The lowest value counted at `index`.
pub fn value_at(index: usize) -> u64 {
    let index = index as u64;
    let mut bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
    let mut sub_bucket = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
    if bucket < 0 {
        sub_bucket -= SUB_BUCKET_HALF_COUNT;
        bucket = 0;
    }
    sub_bucket << bucket
}

/// A sample as the histogram counts it: negative ones at 0, those above
/// [`HIGHEST_NS`] at it (the second value says it was clamped).
#[inline(always)]
pub fn clamp(ns: i64) -> (u64, bool) {
    if ns <= 0 {
        (0, false)
    } else if ns as u64 > HIGHEST_NS {
        (HIGHEST_NS, true)
    } else {
        (ns as u64, false)
    }
}

/// The value at `quantile` of histogram counts in latlab's layout, as
/// HdrHistogram's `value_at_quantile` gives it: the highest value of the bucket
/// holding the sample of rank ⌈q·n⌉. `None` without samples.
pub fn quantile(counts: &[u64], quantile: f64) -> Option<i64> {
    quantile_of(counts.iter().copied(), quantile)
}

/// [`quantile`] of counts read one by one (a live page's atomics, without a copy).
pub fn quantile_of(counts: impl Iterator<Item = u64> + Clone, quantile: f64) -> Option<i64> {
    let total: u64 = counts.clone().sum();
    if total == 0 {
        return None;
    }
    let rank = ((quantile * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (index, count) in counts.enumerate() {
        seen += count;
        if seen >= rank {
            return Some(value_at(index + 1) as i64 - 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::Histogram;

    #[test]
    fn the_layout_is_hdrhistograms_for_latlabs_bounds() {
        let empty = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
        assert_eq!(empty.distinct_values(), LEN);
        // Every bucket boundary and its neighbours, and values up to the top.
        let mut values = vec![0, 1, 2, 1023, 1024, 2047, 2048, 2049, HIGHEST_NS];
        for shift in 0..36 {
            let v = 1u64 << shift;
            values.extend([v.saturating_sub(1), v, v + 1, v * 3 / 2]);
        }
        for v in values.into_iter().filter(|v| *v <= HIGHEST_NS) {
            let mut h = empty.clone();
            h.record(v).unwrap();
            let index = h
                .iter_all()
                .position(|step| step.count_at_value() > 0)
                .unwrap();
            assert_eq!(index_of(v), index, "value {v}");
            assert_eq!(
                value_at(index),
                h.lowest_equivalent(v),
                "lowest value of index {index}"
            );
            assert_eq!(index_of(value_at(index)), index);
        }
    }

    #[test]
    fn quantiles_are_hdrhistograms() {
        let samples: Vec<Vec<u64>> = vec![
            vec![0],
            vec![1, 2, 3],
            (0..1000).map(|i| 50_000 + i * 37).collect(),
            (0..10_000).map(|i| (i * i) % 7_000_000 + 900).collect(),
            vec![HIGHEST_NS, 1, 2_048, 2_049, 123_456_789],
        ];
        for values in samples {
            let mut reference = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, 3).unwrap();
            let mut counts = vec![0u64; LEN];
            for &v in &values {
                reference.record(v).unwrap();
                counts[index_of(v)] += 1;
            }
            for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(
                    quantile(&counts, q),
                    Some(reference.value_at_quantile(q) as i64),
                    "q {q} of {} values",
                    values.len()
                );
            }
        }
        assert_eq!(quantile(&vec![0; LEN], 0.5), None);
    }
}
