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
}
