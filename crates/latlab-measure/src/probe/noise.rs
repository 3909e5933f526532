//! `noise`: the OS and hardware noise a busy loop sees (oslat, osnoise in user space).
//!
//! The measuring thread spins for the whole window on its CPU, reading the clock
//! (CLOCK_MONOTONIC through the vDSO, or the TSC with RDTSC) back to back. Each sample
//! is the gap between two consecutive reads: the loop's own cost when nothing
//! interrupts it, plus whatever took the CPU away in between (an interrupt, a
//! softirq, a kernel thread, an SMI, a hypervisor exit, RT throttling). Every gap
//! goes into the distribution; every gap above `threshold` is also an event with its
//! time (bounded: the first `events` are kept, the rest counted), and their sum over
//! the measured span is the share of CPU time lost.
//!
//! The loop is the probe's nature: it does not sleep, so a real-time policy keeps
//! everything of lower priority off the CPU until the kernel's RT throttling
//! (`sched_rt_runtime_us`) takes its share; gaps of that length are recognised and
//! named in the summary rather than fought. There is no partner: no thread/process
//! variant, no cross-CPU placement.

use super::account::Account;
use super::info::{
    BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting,
};
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use latlab_model::run::{Event, Stream};
use latlab_model::units::parse_duration;
use latlab_model::Nanos;
use latlab_rt::clock::{self, Clock};
use latlab_rt::{memory, RtError};
use std::sync::atomic::{AtomicBool, Ordering};

/// The noise probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "noise",
    summary: "OS noise under a pinned busy loop: gaps between back-to-back clock reads \
              (oslat, osnoise in user space), with the share of CPU time lost",
    definition: "The measuring thread spins on its CPU for the whole window, at the run's \
                 policy, reading the clock back to back (CLOCK_MONOTONIC via the vDSO, or \
                 the TSC converted with a rate measured against CLOCK_MONOTONIC_RAW). A \
                 sample is the gap between two consecutive reads: the loop's own cost \
                 (clock read plus recording, the floor) or, when something took the CPU \
                 away, that interruption. Every gap above `threshold` is also an event \
                 (kind `noise`, time and length; the first `events` are kept, the rest \
                 counted) and one `noise-summary` event per CPU gives the time lost in \
                 them (value_ns) and its share of the measured span. RT throttling \
                 (sched_rt_runtime_us) stops a real-time busy loop for the rest of each \
                 throttling period: such gaps are named in the summary. --period does not \
                 apply; there is no partner, so no thread/process or cross-CPU variant.",
    params: &[
        ParamInfo {
            key: "clock",
            choices: &["monotonic", "tsc"],
            default: "monotonic",
            help: "what the loop reads: clock_gettime(CLOCK_MONOTONIC) or the TSC (as oslat)",
        },
        ParamInfo {
            key: "threshold",
            choices: &[],
            default: "5us",
            help: "gaps above this are events and count as lost time (a duration, e.g. 1us, 20us)",
        },
        ParamInfo {
            key: "events",
            choices: &[],
            default: "100",
            help: "how many gaps above the threshold to keep as events per CPU (0 to 100000)",
        },
    ],
    honours: &[Setting::Breaktrace],
    policies: |_| Policies::Any,
    build,
    plan: None,
};

/// Most events a stream may keep.
const MAX_EVENTS: usize = 100_000;

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let tsc = match setup.param("clock") {
        "tsc" if clock::tsc().is_some() => true,
        "tsc" => {
            return Err(BuildError::param(
                INFO.name,
                "clock",
                setup,
                "this CPU architecture has no TSC: use clock=monotonic",
            ))
        }
        _ => false,
    };
    let threshold = parse_duration(setup.param("threshold"))
        .map_err(|e| BuildError::param(INFO.name, "threshold", setup, e.to_string()))?;
    if threshold.0 <= 0 {
        return Err(BuildError::param(
            INFO.name,
            "threshold",
            setup,
            "give a duration above zero, e.g. 5us",
        ));
    }
    let events = setup
        .param("events")
        .parse::<usize>()
        .ok()
        .filter(|&n| n <= MAX_EVENTS)
        .ok_or_else(|| {
            BuildError::param(
                INFO.name,
                "events",
                setup,
                format!("give a number from 0 to {MAX_EVENTS}"),
            )
        })?;
    Ok(Box::new(NoiseProbe {
        setup: setup.clone(),
        tsc,
        threshold,
        events,
    }))
}

struct NoiseProbe {
    setup: ProbeSetup,
    tsc: bool,
    threshold: Nanos,
    events: usize,
}

impl Probe for NoiseProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let rt_limits = placement
            .policy
            .is_realtime()
            .then(RtLimits::read)
            .flatten();
        Ok(Box::new(NoiseWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            tsc: self.tsc,
            tsc_scale: 1 << 32,
            threshold: self.threshold.0,
            throttle_gap: rt_limits.map_or(i64::MAX, |l| l.throttle_gap_ns()),
            rt_limits,
            account: Account::new(self.setup.recorder_for(placement)),
            kept: Vec::with_capacity(self.events),
            lost: Lost::default(),
        }))
    }
}

/// The kernel's RT throttling settings, when they limit real-time tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RtLimits {
    runtime_us: i64,
    period_us: i64,
}

impl RtLimits {
    fn read() -> Option<RtLimits> {
        let read = |name: &str| -> Option<i64> {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        RtLimits::throttling(read("sched_rt_runtime_us")?, read("sched_rt_period_us")?)
    }

    /// The limits when they throttle (`runtime` -1 or ≥ `period` never does).
    fn throttling(runtime_us: i64, period_us: i64) -> Option<RtLimits> {
        (runtime_us >= 0 && runtime_us < period_us).then_some(RtLimits {
            runtime_us,
            period_us,
        })
    }

    /// Gaps at least this long are taken for throttling: half the time real-time
    /// tasks are held off in each period, or 1 ms if less (the fair server of recent
    /// kernels lends SCHED_OTHER tasks only what they need of that time).
    fn throttle_gap_ns(self) -> i64 {
        ((self.period_us - self.runtime_us) * 1_000 / 2).min(1_000_000)
    }
}

/// Gaps above the threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Lost {
    /// How many.
    gaps: u64,
    /// Their sum, ns.
    total: i64,
    /// The longest.
    longest: i64,
    /// How many were long enough to be RT throttling.
    throttle_like: u64,
}

struct NoiseWorker {
    setup: ProbeSetup,
    placement: Placement,
    tsc: bool,
    tsc_scale: u64,
    threshold: i64,
    throttle_gap: i64,
    rt_limits: Option<RtLimits>,
    account: Account,
    /// Gaps above the threshold kept as events: (start of the gap from the start of
    /// the measured span, length), ns; allocated up front.
    kept: Vec<(i64, i64)>,
    lost: Lost,
}

/// A gap above the threshold: off the loop's fast path.
#[cold]
#[inline(never)]
fn note_gap(kept: &mut Vec<(i64, i64)>, lost: &mut Lost, throttle_gap: i64, at: i64, gap: i64) {
    lost.gaps += 1;
    lost.total += gap;
    lost.longest = lost.longest.max(gap);
    if gap >= throttle_gap {
        lost.throttle_like += 1;
    }
    if kept.len() < kept.capacity() {
        kept.push((at, gap)); // within the capacity reserved in `prepare`
    }
}

impl NoiseWorker {
    /// Spins from now until `end` (in the reader's units), discarding gaps that end
    /// before `warm_end`; returns the first and last read of the measured part.
    /// `read` gives the counter, `to_ns` turns a difference of two reads into ns.
    #[inline(always)]
    fn spin<R: Fn() -> i64, N: Fn(i64) -> i64>(
        &mut self,
        read: R,
        to_ns: N,
        warm_end: i64,
        end: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> (i64, i64) {
        let threshold = self.threshold;
        let throttle_gap = self.throttle_gap;
        let mut prev = read();
        while prev < warm_end {
            if stop.load(Ordering::Relaxed) {
                return (prev, prev);
            }
            prev = read();
            self.account.warm_up_samples += 1;
            self.account.recorder.count_warm_up(1);
        }
        let from = prev;
        let mut first = self.account.first.is_none();
        // Positions, not differences, are converted, so that the gaps add up to the
        // span exactly (converting each TSC difference would round every one down).
        let mut at = 0;
        loop {
            let now = read();
            let now_at = to_ns(now - from);
            let gap = now_at - at;
            if first {
                self.account.first = Some(Nanos(gap));
                first = false;
            }
            self.account.recorder.record(gap, at);
            live.publish(gap, 0);
            if gap > threshold {
                note_gap(&mut self.kept, &mut self.lost, throttle_gap, at, gap);
            }
            at = now_at;
            prev = now;
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
        }
        (from, prev)
    }

    /// Measures from now to `end` and `warm_end` (CLOCK_MONOTONIC, ns) on the chosen
    /// counter; returns the measured span in ns.
    fn run(&mut self, warm_end: i64, end: i64, stop: &AtomicBool, live: &LiveStats) -> i64 {
        if self.tsc {
            let scale = self.tsc_scale as i128;
            // The window's instants on the TSC: one pair of reads maps one onto the other.
            let (mono, cycles) = (Clock::Monotonic.now_ns(), tsc_now());
            let to_cycles = |t: i64| {
                let ns = t.saturating_sub(mono) as i128;
                (cycles as i128 + (ns << 32) / scale.max(1)).min(i64::MAX as i128) as i64
            };
            let (from, last) = self.spin(
                tsc_now,
                |d: i64| ((d as i128 * scale) >> 32) as i64,
                to_cycles(warm_end),
                if end == i64::MAX {
                    i64::MAX
                } else {
                    to_cycles(end)
                },
                stop,
                live,
            );
            ((last.wrapping_sub(from) as i128 * scale) >> 32) as i64
        } else {
            let (from, last) = self.spin(
                || Clock::Monotonic.now_ns(),
                |d: i64| d,
                warm_end,
                end,
                stop,
                live,
            );
            last - from
        }
    }

    fn summary(&self, label: &str) -> String {
        let elapsed = self.account.elapsed.0.max(1);
        let share = self.lost.total as f64 * 100.0 / elapsed as f64;
        let mut text = format!(
            "{label}: {} gaps above {} lost {} of {} measured ({share:.3} % of the CPU), \
             longest {}",
            self.lost.gaps,
            Nanos(self.threshold),
            Nanos(self.lost.total),
            self.account.elapsed,
            Nanos(self.lost.longest),
        );
        if self.lost.gaps > self.kept.len() as u64 {
            text.push_str(&format!(
                "; {} kept as events, {} more counted only",
                self.kept.len(),
                self.lost.gaps - self.kept.len() as u64
            ));
        }
        if let (Some(limits), true) = (self.rt_limits, self.lost.throttle_like > 0) {
            text.push_str(&format!(
                ". {} of the gaps lasted {} or more, as long as RT throttling holds a \
                 real-time busy loop off: sched_rt_runtime_us {} of sched_rt_period_us {} \
                 lets real-time tasks run {:.0} % of each period (recent kernels' fair \
                 server lends the rest to SCHED_OTHER tasks as they need it); the run's \
                 warnings say whether the kernel throttled (rt-throttled)",
                self.lost.throttle_like,
                Nanos(self.throttle_gap),
                limits.runtime_us,
                limits.period_us,
                limits.runtime_us as f64 * 100.0 / limits.period_us as f64,
            ));
        }
        text
    }
}

#[inline(always)]
fn tsc_now() -> i64 {
    clock::tsc().unwrap_or(0) as i64
}

impl Worker for NoiseWorker {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        if self.tsc {
            self.tsc_scale = super::clock::tsc_scale(Nanos::from_millis(20))?;
        }
        // A few milliseconds of the real loop, every branch taken: a gap above the
        // threshold (forced by a threshold of 0) and the events list filled.
        let threshold = self.threshold;
        self.threshold = 0;
        let now = Clock::Monotonic.now_ns();
        self.run(now + 1_000_000, now + 3_000_000, stop, live);
        self.threshold = threshold;
        self.account.reset(live);
        let blank = (0, 0);
        self.kept.clear();
        self.kept.spare_capacity_mut().iter_mut().for_each(|s| {
            s.write(blank);
        });
        self.lost = Lost::default();
        Ok(())
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        let faults_before = memory::thread_page_faults();
        let end = window.end.unwrap_or(i64::MAX);
        self.account.elapsed = Nanos(self.run(window.warm_up_end, end, stop, live).max(0));
        self.account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        Ok(())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        vec![self.describe_now(phase)]
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        let stream = self.describe_now(phase);
        let label = format!("{} [{phase}]", stream.label());
        let event = |kind: &str, at: i64, value: i64, message: String| Event {
            kind: kind.to_string(),
            at_ns: Nanos(at),
            thread: self.placement.thread,
            cpu: self.placement.cpu,
            value_ns: Some(Nanos(value)),
            message,
        };
        let mut events: Vec<Event> = self
            .kept
            .iter()
            .map(|&(at, gap)| {
                event(
                    "noise",
                    at,
                    gap,
                    format!(
                        "{label}: the busy loop lost the CPU for {} at {:.6} s",
                        Nanos(gap),
                        Nanos(at).as_secs_f64()
                    ),
                )
            })
            .collect();
        events.push(event(
            "noise-summary",
            self.account.elapsed.0,
            self.lost.total,
            self.summary(&label),
        ));
        (vec![stream], events)
    }
}

impl NoiseWorker {
    fn describe_now(&self, phase: &str) -> Stream {
        self.account.stream(&INFO, &self.setup, &self.placement, phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::info;

    fn setup(params: &[(&str, &str)]) -> ProbeSetup {
        info::test_setup(&INFO, params, &[0])
    }

    #[test]
    fn parameters_are_checked_with_the_fix() {
        assert!(build(&setup(&[])).is_ok());
        assert!(build(&setup(&[("threshold", "20us")])).is_ok());
        let err = |p: &[(&str, &str)]| build(&setup(p)).err().unwrap().to_string();
        assert!(err(&[("threshold", "5")]).contains("unit"));
        assert!(err(&[("threshold", "0us")]).contains("above zero"));
        assert!(err(&[("events", "lots")]).contains("0 to 100000"));
        assert!(err(&[("events", "100001")]).contains("0 to 100000"));
    }

    #[test]
    fn only_limiting_rt_settings_count_as_throttling() {
        assert_eq!(RtLimits::throttling(-1, 1_000_000), None);
        assert_eq!(RtLimits::throttling(1_000_000, 1_000_000), None);
        let l = RtLimits::throttling(950_000, 1_000_000).unwrap();
        assert_eq!(l.throttle_gap_ns(), 1_000_000);
        let l = RtLimits::throttling(999_000, 1_000_000).unwrap();
        assert_eq!(l.throttle_gap_ns(), 500_000);
    }

    #[test]
    fn gaps_above_the_threshold_are_bounded_and_summed() {
        let mut kept = Vec::with_capacity(2);
        let mut lost = Lost::default();
        for (at, gap) in [(10, 6_000), (20, 30_000_000), (30, 7_000)] {
            note_gap(&mut kept, &mut lost, 25_000_000, at, gap);
        }
        assert_eq!(kept, vec![(10, 6_000), (20, 30_000_000)]);
        assert_eq!(lost.gaps, 3);
        assert_eq!(lost.total, 30_013_000);
        assert_eq!(lost.longest, 30_000_000);
        assert_eq!(lost.throttle_like, 1);
    }
}
