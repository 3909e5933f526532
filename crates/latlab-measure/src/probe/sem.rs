//! `sem`: the semaphore shuffle (Rhealstone; Rapid Reaction's Table 6/7), as a
//! distribution.
//!
//! The measuring thread H (the run's policy, default fifo:95) and a partner L one
//! real-time priority lower (a thread, or a forked process; same CPU or another)
//! share one binary semaphore. Each period L holds it; H wakes on its period timer
//! (absolute `clock_nanosleep`), announces the instant it is waiting for, and blocks
//! acquiring it. L waits until H is seen blocked (at once on one CPU, where H runs
//! first; across CPUs by H's `/proc` state), stamps t1 = CLOCK_MONOTONIC and releases;
//! H stamps t2 = CLOCK_MONOTONIC when its acquire returns, then releases, and L takes
//! the semaphore back for the next period. A sample is t2 − t1: the release and the
//! hand-over to the waiting task, without the holder's run time (as Rhealstone
//! defines the shuffle).
//!
//! Acquires are bounded by 100 ms; a period in which H timed out, or acquired without
//! L's release for that period, is counted as missed.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::pair::{self, Pairing};
use super::tally::Tally;
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use latlab_model::run::{Event, Stream};
use latlab_rt::clock::Clock;
use latlab_rt::ipc::{Acquired, Plan, PlannedPartner, SemKind, Semaphore, SleepWatch, MAX_WAIT_NS};
use latlab_rt::partner::TaskKind;
use latlab_rt::wake::{self, WaitError};
use latlab_rt::{memory, RtError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The sem probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "sem",
    summary: "semaphore shuffle: release in a lower-priority holder to return from \
              acquire in a higher-priority waiter (SysV, POSIX, pthread mutex, futex)",
    definition: "A partner L one FIFO priority below the measuring thread H (a thread, or \
                 a forked process, with the semaphore in shared memory) holds a binary \
                 semaphore. Each period H wakes on an absolute clock_nanosleep and blocks \
                 acquiring it; once H is blocked (same CPU: H runs first; cross: L reads \
                 H's /proc state) L stamps t1 = CLOCK_MONOTONIC and releases; H stamps \
                 t2 = CLOCK_MONOTONIC when the acquire returns. A sample is t2 - t1 (never \
                 negative): the hand-over without the holder's run time (Rhealstone). H \
                 then releases and L takes it back. Acquires are bounded by 100 ms \
                 (semtimedop, sem_timedwait, pthread_mutex_timedlock, FUTEX_WAIT); a \
                 period without L's release for it is counted as missed.",
    params: &[
        ParamInfo {
            key: "kind",
            choices: &["sysv", "posix", "mutex", "futex"],
            default: "sysv",
            help: "the semaphore (mutex: pthread mutex without priority inheritance)",
        },
        pair::TASK,
        pair::CPU,
    ],
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |_| Policies::NoDeadline,
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let kind = SemKind::from_name(setup.param("kind"))
        .ok_or_else(|| BuildError::param(INFO.name, "kind", setup, "not a semaphore kind"))?;
    let pairing = Pairing::from_setup(INFO.name, setup)?;
    Ok(Box::new(SemProbe {
        setup: setup.clone(),
        kind,
        pairing,
    }))
}

struct SemProbe {
    setup: ProbeSetup,
    kind: SemKind,
    pairing: Pairing,
}

impl Probe for SemProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let semaphore = Arc::new(Semaphore::new(
            self.kind,
            self.pairing.task == TaskKind::Process,
        )?);
        // On one CPU below a real-time H, L runs only once H has blocked: reading H's
        // state (a /proc read, which fills L's caches) is needed only otherwise.
        let one_cpu = placement.cpu.is_some() && !self.pairing.cross;
        let watch = if !one_cpu || !placement.policy.is_realtime() {
            Some(Arc::new(SleepWatch::current_thread()?))
        } else {
            None
        };
        let partner = PlannedPartner::holder(
            &self.pairing.partner(&self.setup, placement),
            semaphore.clone(),
            watch,
        )?;
        pair::after_spawn(self.pairing.task);
        Ok(Box::new(SemWorker {
            partner,
            semaphore,
            kind: self.kind,
            setup: self.setup.clone(),
            placement: placement.clone(),
            tally: Tally::new(self.setup.recorder_for(placement)),
        }))
    }
}

/// Field order is drop order: the partner stops before the semaphore goes.
struct SemWorker {
    partner: PlannedPartner,
    semaphore: Arc<Semaphore>,
    kind: SemKind,
    setup: ProbeSetup,
    placement: Placement,
    tally: Tally,
}

impl SemWorker {
    /// Runs the cycles of `plan` until its end or a stop; returns the time it stopped.
    fn shuffle_through(
        &mut self,
        plan: Plan,
        warm_up_end: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<i64, RtError> {
        self.tally.begin_plan(plan, warm_up_end);
        self.partner.follow(plan);
        let mut k = 1;
        while plan.due(k) <= plan.end {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            match wake::sleep_until(Clock::Monotonic, plan.due(k)) {
                Ok(()) => {}
                Err(WaitError::Interrupted) => continue,
                Err(WaitError::Failed(e)) => return Err(e),
            }
            // After a late wake, wait for the latest instant already due.
            k = k.max(plan.index_at(Clock::Monotonic.now_ns()));
            let due = plan.due(k);
            self.partner.announce_waiting(due);
            let got = self.semaphore.acquire(MAX_WAIT_NS);
            let t2 = Clock::Monotonic.now_ns();
            match got {
                Ok(Acquired::Yes) => {
                    let (released_for, t1) = self.partner.released();
                    self.partner.announce_acquired(due);
                    let released = self.semaphore.release();
                    if released_for == due {
                        self.tally.sample_cycle(k, t2 - t1, live);
                    } else {
                        self.tally.no_sample_until(k, live);
                    }
                    released.map_err(|e| e.context(self.operation("release")))?;
                }
                Ok(Acquired::TimedOut | Acquired::Interrupted) => {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    self.tally.no_sample_until(k, live);
                    self.partner.check()?;
                }
                Err(e) => return Err(e.context(self.operation("acquire"))),
            }
            k += 1;
        }
        if !stop.load(Ordering::Relaxed) {
            self.tally.close_plan(live);
        }
        Ok(Clock::Monotonic.now_ns())
    }

    fn operation(&self, what: &str) -> String {
        format!("{what} the semaphore ({})", self.kind.name())
    }
}

impl Worker for SemWorker {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        let plan = pair::rehearsal_plan(self.setup.period);
        self.shuffle_through(plan, plan.start, stop, live)?;
        self.tally.account.reset(live);
        Ok(())
    }

    fn measure(
        &mut self,
        window: &Window,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<(), RtError> {
        let faults_before = memory::thread_page_faults();
        let plan = pair::window_plan(window, self.setup.period);
        let shuffled = self.shuffle_through(plan, window.warm_up_end, stop, live);
        self.tally.account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        if let Ok(at) = shuffled {
            self.tally.set_plan_elapsed(at);
        }
        // The partner is stopped here, on the thread it was started from.
        let stopped = self.partner.stop();
        shuffled.and(stopped).map(|_| ())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        let account = &self.tally.account;
        vec![account.stream(&INFO, &self.setup, &self.placement, phase)]
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        let account = &self.tally.account;
        let stream = account.stream(&INFO, &self.setup, &self.placement, phase);
        (vec![stream], Vec::new())
    }
}
