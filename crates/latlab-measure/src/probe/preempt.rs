//! `preempt`: preemption time — how long from a low-priority task's last instant on the
//! CPU to a high-priority task's first, when the high one wakes and takes the CPU.
//!
//! Rhealstone's preemption time (Kar 1990), measured per event: a spinner (a thread or
//! a forked process, SCHED_FIFO one level below the measuring thread, on its CPU)
//! stamps `CLOCK_MONOTONIC` into a shared slot in a tight loop; the measuring thread
//! sleeps to an absolute deadline (`clock_nanosleep`), and its first act on return is
//! to read the clock (t2) and the spinner's last stamp (t1). sample = t2 − t1: the
//! timer interrupt, the wake-up, the switch from the spinner and the return to user
//! space. The spinner spins only in a window before each deadline (a quarter of the
//! period, 50 µs at least, half the period at most), so the CPU is not monopolised; a
//! cycle in which it did not stamp inside the window gives no sample and is counted as
//! missed.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::partners::{self, Parts, Periodic};
use super::tally::Tally;
use super::{Placement, Probe, Worker};
use crate::live::LiveStats;
use latlab_rt::clock::Clock;
use latlab_rt::partner::{self, Partner, SharedRegion, Spinner, TaskKind};
use latlab_rt::RtError;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The preemption probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "preempt",
    summary: "preemption time: a waking high-priority task takes the CPU from a spinning low one",
    definition: "A spinner (SCHED_FIFO one priority below the measuring thread, on the same \
                 CPU; a thread or a forked process) writes CLOCK_MONOTONIC into a shared slot \
                 in a tight loop while a window is open. Each period the measuring thread opens \
                 the window (a quarter of the period, 50 us at least, half at most, before the \
                 deadline) and sleeps to the deadline (clock_nanosleep, absolute); on return it \
                 reads the clock first (t2), then the slot (t1). sample = t2 - t1: the timer \
                 interrupt, wake-up, switch from the spinner and return to user space. \
                 Non-negative. A cycle whose window saw no stamp is missed. Only same-CPU: a \
                 task on another CPU is not preempted. The spinner's time counts against RT \
                 throttling (sched_rt_runtime_us).",
    params: &[
        ParamInfo {
            key: "task",
            choices: &["thread", "process"],
            default: "thread",
            help: "the spinner: a thread of latlab or a forked process (MAP_SHARED slot)",
        },
        ParamInfo {
            key: "cpu",
            choices: &["same"],
            default: "same",
            help: "the spinner shares the measuring thread's CPU (preemption needs it)",
        },
    ],
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |_| Policies::LevelsBelow(1),
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    Ok(Box::new(PreemptProbe {
        setup: setup.clone(),
        kind: partners::task_kind(setup),
    }))
}

struct PreemptProbe {
    setup: ProbeSetup,
    kind: TaskKind,
}

impl Probe for PreemptProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let place = partners::partner_place(placement, 1)?;
        let spinner = Arc::new(SharedRegion::new(Spinner::default())?);
        let partner = partner::spawn(self.kind, &spinner, 0, place)?;
        let period = self.setup.period.0.max(2);
        Ok(Box::new(PreemptWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            window: (period / 4).max(50_000).min(period / 2),
            spinner,
            partner: Some(partner),
            tally: Tally::new(self.setup.recorder_for(placement)),
        }))
    }
}

struct PreemptWorker {
    setup: ProbeSetup,
    placement: Placement,
    /// How long before each deadline the spinner spins, ns.
    window: i64,
    spinner: Arc<SharedRegion<Spinner>>,
    partner: Option<Partner>,
    tally: Tally,
}

/// How one cycle ended.
enum Cycle {
    Sample(i64),
    /// The spinner did not stamp in the window.
    NoStamp,
    Interrupted,
}

impl PreemptWorker {
    /// One cycle due at `due`, from the window's opening: open it, sleep to the
    /// deadline, measure.
    #[inline(always)]
    fn cycle(&mut self, due: i64) -> Result<Cycle, RtError> {
        let opened = self.spinner.open_window();
        let woke = partners::sleep_until(due)?;
        let t2 = Clock::Monotonic.now_ns();
        let t1 = self.spinner.last_stamp();
        self.spinner.close_window();
        Ok(match (woke, t1 >= opened) {
            (false, _) => Cycle::Interrupted,
            (true, true) => Cycle::Sample(t2 - t1),
            (true, false) => Cycle::NoStamp,
        })
    }
}

impl Periodic for PreemptWorker {
    const INFO: &'static ProbeInfo = &INFO;
    const REHEARSAL_CYCLES: usize = 5;

    fn parts(&mut self) -> Parts<'_> {
        Parts {
            setup: &self.setup,
            placement: &self.placement,
            tally: &mut self.tally,
        }
    }

    /// The window opens this long before each deadline.
    fn lead(&self) -> i64 {
        self.window
    }

    #[inline(always)]
    fn run(
        &mut self,
        due: i64,
        at: i64,
        measured: bool,
        _stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<bool, RtError> {
        match self.cycle(due)? {
            Cycle::Sample(s) => self.tally.sample(s, at, measured, live),
            Cycle::NoStamp => self.tally.miss(measured, live),
            Cycle::Interrupted => return Ok(false),
        }
        Ok(true)
    }

    /// Stops the spinner and waits for it to end.
    fn release(&mut self) {
        self.spinner.stop();
        self.partner.take();
    }
}

impl Drop for PreemptWorker {
    fn drop(&mut self) {
        self.release();
    }
}
