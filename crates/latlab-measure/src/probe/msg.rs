//! `msg`: intertask message latency (Rhealstone; the Rapid Reaction paper's SysV
//! message test), as a distribution.
//!
//! The measuring thread is the **receiver**, at the run's policy (default fifo:95),
//! blocked in a receive; its partner (a thread or a forked process, on the same CPU or
//! another) is the **sender**, one real-time priority lower. Once per period the
//! sender wakes (absolute `clock_nanosleep`), stamps t1 = CLOCK_MONOTONIC into the
//! message and sends it; the receiver stamps t2 = CLOCK_MONOTONIC as soon as its
//! receive returns. A sample is t2 − t1: the send, the kernel's hand-over and the
//! receiver's wake-up, with neither task's other work in it.
//!
//! Receives are bounded by 100 ms (see `latlab_rt::ipc::channel` for how, per
//! transport), so a stop or a dead sender is noticed. A period whose message never
//! arrived (or, for an eventfd, arrived summed with another) is counted as missed.

use super::info::{BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting};
use super::pair::{self, Pairing};
use super::tally::Tally;
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use latlab_model::run::{Event, Stream};
use latlab_rt::clock::Clock;
use latlab_rt::ipc::{Channel, Plan, PlannedPartner, Received, Transport, MAX_WAIT_NS};
use latlab_rt::{ipc::channel::Receiver, memory, RtError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The msg probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "msg",
    summary: "intertask message latency: send in a lower-priority task to return from \
              receive in a higher one (SysV msg, POSIX mq, pipe, Unix socket, eventfd)",
    definition: "The measuring thread (the run's policy, default fifo:95) blocks in a \
                 receive; a partner one FIFO priority lower (a thread, or a forked \
                 process) wakes each period on an absolute clock_nanosleep, stamps \
                 t1 = CLOCK_MONOTONIC into an 8-byte message and sends it. The receiver \
                 stamps t2 = CLOCK_MONOTONIC when its receive returns; a sample is \
                 t2 - t1 (never negative). Receives are bounded by 100 ms \
                 (mq_timedreceive; SO_RCVTIMEO; a one-shot timer signal armed before \
                 msgrcv/read, outside the measured span); a period without a readable \
                 message is counted as missed. With cpu=cross the partner runs on the \
                 next allowed CPU.",
    params: &[
        ParamInfo {
            key: "transport",
            choices: &["sysv", "posix-mq", "pipe", "unix", "eventfd"],
            default: "sysv",
            help: "how the message travels (sysv: msgsnd/msgrcv, as Rapid Reaction Linux)",
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
    let transport = Transport::from_name(setup.param("transport"))
        .ok_or_else(|| BuildError::param(INFO.name, "transport", setup, "not a transport"))?;
    let pairing = Pairing::from_setup(INFO.name, setup)?;
    Ok(Box::new(MsgProbe {
        setup: setup.clone(),
        transport,
        pairing,
    }))
}

struct MsgProbe {
    setup: ProbeSetup,
    transport: Transport,
    pairing: Pairing,
}

impl Probe for MsgProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let channel = Arc::new(Channel::open(self.transport)?);
        let receiver = Receiver::new(channel.clone())?;
        let partner =
            PlannedPartner::sender(&self.pairing.partner(&self.setup, placement), channel)?;
        pair::after_spawn(self.pairing.task);
        Ok(Box::new(MsgWorker {
            partner,
            receiver,
            transport: self.transport,
            setup: self.setup.clone(),
            placement: placement.clone(),
            tally: Tally::new(self.setup.recorder_for(placement)),
        }))
    }
}

/// Field order is drop order: the partner stops before the channel goes.
struct MsgWorker {
    partner: PlannedPartner,
    receiver: Receiver,
    transport: Transport,
    setup: ProbeSetup,
    placement: Placement,
    tally: Tally,
}

impl MsgWorker {
    /// Receives the messages of `plan` until its last one, a stop, or 100 ms past its
    /// end; returns the time it stopped.
    fn receive_through(
        &mut self,
        plan: Plan,
        warm_up_end: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<i64, RtError> {
        self.tally.begin_plan(plan, warm_up_end);
        self.partner.follow(plan);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Clock::Monotonic.now_ns());
            }
            let got = self.receiver.receive();
            let t2 = Clock::Monotonic.now_ns();
            match got {
                // A stamp far ahead of the clock is a sum of stamps (an eventfd read
                // after two writes): the periods it stood for count as missed.
                Ok(Received::Message(t1)) if t1 - t2 <= MAX_WAIT_NS => {
                    self.tally.sample_cycle(plan.index_at(t1), t2 - t1, live);
                    if self.tally.plan_done() {
                        return Ok(t2);
                    }
                }
                Ok(Received::Message(_)) => {}
                Ok(Received::TimedOut | Received::Interrupted) => {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(t2);
                    }
                    self.partner.check()?;
                    if t2 > plan.end.saturating_add(MAX_WAIT_NS) {
                        self.tally.close_plan(live);
                        return Ok(t2);
                    }
                }
                Err(e) => {
                    return Err(e.context(format!("receive a message ({})", self.transport.name())))
                }
            }
        }
    }
}

impl Worker for MsgWorker {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        let plan = pair::rehearsal_plan(self.setup.period);
        self.receive_through(plan, plan.start, stop, live)?;
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
        let received = self.receive_through(plan, window.warm_up_end, stop, live);
        self.tally.account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        if let Ok(at) = received {
            self.tally.set_plan_elapsed(at);
        }
        // The watchdog timer is bound to this thread, and a partner process dies with
        // the thread that forked it: release both here.
        self.receiver.release_thread();
        let stopped = self.partner.stop();
        received.and(stopped).map(|_| ())
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
