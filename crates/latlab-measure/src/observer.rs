//! The observer effect: what tracing costs the measurement, measured as an A/B.
//!
//! Tracing adds work to every event it records, on the CPU being measured: the full
//! event set raised cyclictest's minimum by 2–4 µs on the project's VM. A Run that
//! explains its spikes therefore says what the explaining cost, from the same machine
//! at the same moment: [`measure_ab`] measures wake-up latency on the measured CPU in
//! short spans with the event set off and on, alternated in ABBA order (off, on, on,
//! off, off, on, …) so that a slow drift of the machine (thermal, the hypervisor, a
//! load warming up) falls on both sides alike instead of on whichever ran last.
//!
//! The event set is switched by the caller's `toggle` (turning the instance's events
//! off and on, so the side without them does not pay for them), on the measuring thread
//! between spans, never inside the timed loop.
//! The first few wakes after each switch are left out ([`SETTLING_WAKES`]): they pay
//! for the switch itself (a system call, cold caches), which the run never pays.

use crate::probe::policy_of;
use latlab_model::explain::{AbSide, ObserverEffect};
use latlab_model::hist::{Edge, RecordingHistogram};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use latlab_rt::affinity::AffinityGuard;
use latlab_rt::clock::Clock;
use latlab_rt::memory;
use latlab_rt::sched::PolicyGuard;
use latlab_rt::wake::{Sleeper, WaitError, WakeSource};
use latlab_rt::RtError;
use std::error::Error;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Wakes left out at the start of every span: they pay for the switch of the event set
/// (its write to tracefs, the caches it cooled), not for tracing itself.
pub const SETTLING_WAKES: u64 = 3;

/// The fewest periods a span must hold: enough that the settling wakes are a small
/// part of it.
pub const MIN_SPAN_PERIODS: u64 = 10 * SETTLING_WAKES;

/// Why the observer A/B could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum ObserverError {
    /// The period, span or rounds cannot make an A/B.
    #[error(
        "the observer A/B needs a period above 0, at least one round and spans of at \
         least {MIN_SPAN_PERIODS} periods: got period {period}, span {span:?}, {rounds} \
         rounds"
    )]
    Settings {
        /// The period asked for.
        period: Nanos,
        /// The span of each side asked for.
        span: Duration,
        /// The rounds asked for.
        rounds: usize,
    },
    /// The measuring thread could not be pinned, given its policy, or could not sleep.
    #[error("the observer A/B could not measure: {0}")]
    Measure(#[from] RtError),
    /// The caller's toggle failed to switch the event set.
    #[error("the observer A/B could not switch tracing {}: {source}", if *.on { "on" } else { "off" })]
    Toggle {
        /// The state it was switching to.
        on: bool,
        /// Why it failed.
        source: Box<dyn Error + Send + Sync>,
    },
}

/// Measures wake-up latency with tracing off and on, alternately, on the calling
/// thread pinned to `cpu` (when given) at `policy`, both restored afterwards.
///
/// `rounds` pairs of spans of `span` each, in ABBA order, every span preceded by
/// `toggle(on)` for its side (also when the side does not change, so both sides pay
/// the same); the thread sleeps to absolute deadlines `period` apart on
/// `CLOCK_MONOTONIC`, as the timer probe's default method does. It returns with the
/// event set off: the last call of `toggle` is `toggle(false)`, also when measuring
/// failed.
pub fn measure_ab<E>(
    cpu: Option<usize>,
    policy: SchedSpec,
    period: Nanos,
    span: Duration,
    rounds: usize,
    toggle: &mut dyn FnMut(bool) -> Result<(), E>,
) -> Result<ObserverEffect, ObserverError>
where
    E: Error + Send + Sync + 'static,
{
    let tally = measure_ab_tally(cpu, policy, period, span, rounds, toggle)?;
    Ok(ObserverEffect {
        off: tally.off.summary(),
        on: tally.on.summary(),
    })
}

/// [`measure_ab`], with every wake of each side accounted for.
pub fn measure_ab_tally<E>(
    cpu: Option<usize>,
    policy: SchedSpec,
    period: Nanos,
    span: Duration,
    rounds: usize,
    toggle: &mut dyn FnMut(bool) -> Result<(), E>,
) -> Result<AbTally, ObserverError>
where
    E: Error + Send + Sync + 'static,
{
    let span_periods = u64::try_from(span.as_nanos())
        .ok()
        .and_then(|ns| ns.checked_div(u64::try_from(period.0).ok()?));
    let span_periods = match span_periods {
        Some(n) if period.0 > 0 && n >= MIN_SPAN_PERIODS && rounds > 0 => n,
        _ => {
            return Err(ObserverError::Settings {
                period,
                span,
                rounds,
            })
        }
    };
    // Both histograms are allocated (and written) before the first span: recording
    // never allocates.
    let mut tally = AbTally::default();
    let _affinity = cpu.map(|c| AffinityGuard::apply(&[c])).transpose()?;
    let _policy = PolicyGuard::apply(policy_of(policy))?;
    memory::prefault_stack::<{ crate::probe::PREFAULT_BYTES }>();
    let mut sleeper = Sleeper::Abs(Clock::Monotonic);
    alternate(
        &mut sleeper,
        period.0,
        span_periods,
        rounds,
        toggle,
        &mut tally,
    )?;
    Ok(tally)
}

/// Whether span `index` (from 0) of an ABBA sequence has the event set on.
pub fn side_of_span(index: usize) -> bool {
    index.div_ceil(2) % 2 == 1
}

/// Every wake of both sides of an A/B.
#[derive(Debug, Clone, Default)]
pub struct AbTally {
    /// Tracing off.
    pub off: SideTally,
    /// Tracing on.
    pub on: SideTally,
}

impl AbTally {
    fn side(&mut self, on: bool) -> &mut SideTally {
        if on {
            &mut self.on
        } else {
            &mut self.off
        }
    }
}

/// Every period of one side's spans: a sample, a settling wake, or missed.
#[derive(Debug, Clone, Default)]
pub struct SideTally {
    /// The samples, ns late.
    pub histogram: RecordingHistogram,
    /// The smallest and largest sample, exact.
    pub extremes: Option<(i64, i64)>,
    /// Spans measured.
    pub spans: u64,
    /// Periods the spans held.
    pub periods: u64,
    /// Wakes left out after a switch ([`SETTLING_WAKES`] per span).
    pub settling: u64,
    /// Periods that passed without a wake (a wake came more than a period late).
    pub missed: u64,
}

impl SideTally {
    /// Samples recorded.
    pub fn samples(&self) -> u64 {
        self.histogram.len()
    }

    #[inline]
    fn record(&mut self, late_ns: i64) {
        self.histogram.record(late_ns);
        self.extremes = Some(match self.extremes {
            Some((lo, hi)) => (lo.min(late_ns), hi.max(late_ns)),
            None => (late_ns, late_ns),
        });
    }

    /// The side's figures for the Run: a percentile only known as a bound (beyond the
    /// histogram's range) is unknown.
    pub fn summary(&self) -> AbSide {
        let histogram = self.histogram.finish();
        let percentile = |p| {
            let (min, max) = self.extremes?;
            histogram
                .percentile_within(p, Nanos(min), Nanos(max), Edge::Highest)?
                .exact()
        };
        AbSide {
            samples: self.samples(),
            min_ns: self.extremes.map(|(min, _)| Nanos(min)),
            p50_ns: percentile(50.0),
            p99_ns: percentile(99.0),
        }
    }
}

/// The spans of the A/B in ABBA order, each preceded by its toggle; ends with the event
/// set off, also on failure.
fn alternate<S: WakeSource, E: Error + Send + Sync + 'static>(
    source: &mut S,
    period: i64,
    span_periods: u64,
    rounds: usize,
    toggle: &mut dyn FnMut(bool) -> Result<(), E>,
    tally: &mut AbTally,
) -> Result<(), ObserverError> {
    let mut switch = |on: bool| {
        toggle(on).map_err(|e| ObserverError::Toggle {
            on,
            source: Box::new(e),
        })
    };
    let mut left_on = false;
    let mut result = Ok(());
    for index in 0..2 * rounds {
        let on = side_of_span(index);
        // Tracing is on from the moment the toggle is asked to switch it on.
        left_on |= on;
        result = switch(on).and_then(|()| {
            measure_span(source, period, span_periods, tally.side(on)).map_err(Into::into)
        });
        if result.is_err() {
            break;
        }
        left_on = on;
    }
    if left_on {
        let off = switch(false);
        result = result.and(off);
    }
    result
}

/// One span of `periods` deadlines `period` apart from now: each period ends up as a
/// sample, a settling wake or missed.
fn measure_span<S: WakeSource>(
    source: &mut S,
    period: i64,
    periods: u64,
    side: &mut SideTally,
) -> Result<(), RtError> {
    let never = AtomicBool::new(false);
    let start = source.now_ns();
    source.arm(start + period, period)?;
    let mut wakes = 0u64;
    let mut index = 1u64;
    while index <= periods {
        let due = start + index as i64 * period;
        let woke = loop {
            match source.wait(due, &never) {
                Ok(wake) => break wake.at_ns,
                Err(WaitError::Interrupted) => continue,
                Err(WaitError::Failed(e)) => return Err(e),
            }
        };
        let late = woke - due;
        // A wake past later deadlines consumed them: they are missed, within the span.
        let consumed = 1 + (late.max(0) / period) as u64;
        side.missed += (consumed - 1).min(periods - index);
        if wakes < SETTLING_WAKES {
            side.settling += 1;
        } else {
            side.record(late);
        }
        wakes += 1;
        index += consumed;
    }
    side.spans += 1;
    side.periods += periods;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_rt::wake::Wake;
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[derive(Debug, thiserror::Error)]
    #[error("the toggle refused")]
    struct Refused;

    /// A virtual clock: each wait wakes a scripted latency after its deadline (then
    /// 1 µs), the clock standing there.
    struct ScriptedWakes {
        now: Cell<i64>,
        late: VecDeque<i64>,
    }

    impl WakeSource for ScriptedWakes {
        fn now_ns(&self) -> i64 {
            self.now.get()
        }
        fn arm(&mut self, _: i64, _: i64) -> Result<(), RtError> {
            Ok(())
        }
        fn wait(&mut self, expected: i64, _: &AtomicBool) -> Result<Wake, WaitError> {
            let at = expected.max(self.now.get()) + self.late.pop_front().unwrap_or(1_000);
            self.now.set(at);
            Ok(Wake {
                at_ns: at,
                expirations: None,
            })
        }
    }

    #[test]
    fn spans_alternate_abba_and_end_with_tracing_off() {
        let order: Vec<bool> = (0..8).map(side_of_span).collect();
        assert_eq!(
            order,
            [false, true, true, false, false, true, true, false],
            "ABBA: each side's spans straddle the other's"
        );
        for rounds in 1..=3 {
            let mut source = ScriptedWakes {
                now: Cell::new(0),
                late: VecDeque::new(),
            };
            let mut calls = Vec::new();
            let mut tally = AbTally::default();
            let mut toggle = |on| {
                calls.push(on);
                Ok::<(), Refused>(())
            };
            alternate(&mut source, 100_000, 40, rounds, &mut toggle, &mut tally).unwrap();
            let spans: Vec<bool> = (0..2 * rounds).map(side_of_span).collect();
            assert_eq!(
                &calls[..2 * rounds],
                &spans[..],
                "one toggle before each span"
            );
            assert_eq!(calls.last(), Some(&false), "rounds {rounds}: ends off");
            assert_eq!(
                (tally.off.spans, tally.on.spans),
                (rounds as u64, rounds as u64)
            );
        }
    }

    #[test]
    fn every_period_is_a_sample_a_settling_wake_or_missed() {
        // The third wake of the first span is 3.5 periods late; a late wake at the
        // very end runs past the span.
        let mut late: VecDeque<i64> = [1_000, 2_000, 350_000].into();
        late.extend(std::iter::repeat_n(1_500, 200));
        late.push_back(10_000_000);
        let mut source = ScriptedWakes {
            now: Cell::new(0),
            late,
        };
        let mut tally = AbTally::default();
        alternate(
            &mut source,
            100_000,
            50,
            2,
            &mut |_| Ok::<(), Refused>(()),
            &mut tally,
        )
        .unwrap();
        for side in [&tally.off, &tally.on] {
            assert_eq!(side.periods, 100);
            assert_eq!(side.samples() + side.settling + side.missed, side.periods);
            assert_eq!(side.settling, 2 * SETTLING_WAKES);
        }
        assert_eq!(tally.off.missed, 3, "the 3.5-period wake of the first span");
    }

    #[test]
    fn a_failing_toggle_is_reported_and_tracing_left_off() {
        let mut source = ScriptedWakes {
            now: Cell::new(0),
            late: VecDeque::new(),
        };
        let mut calls = Vec::new();
        let mut toggle = |on| {
            calls.push(on);
            match calls.len() {
                3 => Err(Refused), // the second "on"
                _ => Ok(()),
            }
        };
        let err = alternate(
            &mut source,
            100_000,
            40,
            2,
            &mut toggle,
            &mut AbTally::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, ObserverError::Toggle { on: true, .. }),
            "{err}"
        );
        assert_eq!(calls, [false, true, true, false]);
    }

    #[test]
    fn bad_settings_are_refused_naming_them() {
        for (period, span, rounds) in [
            (Nanos(0), Duration::from_millis(10), 1),
            (Nanos(100_000), Duration::from_micros(500), 1),
            (Nanos(100_000), Duration::from_millis(10), 0),
        ] {
            let err = measure_ab(None, SchedSpec::DEFAULT, period, span, rounds, &mut |_| {
                Ok::<(), Refused>(())
            })
            .unwrap_err();
            assert!(matches!(err, ObserverError::Settings { .. }), "{err}");
        }
    }

    /// A CPU this process may use, the second one when there are two.
    /// The CPU the tests measure on, held by one test at a time: one's measuring or
    /// competing thread would delay the other's wake-ups.
    fn measured_cpu() -> (std::sync::MutexGuard<'static, ()>, usize) {
        static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let held = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
        let allowed = latlab_rt::affinity::allowed_cpus().unwrap();
        (held, *allowed.get(1).unwrap_or(&allowed[0]))
    }

    #[test]
    fn a_toggle_that_does_nothing_gives_both_sides_their_samples() {
        let (_serial, cpu) = measured_cpu();
        let period = Nanos(200_000);
        let tally = measure_ab_tally(
            Some(cpu),
            SchedSpec::Fifo { priority: 90 },
            period,
            Duration::from_millis(40),
            3,
            &mut |_| Ok::<(), Refused>(()),
        )
        .expect("SCHED_FIFO 90 on a pinned thread: run the tests as root");
        for side in [&tally.off, &tally.on] {
            assert_eq!(side.spans, 3);
            assert_eq!(side.periods, 3 * 200);
            assert_eq!(side.samples() + side.settling + side.missed, side.periods);
            assert!(side.samples() > side.periods / 2, "{side:?}");
            let summary = side.summary();
            assert_eq!(summary.samples, side.samples());
            let (min, p50, p99) = (summary.min_ns.unwrap(), summary.p50_ns, summary.p99_ns);
            assert!(min <= p50.unwrap() && p50 <= p99, "{summary:?}");
        }
    }

    /// A SCHED_FIFO thread above the measuring one, pinned to its CPU, busy for
    /// `busy` of every `every`: it delays every wake-up that falls in its busy time.
    struct Competitor {
        stop: Arc<std::sync::atomic::AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Competitor {
        fn start(cpu: usize, busy: Duration, every: Duration) -> Competitor {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let thread = std::thread::spawn(move || {
                latlab_rt::affinity::pin_current_thread(cpu).unwrap();
                latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Fifo {
                    priority: 95,
                })
                .unwrap();
                while !flag.load(Ordering::Relaxed) {
                    let until = std::time::Instant::now() + busy;
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(every - busy);
                }
            });
            Competitor {
                stop,
                thread: Some(thread),
            }
        }
    }

    impl Drop for Competitor {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    #[test]
    fn a_competitor_running_only_while_on_shows_on_the_on_side() {
        let (_serial, cpu) = measured_cpu();
        let mut competitor: Option<Competitor> = None;
        let mut toggle = |on: bool| {
            match (on, competitor.is_some()) {
                (true, false) => {
                    competitor = Some(Competitor::start(
                        cpu,
                        Duration::from_micros(500),
                        Duration::from_millis(2),
                    ))
                }
                (false, true) => competitor = None,
                _ => {}
            }
            Ok::<(), Refused>(())
        };
        let tally = measure_ab_tally(
            Some(cpu),
            SchedSpec::Fifo { priority: 90 },
            Nanos(100_000),
            Duration::from_millis(50),
            2,
            &mut toggle,
        )
        .expect("SCHED_FIFO 90 on a pinned thread: run the tests as root");
        assert!(competitor.is_none(), "the A/B ends with the toggle off");
        let (off, on) = (tally.off.summary(), tally.on.summary());
        // A quarter of the on side's deadlines fall in the competitor's busy time: each
        // hold of 500 µs misses some 100 µs periods, about 50 holds in the on spans. A
        // host stall can put a few ms into either side's p99 (it is a VM), but not
        // that many missed periods into the off side.
        assert!(
            tally.on.missed > tally.off.missed,
            "off {off:?} missed {}, on {on:?} missed {}",
            tally.off.missed,
            tally.on.missed
        );
        for side in [&tally.off, &tally.on] {
            assert_eq!(side.samples() + side.settling + side.missed, side.periods);
        }
    }

    /// What the kernel's buffer of `cpu` holds (`entries` of its `stats`).
    fn entries(instance: &latlab_rt::tracefs::TraceInstance, cpu: usize) -> u64 {
        let stats = std::fs::read_to_string(instance.dir().join(format!("per_cpu/cpu{cpu}/stats")))
            .unwrap();
        stats
            .lines()
            .find_map(|l| l.strip_prefix("entries:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn a_tracefs_instance_switched_by_the_toggle_records_only_while_on() {
        use latlab_rt::tracefs::TraceInstance;
        let (_serial, cpu) = measured_cpu();
        let instance = TraceInstance::create_tagged("observer-test")
            .expect("a tracefs instance: run the tests as root with tracefs mounted");
        instance.set_cpus(&[cpu]).unwrap();
        for (system, name) in [("sched", "sched_switch"), ("irq", "irq_handler_entry")] {
            instance.set_event(system, name, true).unwrap();
        }
        // The buffer as each toggle found it, and as it left it: reading
        // before a toggle races the measured thread's next switch, so the
        // off spans are judged from the count taken after switching off
        // (and after in-flight commits on the measured CPU have landed).
        let mut seen = Vec::new();
        let mut toggle = |on| {
            let before = entries(&instance, cpu);
            instance.set_tracing(on)?;
            if !on {
                std::thread::sleep(Duration::from_millis(1));
            }
            seen.push((on, before, entries(&instance, cpu)));
            Ok::<(), latlab_rt::tracefs::TraceError>(())
        };
        let effect = measure_ab(
            Some(cpu),
            SchedSpec::Fifo { priority: 90 },
            Nanos(200_000),
            Duration::from_millis(40),
            2,
            &mut toggle,
        )
        .unwrap();
        // Spans off, on, on, off.
        assert_eq!(seen.len(), 4, "{seen:?}");
        let before: Vec<u64> = seen.iter().map(|&(_, b, _)| b).collect();
        assert_eq!(before[..2], [0, 0], "nothing recorded while off: {seen:?}");
        assert!(before[2] > 0, "switches recorded in the on span: {seen:?}");
        assert!(before[3] > before[2], "and in the second: {seen:?}");
        assert_eq!(
            entries(&instance, cpu),
            seen[3].2,
            "nothing in the last, off span: {seen:?}"
        );
        assert!(
            effect.off.samples > 0 && effect.on.samples > 0,
            "{effect:?}"
        );
    }
}
