//! The spike feed: samples above the spike threshold, from a measuring loop to the
//! reader thread, without the loop ever waiting.
//!
//! One [`SpikeFeed`] per measuring thread: a single-producer single-consumer ring of
//! fixed capacity, allocated before measuring. The loop's recorder pushes
//! ([`SpikeFeed::push`]: two relaxed stores and a release store of the head, no
//! allocation, lock or system call); the reader thread pops. A push into a full ring
//! is counted and dropped, never blocks. The feed also carries what the reader needs
//! to place a spike on the trace clock: the stream's identity (phase, thread, CPU, the
//! measuring thread's id) and the origin its samples' instants count from.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// Spikes a feed holds before the reader pops them: at 10 drains a second, 40,000
/// spikes a second per thread before one is dropped.
pub const FEED_CAPACITY: usize = 4096;

/// One slot of the ring: a sample's value and the instant it was due.
#[derive(Default)]
struct Slot {
    at: AtomicI64,
    value: AtomicI64,
}

/// A spike as the feed hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FedSample {
    /// When it was due: ns into the measured span (as `Spike::at_ns`).
    pub at_ns: i64,
    /// The sample (latency), ns.
    pub value_ns: i64,
}

/// Where a stream's instants start, on the clocks the reader converts between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The instant `at = 0` of the stream, on the probe's clock.
    pub probe_ns: i64,
    /// The probe's clock minus `CLOCK_MONOTONIC`, read when the origin was set (0 for
    /// a monotonic probe).
    pub probe_minus_monotonic_ns: i64,
}

impl Origin {
    /// The `CLOCK_MONOTONIC` instant of a stream instant `at`.
    pub fn monotonic(&self, at: i64) -> i64 {
        self.probe_ns + at - self.probe_minus_monotonic_ns
    }
}

/// A single-producer single-consumer ring of spikes, with the stream they belong to.
pub struct SpikeFeed {
    phase: String,
    thread: usize,
    cpu: Option<usize>,
    tid: AtomicI32,
    origin_ns: AtomicI64,
    probe_minus_monotonic_ns: AtomicI64,
    /// Pushes count only once measuring started: rehearsals record too.
    armed: AtomicBool,
    slots: Box<[Slot]>,
    /// Pushed so far (written by the producer only).
    head: AtomicUsize,
    /// Popped so far (written by the consumer only).
    tail: AtomicUsize,
    overflow: AtomicU64,
}

impl fmt::Debug for SpikeFeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpikeFeed")
            .field("phase", &self.phase)
            .field("thread", &self.thread)
            .field("cpu", &self.cpu)
            .field("tid", &self.tid())
            .field("overflow", &self.overflow())
            .finish_non_exhaustive()
    }
}

impl SpikeFeed {
    /// An empty, disarmed feed of [`FEED_CAPACITY`] for the stream of `thread` (on
    /// `cpu`) in `phase`.
    pub fn new(phase: &str, thread: usize, cpu: Option<usize>) -> SpikeFeed {
        SpikeFeed::with_capacity(phase, thread, cpu, FEED_CAPACITY)
    }

    /// The same with room for `capacity` spikes (at least 1).
    pub fn with_capacity(
        phase: &str,
        thread: usize,
        cpu: Option<usize>,
        capacity: usize,
    ) -> SpikeFeed {
        SpikeFeed {
            phase: phase.to_string(),
            thread,
            cpu,
            tid: AtomicI32::new(0),
            origin_ns: AtomicI64::new(0),
            probe_minus_monotonic_ns: AtomicI64::new(0),
            armed: AtomicBool::new(false),
            slots: (0..capacity.max(1)).map(|_| Slot::default()).collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            overflow: AtomicU64::new(0),
        }
    }

    /// The phase of the stream.
    pub fn phase(&self) -> &str {
        &self.phase
    }

    /// The stream's thread index.
    pub fn thread(&self) -> usize {
        self.thread
    }

    /// The CPU the stream's thread is pinned to (`None`: not pinned).
    pub fn cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// Records the measuring thread's kernel id (set on that thread before it
    /// rehearses).
    pub fn set_tid(&self, tid: i32) {
        self.tid.store(tid, Ordering::Release);
    }

    /// The measuring thread's kernel id (0 until set).
    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Acquire)
    }

    /// Sets where the stream's instants start, on the probe's clock, and how far that
    /// clock is from `CLOCK_MONOTONIC`. The runner sets it before measuring; a loop
    /// whose span starts later (relative sleeps) moves it when the span starts, before
    /// its first sample.
    pub fn set_origin(&self, origin: Origin) {
        self.origin_ns.store(origin.probe_ns, Ordering::Relaxed);
        self.probe_minus_monotonic_ns
            .store(origin.probe_minus_monotonic_ns, Ordering::Relaxed);
    }

    /// Moves the origin on the probe's clock, keeping the clock offset (the relative
    /// timer's span start). A relaxed store: the next push publishes it.
    #[inline]
    pub fn move_origin(&self, probe_ns: i64) {
        self.origin_ns.store(probe_ns, Ordering::Relaxed);
    }

    /// The origin, as of the last spike popped.
    pub fn origin(&self) -> Origin {
        Origin {
            probe_ns: self.origin_ns.load(Ordering::Relaxed),
            probe_minus_monotonic_ns: self.probe_minus_monotonic_ns.load(Ordering::Relaxed),
        }
    }

    /// From now on pushes count (after the rehearsal).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Spikes dropped because the ring was full.
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// Pushes a spike (producer side: one measuring thread only). Never blocks: a full
    /// ring counts it in [`overflow`](SpikeFeed::overflow) instead.
    #[inline]
    pub fn push(&self, at_ns: i64, value_ns: i64) {
        if !self.armed.load(Ordering::Relaxed) {
            return;
        }
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) >= self.slots.len() {
            self.overflow.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = &self.slots[head % self.slots.len()];
        slot.at.store(at_ns, Ordering::Relaxed);
        slot.value.store(value_ns, Ordering::Relaxed);
        self.head.store(head.wrapping_add(1), Ordering::Release);
    }

    /// Takes the oldest spike (consumer side: one reader only).
    pub fn pop(&self) -> Option<FedSample> {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        if tail == head {
            return None;
        }
        let slot = &self.slots[tail % self.slots.len()];
        let sample = FedSample {
            at_ns: slot.at.load(Ordering::Relaxed),
            value_ns: slot.value.load(Ordering::Relaxed),
        };
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        Some(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn nothing_counts_before_the_feed_is_armed() {
        let feed = SpikeFeed::with_capacity("main", 0, Some(1), 2);
        feed.push(1, 100);
        assert_eq!(feed.pop(), None);
        feed.arm();
        feed.push(2, 200);
        feed.push(3, 300);
        feed.push(4, 400);
        assert_eq!(feed.overflow(), 1, "the third push found the ring full");
        let popped: Vec<_> = std::iter::from_fn(|| feed.pop()).map(|s| s.at_ns).collect();
        assert_eq!(popped, [2, 3]);
    }

    #[test]
    fn origin_places_instants_on_the_monotonic_clock() {
        let origin = Origin {
            probe_ns: 1_000,
            probe_minus_monotonic_ns: 300,
        };
        assert_eq!(origin.monotonic(50), 750);
    }

    /// A producer at full speed against a consumer: every spike arrives once, in
    /// order, or is counted as overflow.
    #[test]
    fn a_full_speed_producer_loses_or_duplicates_nothing_uncounted() {
        const PUSHES: i64 = 2_000_000;
        let feed = Arc::new(SpikeFeed::with_capacity("main", 0, None, 64));
        feed.arm();
        let producer = {
            let feed = feed.clone();
            std::thread::spawn(move || {
                for at in 0..PUSHES {
                    feed.push(at, -at);
                }
            })
        };
        let mut received = Vec::new();
        loop {
            let done = producer.is_finished();
            while let Some(sample) = feed.pop() {
                assert_eq!(sample.value_ns, -sample.at_ns, "a torn slot");
                received.push(sample.at_ns);
            }
            if done {
                break;
            }
            std::hint::spin_loop();
        }
        producer.join().unwrap();
        while let Some(sample) = feed.pop() {
            received.push(sample.at_ns);
        }
        assert!(
            received.windows(2).all(|w| w[0] < w[1]),
            "out of order or twice"
        );
        assert_eq!(received.len() as u64 + feed.overflow(), PUSHES as u64);
        assert!(!received.is_empty());
    }
}
