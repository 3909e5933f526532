//! Everything a measuring thread keeps about its samples, allocated up front.
//!
//! [`SampleRecorder::record`] is called once per sample from the measuring loop: it
//! updates the histogram, exact sums, the top-K spikes, the bounded list of samples
//! above the spike threshold and the timeline — all in memory allocated before the
//! loop started. Nothing here allocates, locks or calls the kernel; with a
//! [`SpikeFeed`] attached, a sample above the threshold is also pushed into it, which
//! does not either.
//!
//! With a [`Handover`] attached ([`SampleRecorder::handing_over`]), a checkpoint
//! writer can ask for a copy of everything recorded so far: the next sample copies the
//! recorder into the hand-over's preallocated twin (no allocation, no lock) and hands
//! it over; [`SampleRecorder::checkpoint_stream`] makes the stream of it.
//!
//! Every probe places a sample at the instant it was due, ns into the measured span:
//! a span of N periods has its samples due at 1, 2, … N periods (the warm-up ends at 0
//! and the last one is due at the very end, as the probe's `Window` says). Timeline
//! interval `i` therefore holds the samples due in `(i·interval, (i+1)·interval]`, so
//! a span of N whole intervals has N of them.

use crate::breaktrace::Tripwire;
use crate::explain::SpikeFeed;
use latlab_model::hist::{LatencyHistogram, RecordingHistogram};
use latlab_model::run::{EncodedHistogram, Statistics, Stream};
use latlab_model::run::{ExactSums, Spike, Spikes, Timeline};
use latlab_model::Nanos;
use latlab_rt::handover::Handover;
use std::sync::Arc;

/// Timeline slots kept before intervals are merged pairwise (and doubled).
pub const TIMELINE_SLOTS: usize = 4096;

/// Sizes of the recorder's bounded buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecorderLimits {
    /// How many of the largest samples to keep.
    pub top: usize,
    /// Keep every sample above this (up to `spike_capacity`).
    pub spike_threshold: Option<i64>,
    /// Bound on samples kept above the threshold.
    pub spike_capacity: usize,
    /// Timeline interval in ns.
    pub timeline_interval: i64,
    /// Timeline slots to allocate (the run's expected span, capped).
    pub timeline_slots: usize,
}

/// The per-thread sample store.
#[derive(Debug)]
pub struct SampleRecorder {
    histogram: RecordingHistogram,
    sums: ExactSums,
    early_wakes: u64,
    top: Vec<Spike>,
    top_capacity: usize,
    top_floor: i64,
    spike_threshold: i64,
    above: Vec<Spike>,
    above_dropped: u64,
    timeline_interval: i64,
    initial_timeline_interval: i64,
    timeline_max: Vec<i64>,
    timeline_count: Vec<u64>,
    /// `i64::MAX` without a break-trace limit, so the check costs one comparison.
    break_limit: i64,
    breaktrace: Option<Arc<Tripwire>>,
    /// Where samples above the spike threshold go to be explained (`--explain`).
    feed: Option<Arc<SpikeFeed>>,
    /// Measured periods (or cycles) without a sample, as the probe counts them.
    missed: u64,
    /// Samples discarded in the warm-up.
    warm_up: u64,
    /// Where the last sample was due (ns into the span; 0 before any).
    last_at: i64,
    /// Where a copy goes when a checkpoint asks for one.
    handover: Option<Arc<Handover<SampleRecorder>>>,
    limits: RecorderLimits,
}

const NO_SAMPLE: i64 = i64::MIN;

impl SampleRecorder {
    /// Allocates everything the recorder will ever need.
    pub fn new(limits: RecorderLimits) -> SampleRecorder {
        let slots = limits.timeline_slots.clamp(1, TIMELINE_SLOTS);
        let timeline_max = vec![NO_SAMPLE; slots];
        let timeline_count = vec![0; slots];
        SampleRecorder {
            histogram: RecordingHistogram::new(),
            sums: ExactSums::default(),
            early_wakes: 0,
            top: Vec::with_capacity(limits.top),
            top_capacity: limits.top,
            top_floor: i64::MIN,
            spike_threshold: limits.spike_threshold.unwrap_or(i64::MAX),
            above: Vec::with_capacity(if limits.spike_threshold.is_some() {
                limits.spike_capacity
            } else {
                0
            }),
            above_dropped: 0,
            timeline_interval: limits.timeline_interval.max(1),
            initial_timeline_interval: limits.timeline_interval.max(1),
            timeline_max,
            timeline_count,
            break_limit: i64::MAX,
            breaktrace: None,
            feed: None,
            missed: 0,
            warm_up: 0,
            last_at: 0,
            handover: None,
            limits,
        }
    }

    /// The recorder, handing a copy of itself over when a checkpoint asks; returns the
    /// hand-over (its twin allocated now, before measuring) for the checkpoint writer.
    pub fn handing_over(mut self) -> (SampleRecorder, Arc<Handover<SampleRecorder>>) {
        let twin = SampleRecorder::new(self.limits);
        let handover = Arc::new(Handover::new(twin));
        self.handover = Some(handover.clone());
        (self, handover)
    }

    /// Counts `n` measured periods (or cycles) that passed without a sample.
    #[inline(always)]
    pub fn count_missed(&mut self, n: u64) {
        self.missed += n;
    }

    /// Counts `n` samples discarded in the warm-up.
    #[inline(always)]
    pub fn count_warm_up(&mut self, n: u64) {
        self.warm_up += n;
    }

    /// The recorder, also pushing every sample above the spike threshold into `feed`
    /// (to be explained from the kernel's trace events).
    pub fn feeding(mut self, feed: Option<Arc<SpikeFeed>>) -> SampleRecorder {
        self.feed = feed;
        self
    }

    /// Moves the origin of the stream's instants on the feed, if any: a loop whose
    /// measured span starts at an instant of its own (relative sleeps) calls it when
    /// the span starts.
    #[inline]
    pub fn span_starts_at(&self, origin: i64) {
        if let Some(feed) = &self.feed {
            feed.move_origin(origin);
        }
    }

    /// The recorder, stopping the phase at the first sample over `wire`'s limit.
    pub fn breaking_at(mut self, wire: Option<Arc<Tripwire>>) -> SampleRecorder {
        self.break_limit = wire.as_ref().map_or(i64::MAX, |w| w.limit().0);
        self.breaktrace = wire;
        self
    }

    /// Records one sample due at `at` (ns since the start of the measured span, in
    /// `(0, span]`; an instant at 0 counts in the first interval). Returns whether
    /// the sample tripped the break-trace wire, so that a loop taking samples in
    /// bursts ends at it (every loop also ends at the halt flag the trip raises).
    #[inline]
    pub fn record(&mut self, sample: i64, at: i64) -> bool {
        self.histogram.record(sample);
        self.sums.add(sample);
        if sample < 0 {
            self.early_wakes += 1;
        }
        if sample > self.top_floor || self.top.len() < self.top_capacity {
            self.keep_top(sample, at);
        }
        if sample > self.spike_threshold {
            if self.above.len() < self.above.capacity() {
                self.above.push(Spike {
                    value_ns: Nanos(sample),
                    at_ns: Nanos(at),
                });
            } else {
                self.above_dropped += 1;
            }
            if let Some(feed) = &self.feed {
                feed.push(at, sample);
            }
        }
        self.note_in_timeline(sample, at);
        self.last_at = at;
        if let Some(handover) = &self.handover {
            if handover.asked() {
                self.hand_over(handover);
            }
        }
        if sample > self.break_limit {
            if let Some(wire) = &self.breaktrace {
                return wire.trip(sample, at);
            }
        }
        false
    }

    /// Copies everything recorded so far into the hand-over's twin. Out of line and
    /// rare (once per checkpoint); it allocates nothing: the twin has every buffer's
    /// capacity already.
    #[inline(never)]
    #[cold]
    fn hand_over(&self, handover: &Handover<SampleRecorder>) {
        handover.fill(|twin| self.copy_into(twin));
    }

    fn copy_into(&self, twin: &mut SampleRecorder) {
        twin.histogram.copy_from(&self.histogram);
        twin.sums = self.sums;
        twin.early_wakes = self.early_wakes;
        twin.top.clear();
        twin.top.extend_from_slice(&self.top); // within the same capacity
        twin.top_floor = self.top_floor;
        twin.above.clear();
        twin.above.extend_from_slice(&self.above);
        twin.above_dropped = self.above_dropped;
        twin.timeline_interval = self.timeline_interval;
        twin.timeline_max.copy_from_slice(&self.timeline_max);
        twin.timeline_count.copy_from_slice(&self.timeline_count);
        twin.missed = self.missed;
        twin.warm_up = self.warm_up;
        twin.last_at = self.last_at;
    }

    /// The stream of a copy handed over at a checkpoint (`self` is the copy), on
    /// `template`: the measuring thread's stream as it was before measuring, which
    /// gives what does not change (probe, CPU, policy, period). What only the end of
    /// the measurement knows (drift, page faults, overrun wake-ups, the first sample)
    /// is unknown; the span is up to the last sample's instant.
    pub fn checkpoint_stream(&self, template: &Stream) -> Stream {
        let histogram = self.histogram();
        Stream {
            samples: self.samples(),
            missed_periods: template.missed_periods.map(|_| self.missed),
            overrun_wakes: None,
            early_wakes: template.early_wakes.map(|_| self.early_wakes),
            first_sample_ns: None,
            warm_up_samples: self.warm_up,
            drift_ns: None,
            elapsed_ns: template.elapsed_ns.map(|_| Nanos(self.last_at)),
            page_faults: None,
            stats: Statistics::compute(&self.sums, &histogram),
            histogram: Some(EncodedHistogram::from_histogram(&histogram)),
            spikes: self.spikes(template.spikes.threshold_ns),
            timeline: self.timeline(),
            ..template.clone()
        }
    }

    /// Keeps a sample among the largest. Out of line: it runs for a few samples only
    /// once the list is full, and [`reset`](Self::reset) takes every branch of it, so
    /// its code is resident before measuring whatever the probe's rehearsal recorded.
    #[inline(never)]
    fn keep_top(&mut self, sample: i64, at: i64) {
        if self.top_capacity == 0 {
            return;
        }
        let spike = Spike {
            value_ns: Nanos(sample),
            at_ns: Nanos(at),
        };
        if self.top.len() < self.top_capacity {
            self.top.push(spike); // within the capacity reserved in `new`
        } else {
            let (i, _) = self
                .top
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.value_ns)
                .expect("top is full, so not empty");
            self.top[i] = spike;
        }
        if self.top.len() == self.top_capacity {
            self.top_floor = self
                .top
                .iter()
                .map(|s| s.value_ns.0)
                .min()
                .unwrap_or(i64::MIN);
        }
    }

    #[inline]
    fn note_in_timeline(&mut self, sample: i64, at: i64) {
        // Intervals are closed at their end: a sample due at the end of the span
        // belongs to its last interval, not to one past it.
        let offset = at.saturating_sub(1).max(0);
        let mut slot = (offset / self.timeline_interval) as usize;
        while slot >= self.timeline_max.len() {
            self.coarsen_timeline();
            slot = (offset / self.timeline_interval) as usize;
        }
        if sample > self.timeline_max[slot] {
            self.timeline_max[slot] = sample;
        }
        self.timeline_count[slot] += 1;
    }

    /// Merges neighbouring slots pairwise and doubles the interval, in place.
    #[inline(never)]
    fn coarsen_timeline(&mut self) {
        let n = self.timeline_max.len();
        for i in 0..n {
            let (a, b) = (2 * i, 2 * i + 1);
            let max = match (self.timeline_max.get(a), self.timeline_max.get(b)) {
                (Some(&x), Some(&y)) => x.max(y),
                (Some(&x), None) => x,
                _ => NO_SAMPLE,
            };
            let count = self.timeline_count.get(a).copied().unwrap_or(0)
                + self.timeline_count.get(b).copied().unwrap_or(0);
            self.timeline_max[i] = max;
            self.timeline_count[i] = count;
        }
        self.timeline_interval *= 2;
    }

    /// Forgets every sample and writes every byte of the recorder's buffers, so all
    /// its memory is faulted in (and, under on-fault locking, locked) before measuring.
    pub fn reset(&mut self) {
        self.histogram.reset();
        self.sums = ExactSums::default();
        self.early_wakes = 0;
        let blank = Spike {
            value_ns: Nanos(0),
            at_ns: Nanos(0),
        };
        // Fill the list of the largest samples and replace in it once: a rehearsal of
        // fewer samples than it holds would leave that code to the first real ones.
        self.top.clear();
        for value in 0..=self.top_capacity as i64 {
            self.keep_top(value, 0);
        }
        self.top.clear();
        self.top.spare_capacity_mut().iter_mut().for_each(|s| {
            s.write(blank);
        });
        self.top_floor = i64::MIN;
        self.above.clear();
        self.above.spare_capacity_mut().iter_mut().for_each(|s| {
            s.write(blank);
        });
        self.above_dropped = 0;
        // Run the rare coarsening path once too, so its code is resident as well.
        self.coarsen_timeline();
        self.timeline_interval = self.initial_timeline_interval;
        self.timeline_max.fill(NO_SAMPLE);
        self.timeline_count.fill(0);
        self.missed = 0;
        self.warm_up = 0;
        self.last_at = 0;
        // Run the hand-over once too (no checkpoint asks before measuring starts), so
        // its code and its twin's pages are resident before measuring.
        if let Some(handover) = &self.handover {
            handover.ask();
            self.hand_over(handover);
            let _ = handover.take(|_| ());
        }
    }

    /// Samples recorded.
    pub fn samples(&self) -> u64 {
        self.sums.count
    }

    /// The histogram, with the 64-bit counts of the Run (built on each call).
    pub fn histogram(&self) -> LatencyHistogram {
        self.histogram.finish()
    }

    /// Exact sums.
    pub fn sums(&self) -> &ExactSums {
        &self.sums
    }

    /// Samples below zero.
    pub fn early_wakes(&self) -> u64 {
        self.early_wakes
    }

    /// Spikes: top-K largest first, and those above the threshold in time order.
    pub fn spikes(&self, threshold: Option<Nanos>) -> Spikes {
        let mut top = self.top.clone();
        top.sort_by(|a, b| b.value_ns.cmp(&a.value_ns).then(a.at_ns.cmp(&b.at_ns)));
        Spikes {
            top,
            threshold_ns: threshold,
            above_threshold: self.above.clone(),
            above_threshold_dropped: self.above_dropped,
        }
    }

    /// The timeline, trimmed after the last interval with samples.
    pub fn timeline(&self) -> Timeline {
        let used = self
            .timeline_count
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0, |i| i + 1);
        Timeline {
            interval_ns: Nanos(self.timeline_interval),
            max_ns: self.timeline_max[..used]
                .iter()
                .map(|&m| (m != NO_SAMPLE).then_some(Nanos(m)))
                .collect(),
            count: self.timeline_count[..used].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> RecorderLimits {
        RecorderLimits {
            top: 3,
            spike_threshold: Some(50),
            spike_capacity: 2,
            timeline_interval: 10,
            timeline_slots: 4,
        }
    }

    #[test]
    fn keeps_the_largest_and_the_spikes() {
        let mut r = SampleRecorder::new(limits());
        for (i, v) in [5, 70, 1, 60, 90, -3, 55].iter().enumerate() {
            r.record(*v, i as i64);
        }
        assert_eq!(r.samples(), 7);
        assert_eq!(r.early_wakes(), 1);
        let s = r.spikes(Some(Nanos(50)));
        let top: Vec<i64> = s.top.iter().map(|s| s.value_ns.0).collect();
        assert_eq!(top, vec![90, 70, 60]);
        let above: Vec<i64> = s.above_threshold.iter().map(|s| s.value_ns.0).collect();
        assert_eq!(above, vec![70, 60]);
        assert_eq!(s.above_threshold_dropped, 2);
        assert_eq!(r.histogram().len(), 7);
    }

    #[test]
    fn timeline_coarsens_instead_of_growing() {
        let mut r = SampleRecorder::new(limits());
        // 4 slots of 10 ns: samples due at 1..=80 need 8 slots, so the interval doubles.
        for at in 1..=80 {
            r.record(at, at);
        }
        let t = r.timeline();
        assert_eq!(t.interval_ns, Nanos(20));
        assert_eq!(t.count, vec![20, 20, 20, 20]);
        assert_eq!(t.max_ns[3], Some(Nanos(80)));
        assert_eq!(t.count.iter().sum::<u64>(), r.samples());
    }

    #[test]
    fn reset_forgets_everything_and_restores_the_interval() {
        let mut r = SampleRecorder::new(limits());
        for at in 0..200 {
            r.record(at, at);
        }
        r.reset();
        assert_eq!(r.samples(), 0);
        assert_eq!(r.histogram().len(), 0);
        assert_eq!(r.timeline(), SampleRecorder::new(limits()).timeline());
        assert!(r.spikes(None).top.is_empty());
        r.record(5, 15);
        assert_eq!(r.timeline().interval_ns, Nanos(10));
        assert_eq!(r.timeline().count, vec![0, 1]);
    }

    #[test]
    fn a_sample_due_at_the_end_of_the_span_stays_in_the_last_interval() {
        // 4 intervals of 10 ns, one sample due every ns from 1 to 40 (the end).
        let mut r = SampleRecorder::new(limits());
        for at in 1..=40 {
            r.record(1, at);
        }
        let t = r.timeline();
        assert_eq!(
            t.interval_ns,
            Nanos(10),
            "no coarsening for a span that fits"
        );
        assert_eq!(t.count, vec![10, 10, 10, 10]);
        assert_eq!(t.count.iter().sum::<u64>(), r.samples());
    }

    #[test]
    fn a_sample_over_the_break_trace_limit_halts_the_phase() {
        let wire = Arc::new(Tripwire::new(Nanos(50)));
        let mut r = SampleRecorder::new(limits()).breaking_at(Some(wire.clone()));
        assert!(!r.record(70, 1));
        assert_eq!(wire.tripped(), None, "not armed while rehearsing");
        r.reset();
        wire.arm();
        assert!(!r.record(50, 1));
        assert!(!wire.halt().load(std::sync::atomic::Ordering::Relaxed));
        assert!(r.record(51, 2), "the sample over the limit says so");
        r.record(60, 3);
        let trip = wire.tripped().unwrap();
        assert_eq!((trip.value, trip.at), (Nanos(51), Nanos(2)));
        assert!(wire.halt().load(std::sync::atomic::Ordering::Relaxed));
    }

    #[test]
    fn spikes_above_the_threshold_reach_an_armed_feed_only() {
        let feed = Arc::new(SpikeFeed::new("main", 0, Some(1)));
        let mut r = SampleRecorder::new(limits()).feeding(Some(feed.clone()));
        r.record(70, 1); // a rehearsal: the feed is not armed yet
        r.reset();
        feed.arm();
        for (at, v) in [(2, 40), (3, 51), (4, 50), (5, 90), (6, 95)] {
            r.record(v, at);
        }
        let fed: Vec<_> = std::iter::from_fn(|| feed.pop())
            .map(|s| (s.at_ns, s.value_ns))
            .collect();
        assert_eq!(
            fed,
            [(3, 51), (5, 90), (6, 95)],
            "past the recorder's capacity too"
        );
        r.span_starts_at(1_000);
        assert_eq!(feed.origin().probe_ns, 1_000);
    }

    #[test]
    fn empty_recorder_has_empty_timeline() {
        let r = SampleRecorder::new(limits());
        assert!(r.timeline().count.is_empty());
        assert!(r.spikes(None).top.is_empty());
    }

    #[test]
    fn a_copy_handed_over_at_a_sample_holds_everything_up_to_it() {
        let (mut r, handover) = SampleRecorder::new(limits()).handing_over();
        r.reset();
        r.count_warm_up(2);
        for (i, v) in [5, 70, 1].iter().enumerate() {
            r.record(*v, 10 * (i as i64 + 1));
        }
        r.count_missed(3);
        handover.ask();
        assert_eq!(handover.take(|_| ()), None, "no sample yet since asked");
        r.record(60, 70);
        let template = Stream {
            probe: "timer".into(),
            method: None,
            phase: "main".into(),
            thread: 0,
            cpu: Some(0),
            policy: None,
            period_ns: Some(Nanos(10)),
            samples: 0,
            missed_periods: Some(0),
            overrun_wakes: Some(0),
            early_wakes: Some(0),
            first_sample_ns: None,
            warm_up_samples: 0,
            drift_ns: None,
            elapsed_ns: Some(Nanos(0)),
            timer_slack_ns: None,
            page_faults: Some(0),
            stats: Statistics::compute(&ExactSums::default(), &LatencyHistogram::new()),
            histogram: None,
            spikes: Spikes::default(),
            timeline: Timeline::default(),
        };
        let stream = handover
            .take(|copy| copy.checkpoint_stream(&template))
            .expect("handed over at the sample");
        assert_eq!(stream.samples, 4);
        assert_eq!(stream.missed_periods, Some(3));
        assert_eq!(stream.warm_up_samples, 2);
        assert_eq!(stream.elapsed_ns, Some(Nanos(70)));
        assert_eq!(stream.stats.max_ns, Some(Nanos(70)));
        assert_eq!(stream.timeline.count.iter().sum::<u64>(), 4);
        assert_eq!(stream.overrun_wakes, None, "only the end knows");
        // Measuring goes on untouched; the next copy holds the newer samples.
        r.record(90, 80);
        assert_eq!(r.samples(), 5);
        handover.ask();
        r.record(1, 90);
        let later = handover.take(|c| c.samples()).unwrap();
        assert_eq!(later, 6);
    }
}
