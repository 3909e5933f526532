//! `clock`: what reading a clock costs, as a distribution.
//!
//! Once per period the measuring thread reads the clock `burst` times back to back;
//! each sample is the difference between two consecutive reads, so it spans one
//! complete read (the call, the vDSO or counter access, the conversion) plus the loop's
//! bookkeeping. Between bursts it sleeps to the next period (absolute
//! `clock_nanosleep` on CLOCK_MONOTONIC), so the CPU is not monopolised. The TSC is
//! read with RDTSC and converted with a rate measured against CLOCK_MONOTONIC_RAW
//! during the rehearsal.

use super::account::Account;
use super::info::{
    BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting,
};
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use crate::notice::Notice;
use latlab_model::run::{Event, Stream};
use latlab_model::Nanos;
use latlab_rt::clock::{self, Clock};
use latlab_rt::wake::{self, WaitError};
use latlab_rt::{memory, RtError};
use std::sync::atomic::{AtomicBool, Ordering};

/// The clock probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "clock",
    summary: "cost of one clock read, back to back (clock_gettime per clock, or the TSC)",
    definition: "Each period (--period, default 1 ms) the measuring thread reads the chosen \
                 clock `burst` times back to back; a sample is the difference between two \
                 consecutive reads: one whole read plus the loop's bookkeeping. For tsc, \
                 RDTSC cycles are converted to ns with a rate measured against \
                 CLOCK_MONOTONIC_RAW before measuring. The thread sleeps to the next period \
                 between bursts.",
    params: &[
        ParamInfo {
            key: "clock",
            choices: &[
                "monotonic",
                "monotonic-raw",
                "monotonic-coarse",
                "realtime",
                "realtime-coarse",
                "boottime",
                "tai",
                "tsc",
            ],
            default: "monotonic",
            help: "the clock read",
        },
        ParamInfo {
            key: "burst",
            choices: &["10", "100", "1000", "10000"],
            default: "100",
            help: "reads per period",
        },
    ],
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |_| Policies::Any,
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let source = match setup.param("clock") {
        "tsc" if clock::tsc().is_some() => Source::Tsc,
        "tsc" => {
            return Err(BuildError::param(
                INFO.name,
                "clock",
                setup,
                "this CPU architecture has no TSC: choose another clock",
            ))
        }
        name => Source::Posix(clock::read_id(name).ok_or_else(|| {
            BuildError::param(INFO.name, "clock", setup, "not a clock this probe reads")
        })?),
    };
    let burst = setup
        .param("burst")
        .parse()
        .map_err(|_| BuildError::param(INFO.name, "burst", setup, "give a number"))?;
    Ok(Box::new(ClockProbe {
        setup: setup.clone(),
        source,
        burst,
    }))
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Posix(clock::ClockId),
    Tsc,
}

struct ClockProbe {
    setup: ProbeSetup,
    source: Source,
    burst: usize,
}

impl Probe for ClockProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn notices(&self) -> Vec<Notice> {
        // A clock coarser than a microsecond cannot time its own back-to-back reads.
        let coarse = match self.source {
            Source::Posix(id) => clock::resolution_ns(id).filter(|&ns| ns > 1_000),
            Source::Tsc => None,
        };
        coarse
            .map(|ns| Notice::CoarseClock {
                clock: self.setup.param("clock").to_string(),
                resolution: Nanos(ns),
            })
            .into_iter()
            .collect()
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        Ok(Box::new(ClockWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            source: self.source,
            burst: self.burst,
            // ns per cycle as a 32.32 fixed-point factor; 1.0 until calibrated.
            tsc_scale: 1 << 32,
            account: Account::new(self.setup.recorder_for(placement)),
        }))
    }
}

struct ClockWorker {
    setup: ProbeSetup,
    placement: Placement,
    source: Source,
    burst: usize,
    tsc_scale: u64,
    account: Account,
}

impl ClockWorker {
    /// One read of the source, in ns (the TSC scaled by the calibrated rate).
    #[inline(always)]
    fn read(&self) -> i64 {
        match self.source {
            Source::Posix(id) => clock::read_ns(id),
            Source::Tsc => {
                let cycles = clock::tsc().unwrap_or(0) as u128;
                ((cycles * self.tsc_scale as u128) >> 32) as i64
            }
        }
    }

    /// One burst: `burst` reads, a sample per consecutive pair, recorded at `at`.
    #[inline(always)]
    fn burst(&mut self, at: i64, record: bool, live: &LiveStats) -> u64 {
        let mut previous = self.read();
        for taken in 1..=self.burst as u64 {
            let now = self.read();
            let sample = now - previous;
            previous = now;
            if record {
                let tripped = self.account.recorder.record(sample, at);
                live.publish(sample, 0);
                if self.account.first.is_none() {
                    self.account.first = Some(Nanos(sample));
                }
                // The break-trace limit ends the burst at the sample over it.
                if tripped {
                    return taken;
                }
            }
        }
        self.burst as u64
    }
}

impl Worker for ClockWorker {
    fn rehearse(&mut self, live: &LiveStats, _stop: &AtomicBool) -> Result<(), RtError> {
        if let Source::Tsc = self.source {
            self.tsc_scale = tsc_scale(Nanos::from_millis(20))?;
        }
        for i in 0..3 {
            self.burst(i, true, live);
        }
        self.account.reset(live);
        Ok(())
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        let period = self.setup.period.0.max(1);
        let faults_before = memory::thread_page_faults();
        // Bursts are due at the end of each period, as every probe's samples are: the
        // last one at the end of the window (see `Window`).
        let mut due = window.start + period;
        let mut last = window.start;
        while !stop.load(Ordering::Relaxed) && window.end.is_none_or(|end| due <= end) {
            match wake::sleep_until(Clock::Monotonic, due) {
                Ok(()) => {}
                Err(WaitError::Interrupted) => continue,
                Err(WaitError::Failed(e)) => return Err(e),
            }
            let measured = due > window.warm_up_end;
            let taken = self.burst(due - window.warm_up_end, measured, live);
            if !measured {
                self.account.warm_up_samples += taken;
                self.account.recorder.count_warm_up(taken);
            }
            last = Clock::Monotonic.now_ns();
            due += period;
        }
        self.account.elapsed = Nanos((last - window.warm_up_end).max(0));
        self.account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        Ok(())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        vec![self.describe_now(phase)]
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        (vec![self.describe_now(phase)], Vec::new())
    }
}

/// The TSC's rate in ns per cycle as a 32.32 fixed-point factor, measured against
/// CLOCK_MONOTONIC_RAW over `span` (1.0 where there is no TSC).
pub(crate) fn tsc_scale(span: Nanos) -> Result<u64, RtError> {
    let raw = clock::read_id("monotonic-raw").unwrap_or(Clock::Monotonic.id());
    let (t0, c0) = (clock::read_ns(raw), clock::tsc());
    let end = Clock::Monotonic.now_ns() + span.0;
    match wake::sleep_until(Clock::Monotonic, end) {
        Ok(()) | Err(WaitError::Interrupted) => {}
        Err(WaitError::Failed(e)) => return Err(e),
    }
    let (t1, c1) = (clock::read_ns(raw), clock::tsc());
    Ok(match (c0, c1) {
        (Some(c0), Some(c1)) => {
            let cycles = c1.wrapping_sub(c0).max(1) as u128;
            ((((t1 - t0).max(1) as u128) << 32) / cycles) as u64
        }
        _ => 1 << 32,
    })
}

impl ClockWorker {
    fn describe_now(&self, phase: &str) -> Stream {
        self.account.stream(&INFO, &self.setup, &self.placement, phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::info;
    use crate::breaktrace::Tripwire;
    use latlab_model::spec::SchedSpec;
    use std::sync::Arc;

    #[test]
    fn a_burst_ends_at_the_sample_over_the_break_trace_limit() {
        let setup = info::test_setup(&INFO, &[("clock", "monotonic")], &[0]);
        // Every read-to-read gap is at least 0 ns, so every sample is over -1 ns.
        let wire = Arc::new(Tripwire::new(Nanos(-1)));
        wire.arm();
        let mut worker = ClockWorker {
            account: Account::new(setup.recorder().breaking_at(Some(wire.clone()))),
            setup,
            placement: Placement {
                thread: 0,
                cpu: None,
                policy: SchedSpec::DEFAULT,
                timer_slack_ns: 0,
                feed: None,
                checkpoint: None,
            },
            source: Source::Posix(clock::read_id("monotonic").expect("a POSIX clock")),
            burst: 100,
            tsc_scale: 1 << 32,
        };
        let taken = worker.burst(1, true, &LiveStats::default());
        assert_eq!((taken, worker.account.recorder.samples()), (1, 1));
        assert!(wire.tripped().is_some());
    }
}
