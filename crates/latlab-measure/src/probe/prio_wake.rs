//! `prio-wake`: do waiters woken together run in priority order, and how soon does the
//! most urgent one run?
//!
//! `tasks` waiter threads of rising SCHED_FIFO priority (the highest one level below the
//! measuring thread, all on its CPU) wait on one condition variable. Each period the
//! measuring thread locks the mutex, stamps `CLOCK_MONOTONIC` (the broadcast stamp),
//! calls `pthread_cond_broadcast`, unlocks and sleeps on a futex until every waiter
//! has run. Each waiter, back from its wait with the mutex held, stamps the clock and
//! takes the next place in the wake-up order. sample = the highest-priority waiter's
//! stamp − the broadcast stamp: the broadcast, the unlock, the measuring thread going
//! to sleep, the switch, the waiter's return with the mutex re-taken. A round whose
//! order is not highest-first is out of order: it still gives its sample, and is
//! counted and reported as an event; a round in which not every waiter ran within
//! 100 ms is missed.

use super::info::{self, BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::partners::{self, Parts, Periodic, WAIT_NS};
use super::tally::{Mark, Tally};
use super::{Placement, Probe, Worker};
use crate::live::LiveStats;
use latlab_model::run::Event;
use latlab_rt::clock::Clock;
use latlab_rt::partner::futex;
use latlab_rt::partner::{self, Partner};
use latlab_rt::pthread::{Condvar, Mutex, Protocol};
use latlab_rt::RtError;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::Arc;

/// Most waiters.
const MAX_WAITERS: usize = 8;

/// The priority-order wake-up probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "prio-wake",
    summary:
        "waiters on one condvar woken by a broadcast: priority order, and the top one's wake-up",
    definition: "`tasks` waiter threads of rising SCHED_FIFO priority (the highest one below \
                 the measuring thread, all on its CPU) wait on one pthread condition variable. \
                 Each period the measuring thread locks the mutex, stamps CLOCK_MONOTONIC, \
                 broadcasts, unlocks and sleeps on a futex until all waiters ran; each waiter \
                 stamps the clock on return from its wait and takes the next place in the \
                 order. sample = the highest-priority waiter's stamp - the broadcast stamp. A \
                 round not woken highest-first is out of order: counted and reported as \
                 events (its sample is kept). A round not completed within 100 ms is missed.",
    params: &[
        ParamInfo {
            key: "tasks",
            choices: &["2", "4", "8"],
            default: "4",
            help: "waiters, one priority level apart",
        },
        ParamInfo {
            key: "task",
            choices: &["thread"],
            default: "thread",
            help: "waiters are threads of latlab",
        },
        ParamInfo {
            key: "cpu",
            choices: &["same"],
            default: "same",
            help: "every waiter on the measuring thread's CPU (the order is the scheduler's)",
        },
    ],
    // The highest waiter sits one level below the measuring thread, the others below
    // it; an unreadable `tasks` is refused by `build`.
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |params| {
        Policies::LevelsBelow(
            info::param(params, "tasks")
                .parse()
                .unwrap_or(MAX_WAITERS as i32),
        )
    },
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let tasks = setup
        .param("tasks")
        .parse::<usize>()
        .ok()
        .filter(|t| (2..=MAX_WAITERS).contains(t))
        .ok_or_else(|| {
            BuildError::param(
                INFO.name,
                "tasks",
                setup,
                format!("give 2 to {MAX_WAITERS}"),
            )
        })?;
    Ok(Box::new(PrioWakeProbe {
        setup: setup.clone(),
        tasks,
    }))
}

struct PrioWakeProbe {
    setup: ProbeSetup,
    tasks: usize,
}

/// What the measuring thread and the waiters share; rounds start at 1.
struct Shared {
    mutex: Mutex,
    cond: Condvar,
    stop: AtomicBool,
    /// The round broadcast last (written with the mutex held).
    round: AtomicU32,
    /// Waiters that have waited at least once.
    ready: AtomicU32,
    /// The next place in this round's wake-up order.
    place: AtomicU32,
    /// Waiter index by place.
    woke_by: [AtomicU32; MAX_WAITERS],
    /// Stamp by waiter index.
    woke_ns: [AtomicI64; MAX_WAITERS],
    /// The last round every waiter ran in (the measuring thread's futex word).
    done: AtomicU32,
    tasks: u32,
}

impl Shared {
    /// Stops the waiters, waking them past the condition variable.
    fn stop_waiters(&self) {
        self.stop.store(true, Ordering::Release);
        if let Ok(true) = self.mutex.lock_until(Clock::Monotonic.now_ns() + WAIT_NS) {
            self.cond.broadcast();
            self.mutex.unlock();
        }
    }
}

/// Waiter `index` (priority rises with it).
fn waiter(shared: &Shared, index: usize) {
    let mut held = false;
    while !held {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        held = matches!(
            shared.mutex.lock_until(Clock::Monotonic.now_ns() + WAIT_NS),
            Ok(true)
        );
    }
    shared.ready.fetch_add(1, Ordering::AcqRel);
    let mut seen = 0;
    while !shared.stop.load(Ordering::Acquire) {
        let round = shared.round.load(Ordering::Acquire);
        if round != seen {
            let now = Clock::Monotonic.now_ns();
            seen = round;
            let place = shared.place.fetch_add(1, Ordering::AcqRel);
            shared.woke_ns[index].store(now, Ordering::Relaxed);
            if let Some(slot) = shared.woke_by.get(place as usize) {
                slot.store(index as u32, Ordering::Relaxed);
            }
            if place + 1 == shared.tasks {
                shared.done.store(round, Ordering::Release);
                futex::wake(&shared.done, 1);
            }
        }
        shared
            .cond
            .wait_until(&shared.mutex, Clock::Monotonic.now_ns() + WAIT_NS);
    }
    shared.mutex.unlock();
}

impl Probe for PrioWakeProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let shared = Arc::new(Shared {
            mutex: Mutex::new(Protocol::None)?,
            cond: Condvar::new()?,
            stop: AtomicBool::new(false),
            round: AtomicU32::new(0),
            ready: AtomicU32::new(0),
            place: AtomicU32::new(0),
            woke_by: std::array::from_fn(|_| AtomicU32::new(0)),
            woke_ns: std::array::from_fn(|_| AtomicI64::new(0)),
            done: AtomicU32::new(0),
            tasks: self.tasks as u32,
        });
        let mut worker = PrioWakeWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            shared: shared.clone(),
            partners: Vec::with_capacity(self.tasks),
            tally: Tally::new(self.setup.recorder_for(placement)),
        };
        for index in 0..self.tasks {
            // Waiter `tasks - 1` is the highest, one level below the measuring thread.
            let place = partners::partner_place(placement, (self.tasks - index) as i32)?;
            let (waiting, stopping) = (shared.clone(), shared.clone());
            worker.partners.push(partner::spawn_thread(
                place,
                move || waiter(&waiting, index),
                Arc::new(move || stopping.stop_waiters()),
            )?);
        }
        Ok(Box::new(worker))
    }
}

struct PrioWakeWorker {
    setup: ProbeSetup,
    placement: Placement,
    shared: Arc<Shared>,
    partners: Vec<Partner>,
    tally: Tally,
}

/// How one round ended.
enum Round {
    /// The top waiter's wake-up, and the order as one hex digit per place (highest
    /// priority first expected).
    Woke {
        latency: i64,
        order: u64,
        in_order: bool,
    },
    /// Not every waiter ran in time.
    Incomplete,
}

impl PrioWakeWorker {
    fn round(&mut self) -> Result<Round, RtError> {
        let s = &*self.shared;
        if !s.mutex.lock_until(Clock::Monotonic.now_ns() + WAIT_NS)? {
            return Ok(Round::Incomplete);
        }
        let round = s.round.load(Ordering::Relaxed).wrapping_add(1).max(1);
        s.place.store(0, Ordering::Relaxed);
        s.round.store(round, Ordering::Release);
        let broadcast = Clock::Monotonic.now_ns();
        s.cond.broadcast();
        s.mutex.unlock();
        let until = broadcast + WAIT_NS;
        while s.done.load(Ordering::Acquire) != round {
            let left = until - Clock::Monotonic.now_ns();
            if left <= 0 {
                return Ok(Round::Incomplete);
            }
            let _ = futex::wait(&s.done, s.done.load(Ordering::Acquire), left);
        }
        let tasks = s.tasks as usize;
        let mut order = 0u64;
        let mut in_order = true;
        for place in 0..tasks {
            let by = s.woke_by[place].load(Ordering::Relaxed);
            order = order << 4 | u64::from(by & 0xf);
            in_order &= by as usize == tasks - 1 - place;
        }
        Ok(Round::Woke {
            latency: s.woke_ns[tasks - 1].load(Ordering::Relaxed) - broadcast,
            order,
            in_order,
        })
    }

    /// Waits until every waiter has waited once (at most 100 ms per waiter).
    fn wait_ready(&self) -> Result<(), RtError> {
        let until = Clock::Monotonic.now_ns() + WAIT_NS * self.shared.tasks as i64;
        while self.shared.ready.load(Ordering::Acquire) < self.shared.tasks {
            if Clock::Monotonic.now_ns() > until {
                return Err(RtError::new(
                    "start the waiter threads",
                    std::io::Error::other("they did not begin waiting within 100 ms each"),
                ));
            }
            partners::sleep_until(Clock::Monotonic.now_ns() + 1_000_000)?;
        }
        Ok(())
    }
}

impl Periodic for PrioWakeWorker {
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
        match self.round()? {
            Round::Woke {
                latency,
                order,
                in_order,
            } => {
                self.tally.sample(latency, at, measured, live);
                if !in_order {
                    let mark = Mark {
                        at,
                        value: latency,
                        detail: order,
                    };
                    self.tally.mark(mark, measured);
                }
            }
            Round::Incomplete => self.tally.miss(measured, live),
        }
        Ok(true)
    }

    fn rehearse_cycles(&mut self, live: &LiveStats, _stop: &AtomicBool) -> Result<(), RtError> {
        self.wait_ready()?;
        for _ in 0..3 {
            if let Round::Woke { latency, .. } = self.round()? {
                self.tally.sample(latency, 0, true, live);
            }
            partners::sleep_until(Clock::Monotonic.now_ns() + self.setup.period.0)?;
        }
        self.tally.reset(live);
        Ok(())
    }

    fn events(&mut self) -> Vec<Event> {
        let t = &self.tally;
        let tasks = self.shared.tasks as usize;
        let order_text = |order: u64| {
            (0..tasks)
                .rev()
                .map(|place| ((order >> (4 * place)) & 0xf).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let expected = (0..tasks).rev().map(|i| i.to_string()).collect::<Vec<_>>();
        let mut events: Vec<Event> = t
            .marks
            .iter()
            .map(|&m| {
                t.event(
                    &self.placement,
                    "out-of-order",
                    Some(m),
                    format!(
                        "prio-wake: waiters ran in the order {} (by rising priority 0..{}; \
                         expected {})",
                        order_text(m.detail),
                        tasks - 1,
                        expected.join(",")
                    ),
                )
            })
            .collect();
        let complete = t.cycles.saturating_sub(t.account.missed);
        events.push(t.event(
            &self.placement,
            "prio-order",
            None,
            format!(
                "prio-wake tasks={tasks} on CPU {}: {} of {complete} complete rounds woke out \
                 of priority order ({} incomplete)",
                self.placement.cpu.map_or("-".to_string(), |c| c.to_string()),
                t.marks_total,
                t.account.missed,
            ),
        ));
        events
    }

    /// Stops the waiters and waits for them.
    fn release(&mut self) {
        self.shared.stop_waiters();
        self.partners.clear();
    }
}

impl Drop for PrioWakeWorker {
    fn drop(&mut self) {
        self.release();
    }
}
