//! `switch`: task switch time — how long equal-priority tasks on one CPU take to hand
//! the CPU to each other.
//!
//! Rhealstone's task switch time (Kar 1990), per hand-over. `tasks` members (threads or
//! forked processes, SCHED_FIFO one level below the measuring thread, all on its CPU)
//! form a ring. With `method=yield` each member stamps `CLOCK_MONOTONIC` and calls
//! `sched_yield`; the next member's stamp on return minus the previous stamp is one
//! sample (the yield, the switch, the return). With `method=pipe` each member stamps the
//! clock, writes the stamp as an 8-byte token into the next member's pipe and blocks
//! reading its own; sample = the reader's stamp after its read − the stamp in the token
//! (the write, the writer blocking, the switch, the read's return). The measuring
//! thread wakes each period (absolute `clock_nanosleep`), starts a burst of `burst`
//! hand-overs, sleeps on a futex until the burst ends, and records its samples.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::partners::{self, Parts, Periodic, WAIT_NS};
use super::tally::Tally;
use super::{Placement, Probe, Worker};
use crate::live::LiveStats;
use latlab_rt::partner::{self, Partner, PipeRing, SharedRegion, TaskKind, YieldRing, NO_SAMPLE};
use latlab_rt::RtError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The task-switch probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "switch",
    summary: "task switch time: equal-priority tasks on one CPU hand it over (sched_yield or a pipe ring)",
    definition: "`tasks` members (SCHED_FIFO, all one priority below the measuring thread, all \
                 on its CPU; threads or forked processes) form a ring. yield: a member stamps \
                 CLOCK_MONOTONIC and calls sched_yield; sample = the next member's stamp on \
                 return - the previous stamp (a member's first stamp of a burst, taken on \
                 return from waiting for it, is no sample; a yield that returns to the same \
                 member switched nothing and counts as missed). \
                 pipe: a member stamps the clock, writes the stamp as an 8-byte token to the \
                 next member's pipe and blocks reading its own; sample = the reader's stamp \
                 after read - the token. Each period the measuring thread starts a burst of \
                 `burst` hand-overs and sleeps on a futex until it ends. Non-negative. A burst \
                 that does not end within 100 ms is missed.",
    params: &[
        ParamInfo {
            key: "method",
            choices: &["yield", "pipe"],
            default: "yield",
            help: "how the CPU is handed over",
        },
        ParamInfo {
            key: "task",
            choices: &["thread", "process"],
            default: "thread",
            help: "members are threads of latlab or forked processes",
        },
        ParamInfo {
            key: "tasks",
            choices: &["2", "4"],
            default: "2",
            help: "members of the ring",
        },
        ParamInfo {
            key: "burst",
            choices: &["10", "100", "1000"],
            default: "100",
            help: "hand-overs per period",
        },
        ParamInfo {
            key: "cpu",
            choices: &["same"],
            default: "same",
            help: "every member on the measuring thread's CPU (a switch needs one CPU)",
        },
    ],
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |_| Policies::LevelsBelow(1),
    build,
    plan: None,
};

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let number = |key: &'static str| {
        setup
            .param(key)
            .parse::<usize>()
            .map_err(|_| BuildError::param(INFO.name, key, setup, "give a number"))
    };
    Ok(Box::new(SwitchProbe {
        setup: setup.clone(),
        kind: partners::task_kind(setup),
        pipe: setup.param("method") == "pipe",
        tasks: number("tasks")?,
        burst: number("burst")?,
    }))
}

struct SwitchProbe {
    setup: ProbeSetup,
    kind: TaskKind,
    pipe: bool,
    tasks: usize,
    burst: usize,
}

enum Ring {
    Yield(Arc<SharedRegion<YieldRing>>),
    Pipe(Arc<SharedRegion<PipeRing>>),
}

impl Probe for SwitchProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let place = partners::partner_place(placement, 1)?;
        let ring = if self.pipe {
            Ring::Pipe(Arc::new(SharedRegion::new(PipeRing::new(self.tasks)?)?))
        } else {
            Ring::Yield(Arc::new(SharedRegion::new(YieldRing::default())?))
        };
        let mut worker = SwitchWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            // Each member's first stamp of a yield burst is no sample; a pipe burst's
            // first hand-over comes from the measuring thread's start token.
            hand_overs: self.burst + if self.pipe { 1 } else { self.tasks },
            ring,
            partners: Vec::with_capacity(self.tasks),
            tally: Tally::new(self.setup.recorder_for(placement)),
        };
        for index in 0..self.tasks {
            let spawned = match &worker.ring {
                Ring::Yield(r) => partner::spawn(self.kind, r, index, place),
                Ring::Pipe(r) => partner::spawn(self.kind, r, index, place),
            };
            // On an error the worker's drop stops the members already started.
            worker.partners.push(spawned?);
        }
        Ok(Box::new(worker))
    }
}

struct SwitchWorker {
    setup: ProbeSetup,
    placement: Placement,
    hand_overs: usize,
    ring: Ring,
    partners: Vec<Partner>,
    tally: Tally,
}

impl SwitchWorker {
    fn start(&self) -> Result<u32, RtError> {
        match &self.ring {
            Ring::Yield(r) => Ok(r.start(self.hand_overs)),
            Ring::Pipe(r) => r.start(self.hand_overs),
        }
    }

    fn wait_done(&self, round: u32) -> bool {
        match &self.ring {
            Ring::Yield(r) => r.wait_done(round, WAIT_NS),
            Ring::Pipe(r) => r.wait_done(round, WAIT_NS),
        }
    }

    /// One burst: start it, wait for its end (past a stall, as long as every member
    /// lives), record its samples at `at`. False when a stop request cut it short.
    fn burst(
        &mut self,
        at: i64,
        measured: bool,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<bool, RtError> {
        let round = self.start()?;
        if !self.wait_done(round) {
            self.tally.miss(measured, live);
            // A token may still be on its way: never start a second one beside it.
            while !self.wait_done(round) {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                if !self.partners.iter_mut().all(Partner::alive) {
                    return Err(RtError::new(
                        "switch with the partner tasks",
                        std::io::Error::other("a partner process ended while measuring"),
                    ));
                }
            }
            return Ok(true);
        }
        match &self.ring {
            Ring::Yield(r) => {
                let mut previous = r.stamp(0);
                for k in 1..self.hand_overs {
                    let stamp = r.stamp(k);
                    let (t, by, after_yield) = stamp;
                    if after_yield && by != previous.1 {
                        self.tally.sample(t - previous.0, at, measured, live);
                    } else if after_yield {
                        // The yield returned to the same member: no switch happened.
                        self.tally.miss(measured, live);
                    }
                    previous = stamp;
                }
            }
            Ring::Pipe(r) => {
                for k in 0..self.hand_overs {
                    let s = r.sample(k);
                    if s != NO_SAMPLE {
                        self.tally.sample(s, at, measured, live);
                    }
                }
            }
        }
        Ok(true)
    }
}

impl Periodic for SwitchWorker {
    const INFO: &'static ProbeInfo = &INFO;

    fn parts(&mut self) -> Parts<'_> {
        Parts {
            setup: &self.setup,
            placement: &self.placement,
            tally: &mut self.tally,
        }
    }

    /// One burst; a stop request that cuts it short still lets it count.
    fn run(
        &mut self,
        _due: i64,
        at: i64,
        measured: bool,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<bool, RtError> {
        self.burst(at, measured, stop, live)?;
        Ok(true)
    }

    fn rehearse_cycles(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        for _ in 0..3 {
            self.burst(0, true, stop, live)?;
        }
        self.tally.reset(live);
        Ok(())
    }

    /// Stops every member and waits for it to end.
    fn release(&mut self) {
        match &self.ring {
            Ring::Yield(r) => r.stop(),
            Ring::Pipe(r) => r.stop(),
        }
        self.partners.clear();
    }
}

impl Drop for SwitchWorker {
    fn drop(&mut self) {
        self.release();
    }
}
