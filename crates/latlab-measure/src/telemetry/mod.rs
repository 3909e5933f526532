//! Telemetry on the timeline: a sampler thread, off the measured CPUs, reads the
//! measured CPUs' interrupt, softirq, steal, frequency, C-state, throttle and SMI
//! counters at every timeline interval boundary and keeps the change over each
//! interval.
//!
//! It shares nothing with the measuring threads — no lock, no atomic they touch — so
//! it cannot hold them up; it sleeps on the probe's clock to the same boundaries
//! their timelines use (from the end of the warm-up, every interval), so interval `i`
//! of a series is interval `i` of every stream's timeline.

pub mod parse;
mod sources;

pub use sources::{Reading, Sources};

use crate::record::TIMELINE_SLOTS;
use latlab_model::telemetry::{PhaseTelemetry, Series, SeriesKind, Source, Telemetry};
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a phase's sampler produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The phase's series.
    pub phase: PhaseTelemetry,
    /// Every source's state.
    pub sources: Vec<Source>,
    /// The CPU it ran on (`None`: on the measured CPUs).
    pub sampler_cpu: Option<usize>,
    /// What it could not do as intended.
    pub notes: Vec<String>,
}

impl Sampled {
    /// Adds this phase's telemetry to the run's (the first phase's sources and
    /// sampler CPU stand for the run: every phase opens the same files).
    pub fn add_to(self, telemetry: &mut Option<Telemetry>) {
        let run = telemetry.get_or_insert_with(|| Telemetry {
            sampler_cpu: self.sampler_cpu,
            sources: self.sources,
            phases: Vec::new(),
            correlations: Vec::new(),
            notes: Vec::new(),
        });
        run.phases.push(self.phase);
        for note in self.notes {
            if !run.notes.contains(&note) {
                run.notes.push(note);
            }
        }
    }
}

/// A series' identity: its CPU, kind and name.
type Key = (usize, SeriesKind, String);

/// The series as they grow, interval by interval.
#[derive(Debug)]
pub struct Accumulator {
    phase: PhaseTelemetry,
    previous: BTreeMap<Key, u64>,
    growing: BTreeMap<Key, Series>,
    intervals: usize,
}

impl Accumulator {
    /// Empty, for `cpus` of `phase` at `interval`, with the readings at the start of
    /// the measured span.
    pub fn new(phase: &str, cpus: &[usize], interval: Nanos, start: Vec<Reading>) -> Accumulator {
        let mut acc = Accumulator {
            phase: PhaseTelemetry {
                phase: phase.to_string(),
                cpus: cpus.to_vec(),
                interval_ns: interval,
                series: Vec::new(),
                series_left_out: 0,
            },
            previous: BTreeMap::new(),
            growing: BTreeMap::new(),
            intervals: 0,
        };
        acc.previous = start
            .into_iter()
            .map(|r| ((r.cpu, r.kind, r.name), r.value))
            .collect();
        acc
    }

    /// The interval width now (it doubles when the series outgrow the timeline's
    /// slots, as the timeline's does).
    pub fn interval(&self) -> Nanos {
        self.phase.interval_ns
    }

    /// Closes an interval with the readings at its end: each series' change (a
    /// level: its value), unknown where either end is missing or a counter went
    /// back.
    pub fn close_interval(&mut self, readings: Vec<Reading>) {
        let index = self.intervals;
        self.intervals += 1;
        let mut now = BTreeMap::new();
        for r in readings {
            let key = (r.cpu, r.kind, r.name.clone());
            let value = match r.kind.is_level() {
                true => Some(r.value),
                false => self
                    .previous
                    .get(&key)
                    .and_then(|&p| r.value.checked_sub(p)),
            };
            let series = self.growing.entry(key.clone()).or_insert_with(|| Series {
                cpu: r.cpu,
                kind: r.kind,
                name: r.name.clone(),
                description: r.description.clone(),
                unit: unit_of(r.kind).to_string(),
                values: Vec::new(),
            });
            series.values.resize(index, None);
            series.values.push(value);
            now.insert(key, r.value);
        }
        for series in self.growing.values_mut() {
            series.values.resize(self.intervals, None);
        }
        self.previous = now;
        if self.intervals >= TIMELINE_SLOTS {
            self.growing.values_mut().for_each(Series::coarsen);
            self.phase.interval_ns = Nanos(self.phase.interval_ns.0 * 2);
            self.intervals = self.intervals.div_ceil(2);
        }
    }

    /// The phase's series: those that changed (a level: were known) in some interval,
    /// the busiest kept.
    pub fn finish(mut self) -> PhaseTelemetry {
        self.phase.series = self
            .growing
            .into_values()
            .filter(|s| match s.kind.is_level() {
                true => s.values.iter().any(Option::is_some),
                false => s.values.iter().flatten().any(|&v| v > 0),
            })
            .collect();
        self.phase.keep_busiest();
        self.phase
    }
}

/// The unit of a kind's values.
fn unit_of(kind: SeriesKind) -> &'static str {
    match kind {
        SeriesKind::Steal | SeriesKind::Cstate => "ns",
        SeriesKind::Frequency => "kHz",
        _ => "count",
    }
}

/// A running sampler.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Sampled>,
}

/// Where and when a sampler samples.
#[derive(Debug, Clone)]
pub struct SamplerPlan {
    /// The phase.
    pub phase: String,
    /// The measured CPUs.
    pub cpus: Vec<usize>,
    /// CPUs it may run on (none: only measured ones are allowed).
    pub housekeeping: Vec<usize>,
    /// The probe's clock, the timeline's.
    pub clock: Clock,
    /// The end of the warm-up on that clock: the timeline's origin.
    pub origin_ns: i64,
    /// The timeline's interval.
    pub interval: Nanos,
    /// The end of the measured span, if it has one.
    pub end_ns: Option<i64>,
}

impl Sampler {
    /// Starts sampling as `plan` says; `None` when the thread cannot start.
    pub fn start(plan: SamplerPlan) -> Option<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("latlab-telemetry".to_string())
            .spawn(move || sample(&plan, &flag))
            .ok()?;
        Some(Sampler { stop, handle })
    }

    /// Stops it, with a last reading for a partial interval, and returns what it
    /// sampled. The flag is set before the thread is woken, so it sees it.
    pub fn finish(self) -> Option<Sampled> {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        self.handle.join().ok()
    }
}

/// The sampler thread.
fn sample(plan: &SamplerPlan, stop: &AtomicBool) -> Sampled {
    let mut notes = Vec::new();
    let sampler_cpu = plan.housekeeping.first().copied();
    match sampler_cpu {
        Some(cpu) => {
            if let Err(e) = latlab_rt::affinity::pin_current_thread(cpu) {
                notes.push(format!(
                    "the telemetry sampler could not be pinned to CPU {cpu}: {e}"
                ));
            }
        }
        None => notes.push(
            "the telemetry sampler ran on the measured CPUs at SCHED_OTHER (no other CPU may \
             be used): it wakes there once per interval"
                .to_string(),
        ),
    }
    let mut sources = Sources::open(Path::new("/"), &plan.cpus);
    let start_reached = sleep_until(plan.clock, plan.origin_ns, stop);
    let mut acc = Accumulator::new(&plan.phase, &plan.cpus, plan.interval, sources.read());
    let mut closed_at = plan.origin_ns;
    let mut ended = !start_reached;
    while !ended {
        let mut boundary = closed_at + acc.interval().0;
        if let Some(end) = plan.end_ns {
            boundary = boundary.min(end.max(plan.origin_ns + 1));
        }
        if !sleep_until(plan.clock, boundary, stop) {
            // Stopped early: the last, partial interval, as the timeline keeps it.
            if plan.clock.now_ns() > closed_at {
                acc.close_interval(sources.read());
            }
            break;
        }
        acc.close_interval(sources.read());
        closed_at = boundary;
        ended = plan.end_ns.is_some_and(|end| boundary >= end);
    }
    Sampled {
        phase: acc.finish(),
        sources: sources.states,
        sampler_cpu,
        notes,
    }
}

/// Sleeps until `deadline_ns` on `clock`, parked, so that it wakes once per interval
/// (on the measured CPUs when it has no other) and at once when [`Sampler::finish`]
/// unparks it; false when stopped first. A wake-up before the deadline (an unpark, or
/// the park's own clock running apart from the probe's) parks again for the rest.
fn sleep_until(clock: Clock, deadline_ns: i64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        let now = clock.now_ns();
        if now >= deadline_ns {
            return true;
        }
        std::thread::park_timeout(std::time::Duration::from_nanos((deadline_ns - now) as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn irq(cpu: usize, name: &str, value: u64) -> Reading {
        Reading {
            cpu,
            kind: SeriesKind::Irq,
            name: name.to_string(),
            description: Some("dev".into()),
            value,
        }
    }

    #[test]
    fn changes_per_interval_with_unknown_where_a_reading_was_missing() {
        let mut acc = Accumulator::new(
            "main",
            &[1],
            Nanos(1_000_000_000),
            vec![irq(1, "36", 100), irq(1, "LOC", 5)],
        );
        acc.close_interval(vec![irq(1, "36", 110), irq(1, "LOC", 5)]);
        acc.close_interval(vec![irq(1, "LOC", 5)]);
        acc.close_interval(vec![irq(1, "36", 150), irq(1, "LOC", 5)]);
        acc.close_interval(vec![irq(1, "36", 151), irq(1, "LOC", 5)]);
        let phase = acc.finish();
        assert_eq!(phase.series.len(), 1, "LOC never changed: left out");
        assert_eq!(phase.series[0].values, vec![Some(10), None, None, Some(1)]);
        assert_eq!(phase.series[0].title(), "IRQ 36 (dev)");
    }

    #[test]
    fn a_long_run_doubles_the_interval_as_the_timeline_does() {
        let mut acc = Accumulator::new("main", &[0], Nanos(1), vec![irq(0, "1", 0)]);
        for i in 1..=TIMELINE_SLOTS as u64 + 2 {
            acc.close_interval(vec![irq(0, "1", i)]);
        }
        assert_eq!(acc.interval(), Nanos(2));
        let phase = acc.finish();
        assert_eq!(phase.series[0].values.len(), TIMELINE_SLOTS / 2 + 2);
        assert_eq!(phase.series[0].values[0], Some(2));
    }
}
