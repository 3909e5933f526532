//! The latency histogram and its portable encoding.
//!
//! latlab records every sample into an HdrHistogram covering 1 ns to 60 s with three
//! significant digits (a relative error below 0.1 % at any magnitude), so a percentile
//! of a day-long run costs nothing to keep. Runs store it in the HdrHistogram V2 +
//! DEFLATE encoding, base64-encoded, which the Java, C, Go, Python and Rust
//! HdrHistogram libraries all read.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Highest value a histogram tracks: 60 s in nanoseconds. Larger samples are clamped
/// to it (and counted as clamped).
pub const HIGHEST_NS: u64 = 60_000_000_000;
/// Significant decimal digits kept.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// The name of the encoding stored in Runs.
pub const ENCODING: &str = "HdrHistogram-V2-DEFLATE-base64";

/// Why a histogram could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// Not base64.
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not a V2 (+DEFLATE) HdrHistogram.
    #[error("histogram is not a valid HdrHistogram V2 encoding: {0}")]
    Decode(String),
}

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
    clamped: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram, fully allocated: recording never allocates.
    pub fn new() -> LatencyHistogram {
        let inner = Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
            .expect("constant bounds are valid");
        LatencyHistogram { inner, clamped: 0 }
    }

    /// Records one sample. Negative values are recorded as 0 (the caller counts them as
    /// early wakes); values above [`HIGHEST_NS`] are recorded as it and counted.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        let v = if ns <= 0 {
            0
        } else if ns as u64 > HIGHEST_NS {
            self.clamped += 1;
            HIGHEST_NS
        } else {
            ns as u64
        };
        // Within bounds by construction, so this cannot fail.
        let _ = self.inner.record(v);
    }

    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Samples that were above [`HIGHEST_NS`] and clamped to it.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The value at percentile `p` (0–100), by nearest rank: the highest value
    /// equivalent to the sample of rank ⌈p/100 · n⌉ (within 0.1 %). The rank is computed
    /// in integers, so `p99.9` of 5000 samples is the 4995th, not the 4996th that
    /// floating-point `0.999 × 5000` would give.
    pub fn percentile(&self, p: f64) -> u64 {
        let n = self.inner.len();
        if n == 0 {
            return 0;
        }
        // p in millionths of a percent: exact for every rank written with ≤ 6 decimals.
        let scaled = (p.clamp(0.0, 100.0) * 1_000_000.0).round() as u128;
        let rank = ((scaled * n as u128).div_ceil(100_000_000) as u64).max(1);
        let mut seen = 0;
        for v in self.inner.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return v.value_iterated_to();
            }
        }
        self.inner.max()
    }

    /// The fraction of samples at or below `ns`.
    pub fn count_at_or_below(&self, ns: u64) -> u64 {
        self.inner.count_between(0, ns)
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.inner.add(&other.inner);
        self.clamped += other.clamped;
    }

    /// Buckets with samples: (highest equivalent value in ns, count), ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.inner
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// The underlying HdrHistogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.inner
    }

    /// Encodes as V2 + DEFLATE, base64 (standard alphabet, padded).
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.inner, &mut bytes)
            .expect("serialising to memory does not fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Decodes what [`encode`](LatencyHistogram::encode) produced (or any V2/V2+DEFLATE
    /// histogram from another HdrHistogram library).
    pub fn decode(text: &str) -> Result<LatencyHistogram, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        let mut hist = LatencyHistogram::new();
        hist.inner
            .add(&decoded)
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        Ok(hist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_clamps_and_counts() {
        let mut h = LatencyHistogram::new();
        h.record(-5);
        h.record(0);
        h.record(1_000);
        h.record(HIGHEST_NS as i64 + 1);
        assert_eq!(h.len(), 4);
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.count_at_or_below(0), 2);
    }

    #[test]
    fn percentiles_are_within_a_tenth_of_a_percent() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000i64 {
            h.record(v * 1_000);
        }
        let p50 = h.percentile(50.0) as f64;
        assert!((p50 - 5_000_000.0).abs() / 5_000_000.0 < 0.001, "{p50}");
        let p99 = h.percentile(99.0) as f64;
        assert!((p99 - 9_900_000.0).abs() / 9_900_000.0 < 0.001, "{p99}");
    }

    #[test]
    fn percentile_ranks_are_exact() {
        let mut h = LatencyHistogram::new();
        // Below 2048 every value has its own bucket, so ranks show exactly.
        for v in 1..=2000i64 {
            h.record(v);
        }
        // Nearest rank: p99.9 of 2000 samples is the 1998th (99.9 / 100 × 2000 in floating
        // point is 1998.0000000000002, whose ceiling would be 1999).
        assert_eq!(h.percentile(99.9), 1998);
        assert_eq!(h.percentile(50.0), 1000);
        assert_eq!(h.percentile(100.0), 2000);
        assert_eq!(h.percentile(0.0), 1);
        assert_eq!(LatencyHistogram::new().percentile(50.0), 0);
    }

    #[test]
    fn encoding_round_trips() {
        let mut h = LatencyHistogram::new();
        for v in [1, 2, 3, 1_000, 55_555, 1_000_000, 3_000_000_000] {
            h.record(v);
        }
        let text = h.encode();
        let back = LatencyHistogram::decode(&text).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.buckets(), h.buckets());
    }

    #[test]
    fn decode_rejects_garbage() {
        assert!(matches!(
            LatencyHistogram::decode("!!!"),
            Err(HistogramError::Base64(_))
        ));
        assert!(matches!(
            LatencyHistogram::decode("aGVsbG8="),
            Err(HistogramError::Decode(_))
        ));
    }
}
