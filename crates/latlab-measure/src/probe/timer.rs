//! The timer probe: periodic wake-up latency.
//!
//! Each sample spans two instants on the probe's clock: the instant the thread was due
//! to wake (its deadline) and the first clock read after it ran again. The sample is
//! `t_wake − t_due`, signed: a negative sample is the kernel waking the thread early, a
//! POSIX violation, counted as an early wake and never hidden. This is cyclictest's
//! measurement (absolute deadlines) and, with `rel`, the Wilshire test Rapid Reaction
//! Linux was judged by: `t_due` is then the clock read before a relative sleep plus
//! the period, and the accumulated lag is reported as drift.
//!
//! When a wake lands past the following deadline, the periods that passed are counted
//! as missed and the loop continues at the next future deadline (cyclictest skips them
//! silently). `samples + missed_periods` always equals the periods elapsed. A relative
//! schedule has no fixed deadlines: there, every whole period a sleep overslept is
//! missed, and what remains of the schedule's lag (the fractions of a period, the
//! loop's own time between sleeps) is the drift, so each period of the measured span
//! is accounted once: `samples + missed_periods + drift / period` = periods elapsed.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use crate::record::SampleRecorder;
use latlab_model::run::{EncodedHistogram, Event, ProbePlan, Statistics, Stream, TimerSettings};
use latlab_model::spec::{ClockName, TimerMethod};
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::memory;
use latlab_rt::wake::{Method, ReplayStep, Sleeper, WaitError, WakeSource};
use latlab_rt::RtError;
use std::sync::atomic::{AtomicBool, Ordering};

/// The timer probe in the catalogue: the default probe of `latlab run`.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "timer",
    summary: "periodic wake-up latency (the default; latlab methods lists the sleep methods)",
    definition: "Each period (--period, default 1 ms) the measuring thread sleeps until its \
                 next deadline with the chosen method and reads the clock (--clock) as soon \
                 as it runs again; a sample is that read minus the deadline, signed (an \
                 early wake is negative). With method=rel the deadline is the clock read \
                 before a relative sleep plus the period, and the schedule's lag is the \
                 drift. A wake past the next deadline counts the periods it passed as \
                 missed. --method is short for method=.",
    params: &[ParamInfo {
        key: "method",
        choices: &["abs", "rel", "timerfd", "posix-timer", "spin", "hybrid"],
        default: "abs",
        help: "how the thread sleeps to its deadline (latlab methods)",
    }],
    honours: &[
        Setting::Period,
        Setting::Clock,
        Setting::Method,
        Setting::HybridMargin,
        Setting::Breaktrace,
    ],
    policies: |_| Policies::Any,
    build,
    // A parsed spec's method is one of the parameter's choices, so it always parses.
    plan: Some(|setup| {
        ProbePlan::Timer(settings_of(
            setup,
            method_of_param(setup).unwrap_or(TimerMethod::Abs),
        ))
    }),
};

/// The `method` parameter.
fn method_of_param(setup: &ProbeSetup) -> Result<TimerMethod, BuildError> {
    TimerMethod::parse(setup.param("method"))
        .map_err(|e| BuildError::param(INFO.name, "method", setup, e.to_string()))
}

/// The timer's settings (as the Run's plan records them) from a setup.
pub fn settings_of(setup: &ProbeSetup, method: TimerMethod) -> TimerSettings {
    TimerSettings {
        method,
        period_ns: setup.period,
        clock: setup.clock,
        policy: setup.policy,
        hybrid_margin_ns: setup.hybrid_margin,
        timer_slack_ns: setup.timer_slack,
        top_spikes: setup.top_spikes,
        spike_threshold_ns: setup.spike_threshold,
        spike_capacity: setup.spike_capacity,
        timeline_interval_ns: setup.timeline_interval,
        breaktrace_ns: setup.breaktrace.as_ref().map(|wire| wire.limit()),
    }
}

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let settings = settings_of(setup, method_of_param(setup)?);
    if settings.method == TimerMethod::Timerfd && settings.clock == ClockName::Tai {
        return Err(BuildError::Setting {
            probe: INFO.name,
            setting: Setting::Clock,
            why: "timerfd cannot use the TAI clock: use --method posix-timer or abs with tai, \
                  or timerfd with monotonic, realtime or boottime"
                .to_string(),
        });
    }
    if settings.method == TimerMethod::Hybrid && settings.hybrid_margin_ns >= settings.period_ns {
        return Err(BuildError::Setting {
            probe: INFO.name,
            setting: Setting::HybridMargin,
            why: format!(
                "{} must be shorter than the period {}",
                settings.hybrid_margin_ns, settings.period_ns
            ),
        });
    }
    Ok(Box::new(TimerProbe {
        settings,
        setup: setup.clone(),
    }))
}

/// The timer probe with its settings.
#[derive(Debug)]
pub struct TimerProbe {
    settings: TimerSettings,
    setup: ProbeSetup,
}

/// The kernel clock for a clock name.
pub fn clock_of(name: ClockName) -> Clock {
    match name {
        ClockName::Monotonic => Clock::Monotonic,
        ClockName::Realtime => Clock::Realtime,
        ClockName::Boottime => Clock::Boottime,
        ClockName::Tai => Clock::Tai,
    }
}

/// The sleep method for a method name.
pub fn method_of(method: TimerMethod) -> Method {
    match method {
        TimerMethod::Abs => Method::Abs,
        TimerMethod::Rel => Method::Rel,
        TimerMethod::Timerfd => Method::Timerfd,
        TimerMethod::PosixTimer => Method::PosixTimer,
        TimerMethod::Spin => Method::Spin,
        TimerMethod::Hybrid => Method::Hybrid,
    }
}

impl Probe for TimerProbe {
    fn name(&self) -> &'static str {
        "timer"
    }

    fn clock(&self) -> Clock {
        clock_of(self.settings.clock)
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let s = &self.settings;
        let sleeper = Sleeper::new(method_of(s.method), self.clock(), s.hybrid_margin_ns.0);
        Ok(Box::new(TimerWorker {
            settings: s.clone(),
            placement: placement.clone(),
            sleeper: Some(sleeper),
            recorder: self.setup.recorder_for(placement),
            summary: LoopSummary::default(),
            page_faults: 0,
        }))
    }
}

struct TimerWorker {
    settings: TimerSettings,
    placement: Placement,
    /// Taken (and so disarmed) on the measuring thread when measuring ends: timers and
    /// signal masks belong to that thread.
    sleeper: Option<Sleeper>,
    recorder: SampleRecorder,
    summary: LoopSummary,
    page_faults: u64,
}

impl TimerWorker {
    /// Runs everything the measured loop will run before it starts: the loop itself on
    /// a replayed script that takes each of its branches (warm-up, on time, early,
    /// interrupted, late by several periods, a periodic timer's overrun count, a
    /// spike, the top-K list filling and turning over), then the real sleep method a
    /// few times with a short period; finally it clears what they recorded, writing
    /// every page of the recorder.
    ///
    /// Afterwards every code and data page the measurement needs has been faulted in —
    /// and, with on-fault memory locking, locked — and caches and branch predictors
    /// are warm, so none of that lands in the first real samples.
    fn rehearse_loop(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        let period = self.settings.period_ns.0;
        let spike = self.settings.spike_threshold_ns.map_or(10_000, |n| n.0 + 1);
        let wake = |late_ns, expirations| ReplayStep::Wake {
            late_ns,
            expirations,
        };
        let script = [
            wake(1_000, None),
            wake(2_000, None),
            wake(-10, None),
            ReplayStep::Interrupt,
            wake(3 * period + 5, None),
            wake(5, Some(2)),
            wake(spike, None),
            wake(3_000, None),
        ];
        let periods =
            (script.len() + 4 + self.settings.top_spikes + 8) as i64 + spike / period.max(1) + 4;
        let config = LoopConfig {
            period,
            relative: self.settings.method.is_relative(),
            window: Window {
                start: 0,
                warm_up_end: period,
                end: Some(periods * period),
            },
        };
        let mut replay = Sleeper::replay(&script);
        let mut summary = LoopSummary::default();
        let rehearsal = AtomicBool::new(false);
        measure_loop(
            &mut replay,
            &config,
            &mut self.recorder,
            live,
            &rehearsal,
            &mut summary,
        )?;

        // The real sleep method, a few short periods (hybrid: longer than its margin).
        let short = self.settings.hybrid_margin_ns.0.max(0) + 20_000;
        let mut real = Sleeper::new(
            method_of(self.settings.method),
            clock_of(self.settings.clock),
            self.settings.hybrid_margin_ns.0,
        );
        let mut due = real.now_ns() + short;
        real.arm(due, short)?;
        for _ in 0..3 {
            // A stop request cuts the rehearsal short: with a long timer slack each of
            // these sleeps may last as long as the slack.
            if stop.load(Ordering::Relaxed) {
                break;
            }
            match real.wait(due, stop) {
                Ok(_) | Err(WaitError::Interrupted) => {}
                Err(WaitError::Failed(e)) => return Err(e),
            }
            due += short;
        }
        drop(real);

        self.recorder.reset();
        live.reset();
        Ok(())
    }
}

impl Worker for TimerWorker {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        self.rehearse_loop(live, stop)
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        let config = LoopConfig {
            period: self.settings.period_ns.0,
            relative: self.settings.method.is_relative(),
            window: *window,
        };
        let Some(mut sleeper) = self.sleeper.take() else {
            return Ok(()); // measured already
        };
        let faults_before = memory::thread_page_faults();
        let result = measure_loop(
            &mut sleeper,
            &config,
            &mut self.recorder,
            live,
            stop,
            &mut self.summary,
        );
        self.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        drop(sleeper);
        result
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        (vec![self.describe_now(phase)], Vec::new())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        vec![self.describe_now(phase)]
    }
}

impl TimerWorker {
    fn describe_now(&self, phase: &str) -> Stream {
        stream_of(
            &self.settings,
            &self.placement,
            &self.recorder,
            &self.summary,
            self.page_faults,
            phase,
        )
    }
}

/// The Run stream of a timer thread of `phase`: the samples `recorder` holds and what
/// the loop counted (`summary`), with the thread's `settings` and `placement`, and the
/// page faults it took while measuring.
pub fn stream_of(
    settings: &TimerSettings,
    placement: &Placement,
    recorder: &SampleRecorder,
    summary: &LoopSummary,
    page_faults: u64,
    phase: &str,
) -> Stream {
    let (s, rec) = (summary, recorder);
    let drift = settings
        .method
        .is_relative()
        .then(|| relative_drift(s, rec.samples(), settings.period_ns.0))
        .flatten();
    let histogram = rec.histogram();
    Stream {
        probe: "timer".to_string(),
        method: Some(settings.method.name().to_string()),
        phase: phase.to_string(),
        thread: placement.thread,
        cpu: placement.cpu,
        policy: Some(placement.policy),
        period_ns: Some(settings.period_ns),
        samples: rec.samples(),
        missed_periods: Some(s.missed_periods),
        overrun_wakes: Some(s.overrun_wakes),
        early_wakes: Some(rec.early_wakes()),
        first_sample_ns: s.first_sample.map(Nanos),
        warm_up_samples: s.warm_up_samples,
        drift_ns: drift.map(Nanos),
        elapsed_ns: Some(Nanos(s.elapsed())),
        timer_slack_ns: Some(placement.timer_slack_ns),
        page_faults: Some(page_faults),
        stats: Statistics::compute(rec.sums(), &histogram),
        histogram: Some(EncodedHistogram::from_histogram(&histogram)),
        spikes: rec.spikes(settings.spike_threshold_ns),
        timeline: rec.timeline(),
    }
}

/// Inputs of the measuring loop.
#[derive(Debug, Clone, Copy)]
pub struct LoopConfig {
    /// Period, ns.
    pub period: i64,
    /// Relative sleeps (deadline = clock read before the sleep + period).
    pub relative: bool,
    /// The span to measure.
    pub window: Window,
}

/// What the loop counted besides the samples themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopSummary {
    /// Samples discarded as warm-up.
    pub warm_up_samples: u64,
    /// Periods that passed without a wake-up.
    pub missed_periods: u64,
    /// Wakes that missed at least one period.
    pub overrun_wakes: u64,
    /// The very first sample (even if in the warm-up).
    pub first_sample: Option<i64>,
    /// Start of the measured span: the end of the warm-up, or for relative sleeps the
    /// clock read before the first measured sleep (their schedule starts there).
    pub measured_from: i64,
    /// The last measured wake-up.
    pub last_wake: i64,
}

impl LoopSummary {
    /// The measured span, from its start to the last measured wake-up, ns.
    pub fn elapsed(&self) -> i64 {
        (self.last_wake - self.measured_from).max(0)
    }
}

/// How far a relative schedule's last wake-up lies behind a drift-free schedule of its
/// samples and missed periods from the start of the measured span: the lag that is not
/// whole missed periods (`None` before the first measured sample).
pub fn relative_drift(summary: &LoopSummary, samples: u64, period: i64) -> Option<i64> {
    let accounted = (samples + summary.missed_periods) as i64 * period;
    (samples > 0).then(|| summary.elapsed() - accounted)
}

/// The measuring loop, written once for every sleep method.
///
/// Between `arm` and the end it allocates nothing, takes no lock, prints nothing and
/// calls the kernel only to sleep and (through the vDSO) to read the clock. A sample
/// over the break-trace limit ends it: the recorder raises `stop`.
pub fn measure_loop<S: WakeSource>(
    source: &mut S,
    config: &LoopConfig,
    recorder: &mut SampleRecorder,
    live: &LiveStats,
    stop: &AtomicBool,
    summary: &mut LoopSummary,
) -> Result<(), RtError> {
    let period = config.period;
    let window = config.window;
    let warm_up_end = window.warm_up_end;
    let end = window.end.unwrap_or(i64::MAX);
    let mut next = window.start + period;
    *summary = LoopSummary {
        measured_from: warm_up_end,
        last_wake: warm_up_end,
        ..LoopSummary::default()
    };
    source.arm(next, period)?;
    let mut span_started = !config.relative;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let expected = if config.relative {
            source.now_ns() + period
        } else {
            next
        };
        if expected > end {
            return Ok(());
        }
        // A relative sleep belongs to the warm-up when it begins before the warm-up
        // ends; the first one after starts the measured span (and its schedule).
        let warm_up = match config.relative {
            true => expected - period < warm_up_end,
            false => expected <= warm_up_end,
        };
        if !warm_up && !span_started {
            summary.measured_from = expected - period;
            summary.last_wake = summary.measured_from;
            span_started = true;
            // Spikes are placed from here on (out of the measured code: once per run).
            recorder.span_starts_at(summary.measured_from);
        }
        let measured_from = summary.measured_from;
        // An interruption resumes the same wait (a relative sleep with what remained),
        // unless it came to stop the run.
        let wake = loop {
            match source.wait(expected, stop) {
                Ok(wake) => break wake,
                Err(WaitError::Interrupted) if stop.load(Ordering::Relaxed) => return Ok(()),
                Err(WaitError::Interrupted) => continue,
                Err(WaitError::Failed(e)) => return Err(e),
            }
        };
        let sample = wake.at_ns - expected;
        // Periods consumed by this wake: the kernel's count for periodic timers,
        // otherwise every whole period the wake came late.
        let consumed = match wake.expirations {
            Some(n) => n.max(1),
            None => 1 + (sample.max(0) / period) as u64,
        };
        // Only deadlines inside the measured span count as missed. A relative
        // schedule's span ends at its last wake, so all its whole periods count.
        let missed = match config.relative {
            true if warm_up => 0,
            true => consumed - 1,
            false => window.boundaries_measured(expected, period, consumed - 1),
        };
        if summary.first_sample.is_none() {
            summary.first_sample = Some(sample);
        }
        next = expected + consumed as i64 * period;
        if missed > 0 {
            summary.missed_periods += missed;
            summary.overrun_wakes += 1;
        }
        if warm_up {
            summary.warm_up_samples += 1;
            recorder.count_warm_up(1);
            recorder.count_missed(missed);
            live.publish_missed(missed);
            continue;
        }
        summary.last_wake = wake.at_ns;
        let at = expected - measured_from;
        recorder.record(sample, at);
        // The deadlines this wake passed over come after its sample: a checkpoint's
        // copy, made at the sample, counts every deadline up to it and none after.
        recorder.count_missed(missed);
        live.publish(sample, missed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaktrace::Tripwire;
    use crate::record::RecorderLimits;
    use latlab_rt::wake::Wake;
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::sync::Arc;

    /// A simulated clock: each wait wakes `latency` after the later of the expected
    /// instant and now, taking latencies from a script. With `periodic` it behaves like
    /// a kernel interval timer and reports how many periods expired.
    struct SimulatedTimer {
        now: Cell<i64>,
        latencies: VecDeque<i64>,
        periodic: Option<(i64, i64)>, // (next expiry, period)
        loop_cost: i64,
    }

    impl SimulatedTimer {
        fn new(latencies: &[i64]) -> Self {
            SimulatedTimer {
                now: Cell::new(0),
                latencies: latencies.iter().copied().collect(),
                periodic: None,
                loop_cost: 0,
            }
        }
    }

    impl WakeSource for SimulatedTimer {
        fn now_ns(&self) -> i64 {
            let t = self.now.get();
            self.now.set(t + self.loop_cost);
            t
        }

        fn arm(&mut self, first: i64, period: i64) -> Result<(), RtError> {
            if self.periodic.is_some() {
                self.periodic = Some((first, period));
            }
            Ok(())
        }

        fn wait(&mut self, expected: i64, _stop: &AtomicBool) -> Result<Wake, WaitError> {
            let latency = self.latencies.pop_front().unwrap_or(0);
            match &mut self.periodic {
                None => {
                    let at = self.now.get().max(expected) + latency;
                    self.now.set(at);
                    Ok(Wake {
                        at_ns: at,
                        expirations: None,
                    })
                }
                Some((next, period)) => {
                    let at = self.now.get().max(*next) + latency;
                    let expired = 1 + (at - *next) / *period;
                    *next += expired * *period;
                    self.now.set(at);
                    Ok(Wake {
                        at_ns: at,
                        expirations: Some(expired as u64),
                    })
                }
            }
        }
    }

    const P: i64 = 1_000_000;

    fn run(
        source: &mut SimulatedTimer,
        relative: bool,
        warm_up: i64,
        periods: i64,
    ) -> (SampleRecorder, LoopSummary) {
        let config = LoopConfig {
            period: P,
            relative,
            window: Window {
                start: 0,
                warm_up_end: warm_up,
                end: Some(warm_up + periods * P),
            },
        };
        let mut recorder = SampleRecorder::new(RecorderLimits {
            top: 4,
            spike_threshold: None,
            spike_capacity: 0,
            timeline_interval: 10 * P,
            timeline_slots: 100,
        });
        let mut summary = LoopSummary::default();
        let live = LiveStats::default();
        let stop = AtomicBool::new(false);
        measure_loop(source, &config, &mut recorder, &live, &stop, &mut summary).unwrap();
        assert_eq!(live.snapshot().samples, recorder.samples());
        (recorder, summary)
    }

    #[test]
    fn late_wake_counts_missed_periods_and_skips_to_the_next_future_deadline() {
        // Wake 3 is 2.5 periods late: the deadlines at +1 P and +2 P are missed.
        let mut sim = SimulatedTimer::new(&[10, 10, 2 * P + P / 2, 10, 10]);
        let (rec, sum) = run(&mut sim, false, 0, 20);
        assert_eq!(sum.missed_periods, 2);
        assert_eq!(sum.overrun_wakes, 1);
        assert_eq!(rec.samples() + sum.missed_periods, 20);
        assert_eq!(rec.sums().max, 2 * P + P / 2);
        assert_eq!(rec.early_wakes(), 0);
        assert_eq!(sum.first_sample, Some(10));
    }

    #[test]
    fn periodic_timer_count_decides_the_next_deadline() {
        let mut sim = SimulatedTimer::new(&[5, 3 * P + 7, 5, 5, 5, 5, 5, 5, 5]);
        sim.periodic = Some((0, 0));
        let (rec, sum) = run(&mut sim, false, 0, 12);
        assert_eq!(sum.missed_periods, 3);
        assert_eq!(rec.samples() + sum.missed_periods, 12);
        // After the overrun every sample is measured against the kernel's deadline.
        assert_eq!(rec.sums().min, 5);
        assert_eq!(rec.samples(), 9);
    }

    #[test]
    fn early_wakes_are_counted_not_hidden() {
        let mut sim = SimulatedTimer::new(&[-300, 20, -1, 20]);
        let (rec, _) = run(&mut sim, false, 0, 4);
        assert_eq!(rec.early_wakes(), 2);
        assert_eq!(rec.sums().min, -300);
        assert_eq!(rec.histogram().len(), 4);
    }

    #[test]
    fn relative_sleeps_accumulate_drift() {
        // Each relative sleep oversleeps; the schedule slides by the sum of the lags
        // plus the loop's own cost between wake and next sleep.
        let mut sim = SimulatedTimer::new(&[100, 200, 300, 400]);
        sim.loop_cost = 50;
        let (rec, sum) = run(&mut sim, true, 0, 4);
        let drift = relative_drift(&sum, rec.samples(), P).unwrap();
        assert!(rec.samples() <= 4);
        let lags: i64 = [100, 200, 300, 400][..rec.samples() as usize].iter().sum();
        assert!(drift >= lags, "drift {drift} < lags {lags}");
        assert_eq!(rec.sums().sum, lags as i128);
    }

    #[test]
    fn relative_overrun_counts_whole_periods_lost() {
        let mut sim = SimulatedTimer::new(&[10, 2 * P + 1, 10]);
        let (_, sum) = run(&mut sim, true, 0, 10);
        assert_eq!(sum.missed_periods, 2);
        assert_eq!(sum.overrun_wakes, 1);
    }

    #[test]
    fn rel_counts_a_missed_period_once_not_also_in_the_drift() {
        // The second sleep overslept by 2 periods and 1 ns: 2 periods missed, and the
        // drift is only what is left of the lags (10 + 1 + 10 ns).
        let mut sim = SimulatedTimer::new(&[10, 2 * P + 1, 10]);
        let (rec, sum) = run(&mut sim, true, 0, 10);
        let drift = relative_drift(&sum, rec.samples(), P).unwrap();
        assert_eq!((rec.samples(), sum.missed_periods, drift), (7, 2, 21));
        assert_eq!(
            (rec.samples() + sum.missed_periods) as i64 * P + drift,
            sum.elapsed(),
            "samples + missed + drift / period = periods elapsed"
        );
    }

    #[test]
    fn rel_warm_up_leaves_its_missed_periods_and_lag_out_of_the_span() {
        // A warm-up sleep 3 periods late: neither its missed periods nor its lag
        // belong to the measured span, which starts with the first sleep after it.
        let mut sim = SimulatedTimer::new(&[3 * P + 5, 7, 7, 7, 7]);
        let (rec, sum) = run(&mut sim, true, 2 * P, 6);
        let drift = relative_drift(&sum, rec.samples(), P).unwrap();
        assert_eq!(sum.warm_up_samples, 1);
        assert_eq!(sum.missed_periods, 0);
        assert_eq!(sum.measured_from, 4 * P + 5);
        assert_eq!(drift, 7 * rec.samples() as i64);
        assert_eq!(rec.timeline().count.iter().sum::<u64>(), rec.samples());
    }

    #[test]
    fn warm_up_is_discarded_but_the_first_sample_is_kept() {
        let mut sim = SimulatedTimer::new(&[9_999, 1, 2, 3, 4, 5]);
        let (rec, sum) = run(&mut sim, false, 2 * P, 4);
        assert_eq!(sum.warm_up_samples, 2);
        assert_eq!(rec.samples(), 4);
        assert_eq!(sum.first_sample, Some(9_999));
        assert_eq!(rec.sums().max, 5);
    }

    #[test]
    fn stop_flag_ends_the_loop_at_once() {
        let mut sim = SimulatedTimer::new(&[]);
        let config = LoopConfig {
            period: P,
            relative: false,
            window: Window {
                start: 0,
                warm_up_end: 0,
                end: None,
            },
        };
        let mut rec = SampleRecorder::new(RecorderLimits {
            top: 1,
            spike_threshold: None,
            spike_capacity: 0,
            timeline_interval: P,
            timeline_slots: 1,
        });
        let stop = AtomicBool::new(true);
        let mut summary = LoopSummary::default();
        measure_loop(
            &mut sim,
            &config,
            &mut rec,
            &LiveStats::default(),
            &stop,
            &mut summary,
        )
        .unwrap();
        assert_eq!(rec.samples(), 0);
    }

    #[test]
    fn breaktrace_stops_at_the_first_sample_over_the_limit() {
        let mut sim = SimulatedTimer::new(&[10, 20, 5_000, 10, 10]);
        let config = LoopConfig {
            period: P,
            relative: false,
            window: Window {
                start: 0,
                warm_up_end: 0,
                end: Some(100 * P),
            },
        };
        let rec = SampleRecorder::new(RecorderLimits {
            top: 1,
            spike_threshold: None,
            spike_capacity: 0,
            timeline_interval: P,
            timeline_slots: 200,
        });
        let wire = Arc::new(Tripwire::new(Nanos(1_000)));
        wire.arm();
        let mut rec = rec.breaking_at(Some(wire.clone()));
        let mut summary = LoopSummary::default();
        measure_loop(
            &mut sim,
            &config,
            &mut rec,
            &LiveStats::default(),
            wire.halt(),
            &mut summary,
        )
        .unwrap();
        assert_eq!(rec.samples(), 3);
        let trip = wire.tripped().unwrap();
        assert_eq!((trip.at, trip.value), (Nanos(3 * P), Nanos(5_000)));
    }

    #[test]
    fn an_overrun_at_the_end_counts_no_deadline_past_the_end() {
        let mut sim = SimulatedTimer::new(&[10, 10, 10, 10, 10 * P]);
        let (rec, sum) = run(&mut sim, false, 0, 5);
        assert_eq!(rec.samples(), 5);
        assert_eq!(sum.missed_periods, 0);
        assert_eq!(sum.overrun_wakes, 0);
    }
}
