//! The latency histogram and its portable encoding.
//!
//! latlab records every sample into an HdrHistogram covering 1 ns to 60 s with three
//! significant digits (a relative error below 0.1 % at any magnitude), so a percentile
//! of a day-long run costs nothing to keep. Runs store it in the HdrHistogram V2 +
//! DEFLATE encoding, base64-encoded, which the Java, C, Go, Python and Rust
//! HdrHistogram libraries all read.

use crate::units::Nanos;
use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt;

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

/// Samples a histogram holds at a stand-in value because their own is not known, only
/// that it is at least that: a source's overflow bucket ("above the histogram's range").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overflow {
    /// The samples are at least this; the histogram records them at it.
    pub at_least_ns: u64,
    /// How many.
    pub count: u64,
}

/// A percentile of samples some of which are only known as bounds ([`Overflow`], or
/// clamped above [`HIGHEST_NS`]): a value, or a lower bound when the rank falls among
/// them. Serialised as a number, or as `{"at_least_ns": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Percentile {
    /// The value, within the histogram's precision.
    Exact(Nanos),
    /// At least this (the sample of that rank lies beyond a histogram's range).
    AtLeast {
        /// The bound.
        at_least_ns: Nanos,
    },
}

/// The key under which percentile `p` is stored: `50`, `99.9`, `99.999`.
pub fn percentile_key(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl Percentile {
    /// The value, or the bound: where a number must be drawn (a plot), never to be
    /// printed or judged without [`is_bound`](Percentile::is_bound).
    pub fn value(self) -> Nanos {
        match self {
            Percentile::Exact(v) | Percentile::AtLeast { at_least_ns: v } => v,
        }
    }

    /// True when only a lower bound is known.
    pub fn is_bound(self) -> bool {
        matches!(self, Percentile::AtLeast { .. })
    }

    /// The value if it is one, `None` for a bound.
    pub fn exact(self) -> Option<Nanos> {
        match self {
            Percentile::Exact(v) => Some(v),
            Percentile::AtLeast { .. } => None,
        }
    }

    /// Within the exact extremes of its samples: a value clamped to them; a bound
    /// raised to the minimum, or the maximum itself when it reaches it (the sample lies
    /// between the bound and the maximum).
    pub fn within(self, min: Nanos, max: Nanos) -> Percentile {
        let max = max.max(min);
        match self {
            Percentile::Exact(v) => Percentile::Exact(v.clamp(min, max)),
            Percentile::AtLeast { at_least_ns } if at_least_ns >= max => Percentile::Exact(max),
            Percentile::AtLeast { at_least_ns } => Percentile::AtLeast {
                at_least_ns: at_least_ns.max(min),
            },
        }
    }

    /// The worst (largest) of several figures, a bound when any of them is one: the
    /// figure behind a bound may lie above every other. `None` when there are none.
    pub fn worst_of(figures: impl IntoIterator<Item = Percentile>) -> Option<Percentile> {
        let (mut worst, mut bound) = (None::<Nanos>, false);
        for figure in figures {
            worst = worst.max(Some(figure.value()));
            bound |= figure.is_bound();
        }
        Some(match bound {
            true => Percentile::AtLeast {
                at_least_ns: worst?,
            },
            false => Percentile::Exact(worst?),
        })
    }

    /// `≥ ` for a bound, nothing for a value: the prefix of a printed figure.
    pub fn prefix(self) -> &'static str {
        if self.is_bound() {
            "≥ "
        } else {
            ""
        }
    }
}

impl fmt::Display for Percentile {
    /// As [`Nanos`] shows itself, a bound with `≥`: `12.345 µs`, `≥ 400 µs`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.prefix(), self.value())
    }
}

/// Which value of a histogram bucket stands for the samples in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The highest value equivalent to the bucket (HdrHistogram's convention): for
    /// samples recorded at their own values, at most 0.1 % above them.
    Highest,
    /// The lowest: for samples recorded at the lower edges of a source's own, coarser
    /// buckets (an imported Run), exactly that edge.
    Lowest,
}

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
    clamped: u64,
    saturated: u64,
    overflows: Vec<Overflow>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram. Its counts grow with the largest value recorded (up to
    /// [`HIGHEST_NS`]): a run whose worst case is 100 µs needs 64 KiB of them, not the
    /// 216 KiB of the whole range. Recording may therefore allocate; a measuring loop
    /// records into a [`RecordingHistogram`] instead.
    pub fn new() -> LatencyHistogram {
        let mut inner = Histogram::new_with_bounds(1, 2, SIGNIFICANT_DIGITS)
            .expect("constant bounds are valid");
        inner.auto(true);
        LatencyHistogram {
            inner,
            clamped: 0,
            saturated: 0,
            overflows: Vec::new(),
        }
    }

    /// Counts `clamped` samples as having been above [`HIGHEST_NS`] (recorded at it by
    /// whoever counted them: a histogram rebuilt from another process's counts).
    pub fn set_clamped(&mut self, clamped: u64) {
        self.clamped = clamped;
    }

    /// Records `count` samples only known to be at least `at_least_ns` (a source's
    /// overflow bucket): counted at that value, and remembered as bounds, so a
    /// percentile among them is a bound ([`percentile_within`](Self::percentile_within)).
    pub fn record_overflow(&mut self, at_least_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        let at = at_least_ns.min(HIGHEST_NS);
        let _ = self.inner.record_n(at, count);
        self.note_overflow(Overflow {
            at_least_ns: at,
            count,
        });
    }

    fn note_overflow(&mut self, overflow: Overflow) {
        match self
            .overflows
            .iter_mut()
            .find(|o| o.at_least_ns == overflow.at_least_ns)
        {
            Some(known) => known.count += overflow.count,
            None => self.overflows.push(overflow),
        }
    }

    /// Restores what an encoding keeps beside the counts: samples clamped, saturated and
    /// recorded at a bound (the counts themselves already hold them).
    pub(crate) fn restore_notes(&mut self, clamped: u64, saturated: u64, overflows: &[Overflow]) {
        self.clamped = clamped;
        self.saturated = saturated;
        self.overflows = overflows.to_vec();
    }

    /// The samples recorded at a bound rather than at their value ([`Overflow`]).
    pub fn overflows(&self) -> &[Overflow] {
        &self.overflows
    }

    /// Every sample recorded at a bound rather than at its value: the overflows, and
    /// those clamped to [`HIGHEST_NS`] (at least that).
    pub fn bounds(&self) -> impl Iterator<Item = Overflow> + '_ {
        self.overflows
            .iter()
            .copied()
            .chain(std::iter::once(Overflow {
                at_least_ns: HIGHEST_NS,
                count: self.clamped,
            }))
            .filter(|o| o.count > 0)
    }

    /// How many samples are recorded at a bound ([`bounds`](Self::bounds)).
    pub fn bounded(&self) -> u64 {
        self.bounds().map(|o| o.count).sum()
    }

    /// Records one sample. Negative values are recorded as 0 (the caller counts them as
    /// early wakes); values above [`HIGHEST_NS`] are recorded as it and counted.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        // At most HIGHEST_NS, which the counts grow to cover, so this cannot fail.
        let _ = self.inner.record(in_range(ns, &mut self.clamped));
    }

    /// Records `count` samples of one value, as [`record`](Self::record) does; fails
    /// only when the samples would pass 2^63 − 1, what the encoding's counts hold.
    pub fn record_n(&mut self, ns: i64, count: u64) -> Result<(), HistogramError> {
        if count == 0 {
            return Ok(());
        }
        let mut clamped = 0;
        let value = in_range(ns, &mut clamped);
        if self
            .inner
            .len()
            .checked_add(count)
            .is_none_or(|total| total > i64::MAX as u64)
        {
            return Err(HistogramError::Decode(
                "more samples than a histogram counts (2^63 - 1)".to_string(),
            ));
        }
        self.inner
            .record_n(value, count)
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        self.clamped += clamped * count;
        Ok(())
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

    /// Samples whose bucket is not known: they were recorded while several buckets of a
    /// [`RecordingHistogram`] had saturated, and were put in the highest of those.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Samples in buckets at or above `ns` (values within 0.1 % of `ns` may be counted
    /// with it): 0 when `ns` lies beyond everything recorded.
    pub fn count_at_least(&self, ns: u64) -> u64 {
        self.inner
            .iter_recorded()
            .filter(|v| v.value_iterated_to() >= ns)
            .map(|v| v.count_at_value())
            .sum()
    }

    /// The value of the sample of rank `rank` (1 = smallest), as the highest value of its
    /// bucket; ranks beyond the count give the largest.
    pub fn value_at_rank(&self, rank: u64) -> u64 {
        let mut seen = 0;
        for v in self.inner.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return v.value_iterated_to();
            }
        }
        self.inner.max()
    }

    /// The value at percentile `p` (0–100), by nearest rank: the highest value
    /// equivalent to the sample of rank ⌈p/100 · n⌉ (within 0.1 %). The rank is computed
    /// in integers, so `p99.9` of 5000 samples is the 4995th, not the 4996th that
    /// floating-point `0.999 × 5000` would give. For samples recorded at a bound this
    /// is the bound: [`percentile_within`](Self::percentile_within) says which it is.
    pub fn percentile(&self, p: f64) -> u64 {
        let n = self.inner.len();
        if n == 0 {
            return 0;
        }
        self.value_at_rank(nearest_rank(p, n))
    }

    /// Percentile `p` (0–100) of samples whose exact minimum and maximum are `min` and
    /// `max`: the value clamped to them, or a bound when the rank falls among samples
    /// recorded at a bound. `None` without samples.
    ///
    /// The sample of rank r is at least the r-th recorded value v (every bound is at
    /// most its sample), and at most v when r samples of known value lie at or below
    /// v: then v is its value; otherwise only the bound is known. The largest sample
    /// is `max`. A value is read at the bucket's `edge`.
    pub fn percentile_within(
        &self,
        p: f64,
        min: Nanos,
        max: Nanos,
        edge: Edge,
    ) -> Option<Percentile> {
        let n = self.inner.len();
        if n == 0 {
            return None;
        }
        Some(self.rank_within(nearest_rank(p, n), min, max, edge))
    }

    /// The sample of rank `rank` (1 = smallest; clamped to the samples held) of samples
    /// whose exact minimum and maximum are `min` and `max`, as
    /// [`percentile_within`](Self::percentile_within) gives it.
    pub fn rank_within(&self, rank: u64, min: Nanos, max: Nanos, edge: Edge) -> Percentile {
        let n = self.inner.len();
        let rank = rank.clamp(1, n.max(1));
        if rank == n {
            return Percentile::Exact(max);
        }
        let (value, at_or_below) = self.rank_value_and_count(rank);
        let bounded_at_or_below: u64 = self
            .bounds()
            .filter(|o| self.inner.highest_equivalent(o.at_least_ns) <= value)
            .map(|o| o.count)
            .sum();
        if at_or_below.saturating_sub(bounded_at_or_below) >= rank {
            let read = match edge {
                Edge::Highest => value,
                Edge::Lowest => self.inner.lowest_equivalent(value),
            };
            Percentile::Exact(Nanos(read.min(i64::MAX as u64) as i64)).within(min, max)
        } else {
            // The bound: an overflow's own where one lies in this bucket, else the
            // bucket's lowest value.
            let bound = self
                .overflows
                .iter()
                .map(|o| o.at_least_ns)
                .filter(|&at| self.inner.highest_equivalent(at) == value)
                .max()
                .unwrap_or_else(|| self.inner.lowest_equivalent(value));
            let bound = Nanos(bound.min(i64::MAX as u64) as i64);
            Percentile::AtLeast { at_least_ns: bound }.within(min, max)
        }
    }

    /// The value of rank `rank` (as [`value_at_rank`](Self::value_at_rank)) and how
    /// many samples lie in its bucket or below.
    fn rank_value_and_count(&self, rank: u64) -> (u64, u64) {
        let mut seen = 0;
        for v in self.inner.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return (v.value_iterated_to(), seen);
            }
        }
        (self.inner.max(), seen)
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.inner.add(&other.inner);
        self.clamped += other.clamped;
        self.saturated += other.saturated;
        for &overflow in &other.overflows {
            self.note_overflow(overflow);
        }
    }

    /// Buckets with samples: (highest equivalent value in ns, count), ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.inner
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// Buckets of the samples whose value is known: [`buckets`](Self::buckets) without
    /// those recorded at a bound (overflows, and samples clamped to [`HIGHEST_NS`]).
    pub fn known_buckets(&self) -> Vec<(u64, u64)> {
        let mut buckets = self.buckets();
        for bound in self.bounds() {
            let value = self.inner.highest_equivalent(bound.at_least_ns);
            if let Some(bucket) = buckets.iter_mut().find(|b| b.0 == value) {
                bucket.1 = bucket.1.saturating_sub(bound.count);
            }
        }
        buckets.retain(|b| b.1 > 0);
        buckets
    }

    /// The underlying HdrHistogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.inner
    }

    /// Encodes as V2 + DEFLATE, base64 (standard alphabet, padded).
    ///
    /// Written here rather than with the crate's serialiser, which zero-fills a buffer
    /// of nine bytes per bucket up to the maximum (up to 250 KB) and then builds a
    /// DEFLATE compressor of a few hundred KB, all to shrink a payload of a few hundred
    /// bytes: at the end of a run that was the largest addition to latlab's resident
    /// memory. The V2 bytes are the same as the crate's (a test compares them); the
    /// DEFLATE stream uses stored blocks, which every inflater reads.
    pub fn encode(&self) -> String {
        let v2 = encode_v2(&self.inner);
        let deflated = zlib_stored(&v2);
        let mut out = Vec::with_capacity(8 + deflated.len());
        out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        out.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        out.extend_from_slice(&deflated);
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    /// Decodes what [`encode`](LatencyHistogram::encode) produced (or any V2/V2+DEFLATE
    /// histogram from another HdrHistogram library).
    pub fn decode(text: &str) -> Result<LatencyHistogram, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        if decoded.max() > decoded.highest_equivalent(HIGHEST_NS) {
            return Err(HistogramError::Decode(format!(
                "it holds values up to {} ns, beyond the {HIGHEST_NS} ns a latlab histogram covers",
                decoded.max()
            )));
        }
        let mut hist = LatencyHistogram::new();
        hist.inner
            .add(&decoded)
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        Ok(hist)
    }
}

/// The histogram a measuring thread records into: the buckets of [`LatencyHistogram`]
/// with 32-bit counts, so half its memory (108 KiB instead of 216 KiB, every byte of it
/// resident and locked while a run measures).
///
/// A bucket saturates at 2³² − 1 samples: more than a day of a 20 µs period landing in
/// one bucket 1–32 ns wide. [`finish`](RecordingHistogram::finish) gives the samples
/// lost that way back to the saturated bucket when there is one; when several
/// saturated, which one they belonged to is unknown: they go to the highest and are
/// counted ([`LatencyHistogram::saturated`]).
#[derive(Debug, Clone)]
pub struct RecordingHistogram {
    inner: Histogram<u32>,
    clamped: u64,
}

impl Default for RecordingHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordingHistogram {
    /// An empty histogram, fully allocated: recording never allocates.
    pub fn new() -> RecordingHistogram {
        let inner = Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
            .expect("constant bounds are valid");
        RecordingHistogram { inner, clamped: 0 }
    }

    /// Records one sample, as [`LatencyHistogram::record`] does.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        // Within bounds by construction, so this cannot fail; a full count saturates.
        let _ = self.inner.record(in_range(ns, &mut self.clamped));
    }

    /// Empties the histogram, writing every count (so all its memory is touched).
    pub fn reset(&mut self) {
        self.inner.reset();
        self.clamped = 0;
    }

    /// Number of samples recorded (saturated ones included).
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// Makes this histogram a copy of `other` without allocating (both have the same
    /// fixed bounds): two passes over the counts, for a checkpoint's hand-over.
    pub fn copy_from(&mut self, other: &RecordingHistogram) {
        // Same bounds on both sides, so this cannot fail.
        let _ = self.inner.set_to(&other.inner);
        self.clamped = other.clamped;
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The same samples with 64-bit counts, for statistics and storage.
    pub fn finish(&self) -> LatencyHistogram {
        let mut out = LatencyHistogram::new();
        out.clamped = self.clamped;
        let mut kept = 0u64;
        // The highest full bucket, and how many buckets were full.
        let (mut highest_full, mut full) = (0, 0);
        for v in self.inner.iter_recorded() {
            kept += u64::from(v.count_at_value());
            if v.count_at_value() == u32::MAX {
                highest_full = v.value_iterated_to();
                full += 1;
            }
            // Same bounds on both sides, so this cannot fail.
            let _ = out
                .inner
                .record_n(v.value_iterated_to(), u64::from(v.count_at_value()));
        }
        let lost = self.inner.len() - kept;
        if lost > 0 {
            // Only a full bucket loses samples, so there is one.
            let _ = out.inner.record_n(highest_full, lost);
            if full > 1 {
                out.saturated = lost;
            }
        }
        out
    }
}

/// Rank ⌈p/100 · n⌉ of `n` samples (at least 1), in integers: `p` in millionths of a
/// percent is exact for every rank written with ≤ 6 decimals.
fn nearest_rank(p: f64, n: u64) -> u64 {
    let scaled = (p.clamp(0.0, 100.0) * 1_000_000.0).round() as u128;
    ((scaled * n as u128).div_ceil(100_000_000) as u64).max(1)
}

/// A sample as a histogram records it: negative ones as 0 (their callers count them as
/// early wakes), those above [`HIGHEST_NS`] as it, counted in `clamped`.
#[inline]
fn in_range(ns: i64, clamped: &mut u64) -> u64 {
    if ns <= 0 {
        0
    } else if ns as u64 > HIGHEST_NS {
        *clamped += 1;
        HIGHEST_NS
    } else {
        ns as u64
    }
}

/// The V2 encoding's cookie (format 2, 8-byte word size).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
/// The cookie of a V2 encoding wrapped in zlib DEFLATE.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// The HdrHistogram V2 encoding: a 40-byte big-endian header, then the counts up to the
/// last non-zero one as zig-zag LEB128 (at most 9 bytes each), a run of two or more
/// empty buckets written as its negated length.
fn encode_v2(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&V2_COOKIE.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes()); // payload length, filled in below
    out.extend_from_slice(&0u32.to_be_bytes()); // normalizing index offset
    out.extend_from_slice(&u32::from(h.sigfig()).to_be_bytes());
    out.extend_from_slice(&h.low().to_be_bytes());
    out.extend_from_slice(&h.high().to_be_bytes());
    out.extend_from_slice(&1.0f64.to_be_bytes()); // integer to double conversion ratio
    let header = out.len();
    // Buckets up to the last non-empty one (just the first when all are empty), one
    // iteration step per bucket; streamed, so no copy of the counts is made.
    let last = h
        .iter_all()
        .enumerate()
        .filter(|(_, v)| v.count_at_value() > 0)
        .map(|(i, _)| i)
        .last()
        .unwrap_or(0);
    let flush_zeros = |zeros: i64, out: &mut Vec<u8>| match zeros {
        0 => {}
        1 => put_zig_zag(0, out),
        n => put_zig_zag(-n, out),
    };
    let mut zeros = 0i64;
    for v in h.iter_all().take(last + 1) {
        let count = v.count_at_value();
        if count == 0 {
            zeros += 1;
            continue;
        }
        flush_zeros(zeros, &mut out);
        zeros = 0;
        put_zig_zag(count as i64, &mut out);
    }
    flush_zeros(zeros, &mut out);
    let payload = (out.len() - header) as u32;
    out[4..8].copy_from_slice(&payload.to_be_bytes());
    out
}

/// A zlib stream (RFC 1950) of DEFLATE stored blocks (RFC 1951 §3.2.4): the data as
/// it is, in blocks of at most 65 535 bytes, then its Adler-32 checksum.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(65_535).max(1);
    let mut out = Vec::with_capacity(2 + 5 * blocks + data.len() + 4);
    out.extend_from_slice(&[0x78, 0x01]); // deflate, 32 KiB window, no dictionary
    let mut chunks = data.chunks(65_535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]); // one empty final block
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none())); // BFINAL, BTYPE 00 (stored)
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

/// Zig-zag LEB128 as HdrHistogram writes it: 7 bits a byte for eight bytes, then a
/// ninth byte holding the last 8 bits whole.
fn put_zig_zag(value: i64, out: &mut Vec<u8>) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_of_figures_is_a_bound_when_any_is_one() {
        let exact = |us: i64| Percentile::Exact(Nanos(us * 1_000));
        let bound = |us: i64| Percentile::AtLeast {
            at_least_ns: Nanos(us * 1_000),
        };
        assert_eq!(Percentile::worst_of([]), None);
        assert_eq!(Percentile::worst_of([exact(3), exact(9)]), Some(exact(9)));
        // The bound's sample may lie above 9 µs.
        assert_eq!(Percentile::worst_of([bound(2), exact(9)]), Some(bound(9)));
        assert_eq!(Percentile::worst_of([exact(3), bound(12)]), Some(bound(12)));
    }

    #[test]
    fn records_clamps_and_counts() {
        let mut h = LatencyHistogram::new();
        h.record(-5);
        h.record(0);
        h.record(1_000);
        h.record(HIGHEST_NS as i64 + 1);
        assert_eq!(h.len(), 4);
        assert_eq!(h.clamped(), 1);
        assert_eq!(h.buckets()[0], (0, 2));
    }

    #[test]
    fn recording_histogram_finishes_as_the_wide_one() {
        let values = [-5, 0, 1, 2, 2_049, 2_051, 55_555, 1_000_000, 3_000_000_000];
        let mut wide = LatencyHistogram::new();
        let mut narrow = RecordingHistogram::new();
        for v in values.into_iter().chain([HIGHEST_NS as i64 + 1]) {
            wide.record(v);
            narrow.record(v);
        }
        let done = narrow.finish();
        assert_eq!(done.len(), wide.len());
        assert_eq!(done.clamped(), 1);
        assert_eq!(done.buckets(), wide.buckets());
        assert_eq!(done.encode(), wide.encode());
    }

    #[test]
    fn counts_at_least_a_value_beyond_the_range_are_zero() {
        let mut h = LatencyHistogram::new();
        for v in [10, 131_010, 5_000] {
            h.record(v);
        }
        assert_eq!(h.count_at_least(1_000_000), 0);
        assert_eq!(h.count_at_least(5_000), 2);
        assert_eq!(h.count_at_least(0), 3);
    }

    #[test]
    fn decoding_refuses_values_beyond_sixty_seconds() {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let mut wide = Histogram::<u64>::new_with_bounds(1, 10 * HIGHEST_NS, 3).unwrap();
        wide.record(2 * HIGHEST_NS).unwrap();
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&wide, &mut bytes).unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        let err = LatencyHistogram::decode(&text).unwrap_err().to_string();
        assert!(err.contains("beyond"), "{err}");
    }

    #[test]
    fn saturated_counts_are_given_back_or_counted() {
        let mut one = RecordingHistogram::new();
        one.inner.record_n(1_000, u32::MAX - 1).unwrap();
        for _ in 0..3 {
            one.record(1_000);
        }
        one.record(7);
        let done = one.finish();
        assert_eq!(one.len(), u64::from(u32::MAX) + 3);
        assert_eq!(done.len(), one.len());
        assert_eq!(
            done.buckets(),
            vec![(7, 1), (1_000, u64::from(u32::MAX) + 2)]
        );
        assert_eq!(done.clamped(), 0);

        let mut two = RecordingHistogram::new();
        for v in [10, 20] {
            two.inner.record_n(v as u64, u32::MAX).unwrap();
            two.record(v);
        }
        let done = two.finish();
        assert_eq!(done.len(), two.len());
        assert_eq!(done.clamped(), 0);
        assert_eq!(
            done.saturated(),
            2,
            "which bucket the lost samples were in is unknown"
        );
        assert_eq!(done.buckets().last(), Some(&(20, u64::from(u32::MAX) + 2)));
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
    fn v2_bytes_equal_the_reference_serialiser() {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![0],
            vec![5],
            vec![1, 1, 2, 2_049, 2_051, 1_000_000, 1_000_001],
            (0..5_000).map(|i| (i * 7_919) % 3_000_000 + 1).collect(),
            vec![59_999_999_999, 1, 3],
            vec![i64::MAX],
        ];
        for values in cases {
            let mut h = LatencyHistogram::new();
            for v in &values {
                h.record(*v);
            }
            let mut reference = Vec::new();
            V2Serializer::new()
                .serialize(h.inner(), &mut reference)
                .unwrap();
            assert_eq!(
                encode_v2(h.inner()),
                reference,
                "{:?}",
                &values[..values.len().min(5)]
            );
            let back = LatencyHistogram::decode(&h.encode()).unwrap();
            assert_eq!(back.buckets(), h.buckets());
            assert_eq!(back.len(), h.len());
        }
    }

    #[test]
    fn stored_zlib_inflates_back() {
        use std::io::Read;
        for len in [0usize, 1, 1_000, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(zlib_stored(&data).as_slice())
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "{len} bytes");
        }
    }

    #[test]
    fn zig_zag_lengths() {
        for (v, len) in [
            (0i64, 1),
            (-1, 1),
            (63, 1),
            (64, 2),
            (i64::MAX, 9),
            (i64::MIN, 9),
        ] {
            let mut out = Vec::new();
            put_zig_zag(v, &mut out);
            assert_eq!(out.len(), len, "{v}");
        }
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
