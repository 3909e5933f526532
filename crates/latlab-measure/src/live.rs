//! Live statistics a measuring thread publishes for the display, without locks.
//!
//! Each measuring thread is the only writer of its [`LiveStats`]; it updates plain
//! atomics with relaxed loads and stores (no read-modify-write, so no locked bus
//! cycle). A display thread reads them whenever it likes; a reading may mix two
//! consecutive samples, which a display refreshed a few times a second cannot show.

use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Buckets of the coarse live histogram: 8 per power of two, up to about 2^44 ns.
const LIVE_BUCKETS: usize = 42 * 8;

/// One measuring thread's live figures.
#[derive(Debug)]
#[repr(align(128))] // keep threads' counters on separate cache lines
pub struct LiveStats {
    samples: AtomicU64,
    min: AtomicI64,
    max: AtomicI64,
    current: AtomicI64,
    sum: AtomicI64,
    missed_periods: AtomicU64,
    early_wakes: AtomicU64,
    finished: AtomicBool,
    coarse: Box<[AtomicU32]>,
    /// The window a reader asked samples to go to (see [`LiveStats::close_window`]);
    /// the only field a reader writes.
    window: AtomicU64,
    /// The last window the writer put a sample in.
    seen_window: AtomicU64,
    /// The largest sample of the current and of the previous window, by parity.
    window_max: [AtomicI64; 2],
}

impl Default for LiveStats {
    fn default() -> Self {
        LiveStats {
            samples: AtomicU64::new(0),
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(i64::MIN),
            current: AtomicI64::new(0),
            sum: AtomicI64::new(0),
            missed_periods: AtomicU64::new(0),
            early_wakes: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            coarse: (0..LIVE_BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            window: AtomicU64::new(0),
            seen_window: AtomicU64::new(u64::MAX),
            window_max: [AtomicI64::new(i64::MIN), AtomicI64::new(i64::MIN)],
        }
    }
}

/// The coarse bucket of a value: exact below 16 ns, then 8 buckets per power of two
/// (about 12 % wide).
#[inline(always)]
fn bucket_of(ns: i64) -> usize {
    let v = ns.max(0) as u64;
    if v < 16 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros() as usize;
    ((msb - 2) * 8 + ((v >> (msb - 3)) & 7) as usize).min(LIVE_BUCKETS - 1)
}

/// The largest value that falls into bucket `i`.
pub fn bucket_upper(i: usize) -> i64 {
    if i < 16 {
        return i as i64;
    }
    let msb = i / 8 + 2;
    let sub = (i % 8) as i64;
    ((8 + sub) << (msb - 3)) + (1i64 << (msb - 3)) - 1
}

impl LiveStats {
    /// Publishes one sample (single writer only).
    #[inline(always)]
    pub fn publish(&self, sample: i64, missed: u64) {
        self.samples.store(self.samples.load(Relaxed) + 1, Relaxed);
        if sample < self.min.load(Relaxed) {
            self.min.store(sample, Relaxed);
        }
        if sample > self.max.load(Relaxed) {
            self.max.store(sample, Relaxed);
        }
        self.current.store(sample, Relaxed);
        self.sum
            .store(self.sum.load(Relaxed).wrapping_add(sample), Relaxed);
        if missed > 0 {
            self.missed_periods
                .store(self.missed_periods.load(Relaxed) + missed, Relaxed);
        }
        if sample < 0 {
            self.early_wakes
                .store(self.early_wakes.load(Relaxed) + 1, Relaxed);
        }
        let b = &self.coarse[bucket_of(sample)];
        b.store(b.load(Relaxed).saturating_add(1), Relaxed);
        let window = self.window.load(Relaxed);
        let slot = &self.window_max[(window & 1) as usize];
        if window != self.seen_window.load(Relaxed) {
            // The first sample of a window: the slot first, so a reader that sees the
            // window as begun reads this sample's value, not a stale one.
            slot.store(sample, Relaxed);
            self.seen_window.store(window, Release);
        } else if sample > slot.load(Relaxed) {
            slot.store(sample, Relaxed);
        }
    }

    /// Ends the current window (reader side, one reader only) and returns the largest
    /// sample published in it, `None` when it had none. The next samples go to a new
    /// window; one published as the window closes may be counted in either.
    pub fn close_window(&self) -> Option<i64> {
        let window = self.window.load(Relaxed);
        self.window.store(window.wrapping_add(1), Relaxed);
        (self.seen_window.load(Acquire) == window)
            .then(|| self.window_max[(window & 1) as usize].load(Relaxed))
    }

    /// The coarse histogram: each bucket's largest value (ns) and count, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.coarse
            .iter()
            .enumerate()
            .map(|(i, c)| (bucket_upper(i), u64::from(c.load(Relaxed))))
    }

    /// The sum of every sample so far, in ns.
    pub fn sum_ns(&self) -> i64 {
        self.sum.load(Relaxed)
    }

    /// Publishes periods missed without a sample (a warm-up wake that overran into
    /// the measured span).
    #[inline(always)]
    pub fn publish_missed(&self, missed: u64) {
        if missed > 0 {
            self.missed_periods
                .store(self.missed_periods.load(Relaxed) + missed, Relaxed);
        }
    }

    /// Forgets everything published (single writer only).
    pub fn reset(&self) {
        self.samples.store(0, Relaxed);
        self.min.store(i64::MAX, Relaxed);
        self.max.store(i64::MIN, Relaxed);
        self.current.store(0, Relaxed);
        self.sum.store(0, Relaxed);
        self.missed_periods.store(0, Relaxed);
        self.early_wakes.store(0, Relaxed);
        self.coarse.iter().for_each(|b| b.store(0, Relaxed));
        self.seen_window.store(u64::MAX, Relaxed);
    }

    /// Samples published so far.
    pub fn samples(&self) -> u64 {
        self.samples.load(Relaxed)
    }

    /// Whether the thread has stopped measuring.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Relaxed)
    }

    /// Marks the thread as done.
    pub fn finish(&self) {
        self.finished.store(true, Relaxed);
    }

    /// Reads a consistent-enough snapshot.
    pub fn snapshot(&self) -> LiveSnapshot {
        let samples = self.samples.load(Relaxed);
        let (min, max) = (self.min.load(Relaxed), self.max.load(Relaxed));
        let mut p99 = None;
        if samples > 0 {
            let counts: Vec<u64> = self.coarse.iter().map(|c| c.load(Relaxed) as u64).collect();
            let total: u64 = counts.iter().sum();
            let rank = (total as f64 * 0.99).ceil() as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank.max(1) {
                    p99 = Some(bucket_upper(i).clamp(min, max));
                    break;
                }
            }
        }
        LiveSnapshot {
            samples,
            min_ns: (samples > 0).then_some(min),
            max_ns: (samples > 0).then_some(max),
            current_ns: (samples > 0).then(|| self.current.load(Relaxed)),
            mean_ns: (samples > 0).then(|| self.sum.load(Relaxed) as f64 / samples as f64),
            p99_ns: p99,
            missed_periods: self.missed_periods.load(Relaxed),
            early_wakes: self.early_wakes.load(Relaxed),
            finished: self.finished.load(Relaxed),
        }
    }
}

/// What the display shows for one thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveSnapshot {
    /// Samples so far.
    pub samples: u64,
    /// Smallest so far.
    pub min_ns: Option<i64>,
    /// Largest so far.
    pub max_ns: Option<i64>,
    /// The latest sample.
    pub current_ns: Option<i64>,
    /// Mean so far.
    pub mean_ns: Option<f64>,
    /// 99th percentile, upper bound of a ~12 %-wide bucket.
    pub p99_ns: Option<i64>,
    /// Missed periods so far.
    pub missed_periods: u64,
    /// Early wakes so far.
    pub early_wakes: u64,
    /// The thread has stopped measuring.
    pub finished: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_in_order() {
        let mut last = 0;
        for v in (0..100_000i64).chain([1 << 30, 1 << 40]) {
            let b = bucket_of(v);
            assert!(b >= last, "bucket order at {v}");
            last = b;
            assert!(bucket_upper(b) >= v, "upper({b}) < {v}");
            if b > 0 {
                assert!(bucket_upper(b - 1) < v, "value {v} belongs lower");
            }
        }
    }

    #[test]
    fn snapshot_reflects_samples() {
        let live = LiveStats::default();
        assert_eq!(live.snapshot().samples, 0);
        for v in 1..=100 {
            live.publish(v * 1_000, 0);
        }
        live.publish(-5, 2);
        let s = live.snapshot();
        assert_eq!(s.samples, 101);
        let reset = LiveStats::default();
        reset.publish(7, 1);
        reset.reset();
        assert_eq!(reset.snapshot(), LiveStats::default().snapshot());
        assert_eq!(s.min_ns, Some(-5));
        assert_eq!(s.max_ns, Some(100_000));
        assert_eq!(s.missed_periods, 2);
        assert_eq!(s.early_wakes, 1);
        let p99 = s.p99_ns.unwrap();
        assert!((99_000..=100_000).contains(&p99), "{p99}");
    }

    #[test]
    fn windows_hold_their_own_maximum() {
        let live = LiveStats::default();
        assert_eq!(live.close_window(), None);
        live.publish(5, 0);
        live.publish(9, 0);
        live.publish(7, 0);
        assert_eq!(live.close_window(), Some(9));
        assert_eq!(live.close_window(), None, "no sample in the window");
        live.publish(3, 0);
        assert_eq!(live.close_window(), Some(3), "not the older 9");
        let buckets: Vec<(i64, u64)> = live.buckets().filter(|b| b.1 > 0).collect();
        assert_eq!(buckets, [(3, 1), (5, 1), (7, 1), (9, 1)]);
        assert_eq!(live.sum_ns(), 24);
    }
}
