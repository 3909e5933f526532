//! `pi`: priority inversion and its cure — how long a high-priority task waits for a
//! mutex held by a low-priority one while a medium-priority one wants the CPU.
//!
//! Rhealstone's deadlock-break time (Kar 1990), as a distribution. Three tasks on one
//! CPU: low L (SCHED_FIFO two levels below the measuring thread) takes the mutex and
//! works for [`HOLD_NS`] of its own CPU time; the measuring thread H, woken each period,
//! waits until L holds the mutex, wakes medium M (one level below H; it would spin for
//! up to [`HOG_NS`]) and locks the mutex: sample = H's return from the lock − its call.
//! With `PTHREAD_PRIO_INHERIT` L runs at H's priority until it unlocks, so the wait is
//! bounded by L's remaining work; without, M takes the CPU from L and H waits for M.
//! H's lock gives up after [`TIMEOUT_NS`]: that cycle is an inversion — no sample, a
//! missed cycle, an event — and H then tells M to stop, so L can finish.
//!
//! L and M are threads of latlab (`task=thread`) or forked processes (`task=process`,
//! the mutex then `PTHREAD_PROCESS_SHARED` in a `MAP_SHARED` mapping); either way they
//! run the sealed loops of [`Inversion`], which a forked child may run.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::partners::{self, Parts, Periodic, WAIT_NS};
use super::tally::{Mark, Tally};
use super::{Placement, Probe, Worker};
use crate::live::LiveStats;
use latlab_model::run::Event;
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::partner::{self, Inversion, Partner, SharedRegion, TaskKind};
use latlab_rt::pthread::Protocol;
use latlab_rt::RtError;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// CPU time L works while holding the mutex.
pub const HOLD_NS: i64 = 100_000;
/// Longest M spins when nobody stops it.
pub const HOG_NS: i64 = 5_000_000;
/// Longest H waits for the mutex: ten times L's work. A longer wait can only mean the
/// holder was kept off the CPU — an inversion.
pub const TIMEOUT_NS: i64 = 10 * HOLD_NS;

/// The priority-inversion probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "pi",
    summary: "priority inversion: a high task's wait for a mutex held by a low one while a medium one spins",
    definition: "Three SCHED_FIFO tasks on one CPU: low L (two priorities below the measuring \
                 thread) locks a pthread mutex and works 100 us of its own CPU time before \
                 unlocking; each period the measuring thread H wakes L, waits until L holds \
                 the mutex, wakes medium M (one priority below H; it spins up to 5 ms or \
                 until H is done) and locks the mutex. sample = H's return from \
                 pthread_mutex_clocklock - its call, CLOCK_MONOTONIC. protocol=inherit: \
                 PTHREAD_PRIO_INHERIT, L inherits H's priority and the wait is bounded by L's \
                 work. protocol=none: M runs before L; H gives up after 1 ms and the cycle is \
                 an inversion (no sample; counted in missed and reported as events). \
                 task=thread: L and M are threads of latlab; task=process: forked processes, \
                 the mutex PTHREAD_PROCESS_SHARED in MAP_SHARED memory.",
    params: &[
        ParamInfo {
            key: "protocol",
            choices: &["inherit", "none"],
            default: "inherit",
            help: "the mutex protocol: PTHREAD_PRIO_INHERIT or PTHREAD_PRIO_NONE",
        },
        ParamInfo {
            key: "task",
            choices: &["thread", "process"],
            default: "thread",
            help: "L and M: threads of latlab, or forked processes sharing a \
                   PTHREAD_PROCESS_SHARED mutex (MAP_SHARED)",
        },
        ParamInfo {
            key: "cpu",
            choices: &["same"],
            default: "same",
            help: "all three on the measuring thread's CPU (an inversion needs one CPU)",
        },
    ],
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |_| Policies::LevelsBelow(2),
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    Ok(Box::new(PiProbe {
        setup: setup.clone(),
        kind: partners::task_kind(setup),
        protocol: match setup.param("protocol") {
            "none" => Protocol::None,
            _ => Protocol::Inherit,
        },
    }))
}

struct PiProbe {
    setup: ProbeSetup,
    kind: TaskKind,
    protocol: Protocol,
}

impl Probe for PiProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let between_processes = self.kind == TaskKind::Process;
        let shared = Arc::new(Inversion::create(
            self.protocol,
            between_processes,
            HOLD_NS,
            HOG_NS,
        )?);
        let mut worker = PiWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            shared: shared.clone(),
            partners: Vec::with_capacity(2),
            cycle: 0,
            tally: Tally::new(self.setup.recorder_for(placement)),
        };
        // Member 0 is L (two levels below H), member 1 is M (one level below). A failed
        // spawn drops the worker, which stops and reaps the partners already started.
        for (member, below) in [(0, 2), (1, 1)] {
            let place = partners::partner_place(placement, below)?;
            worker
                .partners
                .push(partner::spawn(self.kind, &shared, member, place)?);
        }
        Ok(Box::new(worker))
    }
}

struct PiWorker {
    setup: ProbeSetup,
    placement: Placement,
    shared: Arc<SharedRegion<Inversion>>,
    partners: Vec<Partner>,
    cycle: u32,
    tally: Tally,
}

/// How one cycle ended.
enum Cycle {
    /// H got the mutex after waiting this long.
    Acquired(i64),
    /// H gave up after waiting this long: an inversion.
    Inversion(i64),
    /// L did not take the mutex in time.
    NoHolder,
}

impl PiWorker {
    fn cycle(&mut self) -> Result<Cycle, RtError> {
        let s = &**self.shared;
        self.cycle = self.cycle.wrapping_add(1).max(1);
        let cycle = self.cycle;
        s.start_low(cycle);
        if !s.wait_low_holds(cycle, WAIT_NS) {
            return Ok(Cycle::NoHolder);
        }
        s.start_medium(cycle);
        let call = Clock::Monotonic.now_ns();
        let acquired = s.lock_until(call + TIMEOUT_NS);
        let returned = Clock::Monotonic.now_ns();
        s.stop_medium(cycle);
        match acquired? {
            true => {
                s.unlock();
                Ok(Cycle::Acquired(returned - call))
            }
            false => Ok(Cycle::Inversion(returned - call)),
        }
    }
}

impl Periodic for PiWorker {
    const INFO: &'static ProbeInfo = &INFO;

    fn parts(&mut self) -> Parts<'_> {
        Parts {
            setup: &self.setup,
            placement: &self.placement,
            tally: &mut self.tally,
        }
    }

    fn run(
        &mut self,
        _due: i64,
        at: i64,
        measured: bool,
        _stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<bool, RtError> {
        match self.cycle()? {
            Cycle::Acquired(s) => self.tally.sample(s, at, measured, live),
            Cycle::Inversion(waited) => {
                self.tally.miss(measured, live);
                let mark = Mark {
                    at,
                    value: waited,
                    detail: 0,
                };
                self.tally.mark(mark, measured);
            }
            Cycle::NoHolder => self.tally.miss(measured, live),
        }
        Ok(true)
    }

    fn events(&mut self) -> Vec<Event> {
        let t = &self.tally;
        let protocol = self.setup.param("protocol");
        let mut events: Vec<Event> = t
            .marks
            .iter()
            .map(|&m| {
                t.event(
                    &self.placement,
                    "inversion",
                    Some(m),
                    format!(
                        "priority inversion (protocol={protocol}): the high-priority task gave \
                         up on the mutex after {} while the medium-priority task held the CPU",
                        Nanos(m.value)
                    ),
                )
            })
            .collect();
        events.push(t.event(
            &self.placement,
            "inversions",
            None,
            format!(
                "pi protocol={protocol} on CPU {}: {} priority inversion(s) (waits over {}) in \
                 {} cycles{}",
                self.placement.cpu.map_or("-".to_string(), |c| c.to_string()),
                t.marks_total,
                Nanos(TIMEOUT_NS),
                t.cycles,
                if t.marks_total > t.marks.len() as u64 {
                    format!("; the first {} are listed", t.marks.len())
                } else {
                    String::new()
                }
            ),
        ));
        events
    }

    /// Stops L and M and waits for them (a process that does not end is killed by its
    /// pid and reaped).
    fn release(&mut self) {
        self.shared.stop();
        self.partners.clear();
    }
}

impl Drop for PiWorker {
    fn drop(&mut self) {
        self.release();
    }
}
