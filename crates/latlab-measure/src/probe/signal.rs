//! `signal`: signal delivery latency (OSADL's sendme/backfire, in user space).
//!
//! The measuring thread blocks the probe's signal (`SIGRTMIN+6`) and waits for it in
//! `sigtimedwait`; t2 is the CLOCK_MONOTONIC read right after the call returns.
//!
//! * `kind=timer` ("From": kernel → user): a POSIX timer (`timer_create` with
//!   `SIGEV_THREAD_ID`, absolute first expiry at the window's start, then every
//!   period) signals the measuring thread. Sample = t2 − the expiry instant that
//!   queued the signal (start + k × period). Expiries that passed while a signal was
//!   still pending (the timer's overrun count) are missed periods.
//! * `kind=queue` ("To": user → user): a partner — a thread of latlab or a forked
//!   process (`task`), on the same CPU or the next one (`cpu`), one real-time priority
//!   below the measuring thread — stamps t1 once per period and at once queues the
//!   signal to the measuring thread with t1 as its value (`rt_tgsigqueueinfo`, which
//!   is `sigqueue` aimed at one thread). Sample = t2 − t1. Periods in which the
//!   partner sent nothing (it ran a period late) or whose signal never arrived are
//!   missed.
//!
//! Signals are aimed at the measuring thread, never at the process, so no other
//! thread of latlab can take them; the thread's mask is restored (and anything still
//! pending discarded) when measuring ends. No disposition is changed.
//!
//! `task=process` forks while preparing, from the measuring thread; the child runs
//! only async-signal-safe code and locks what it touches. A fork makes the parent's
//! writable pages copy-on-write: each measuring thread rehearses after its own fork,
//! but with several CPUs another thread may already have rehearsed, and its first
//! write to each page then takes one minor fault (counted in `page_faults`; a warm-up
//! absorbs it).

use super::account::Account;
use super::info::{
    self, BuildError, ParamInfo, Policies, ProbeInfo, ProbeSetup, Setting,
};
use super::partners;
use super::{Placement, Probe, Window, Worker};
use crate::live::LiveStats;
use latlab_model::run::{Event, Stream};
use latlab_model::Nanos;
use latlab_rt::clock::Clock;
use latlab_rt::partner::{Partner, PartnerPlace, TaskKind};
use latlab_rt::sched;
use latlab_rt::sigwait::{self, BlockedSignal, Received, SenderLink, Target, ThreadTimer};
use latlab_rt::{memory, wake, RtError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The signal probe in the catalogue.
pub const INFO: ProbeInfo = ProbeInfo {
    name: "signal",
    summary: "signal delivery: a POSIX timer's signal (kernel → user) or a signal queued \
              with a timestamp by another thread or process (user → user)",
    definition: "The measuring thread blocks SIGRTMIN+6 and waits in sigtimedwait; t2 = \
                 CLOCK_MONOTONIC right after it returns. kind=timer: a POSIX timer \
                 (SIGEV_THREAD_ID, absolute expiries start + k x period) signals it; sample \
                 = t2 - the expiry that queued the signal; expiries lost to the timer's \
                 overrun count are missed periods. task and cpu do not apply. kind=queue: \
                 a partner (task=thread: a thread of latlab; task=process: a forked \
                 process) on the same CPU or the next allowed one (cpu), at one real-time \
                 priority below the measuring thread, stamps t1 each period and at once \
                 queues the signal to the measuring thread with t1 as its value \
                 (rt_tgsigqueueinfo = sigqueue aimed at one thread); sample = t2 - t1: the \
                 send system call, waking the receiver (an IPI when cross), the switch to \
                 it and the return from sigtimedwait. Periods without a signal (the partner \
                 ran a period late, or the signal never arrived) are missed.",
    params: &[
        ParamInfo {
            key: "kind",
            choices: &["queue", "timer"],
            default: "queue",
            help: "queue: a partner queues it with t1 (user → user); timer: a POSIX timer \
                   sends it (kernel → user)",
        },
        ParamInfo {
            key: "task",
            choices: &["thread", "process"],
            default: "thread",
            help: "kind=queue: the sender is a thread of latlab or a forked process",
        },
        ParamInfo {
            key: "cpu",
            choices: &["same", "cross"],
            default: "same",
            help: "kind=queue: the sender runs on the measuring CPU or on another one",
        },
    ],
    // A timer's signal has no sending task to start.
    honours: &[Setting::Period, Setting::Breaktrace],
    policies: |params| match info::param(params, "kind") {
        "timer" => Policies::Any,
        _ => Policies::NoDeadline,
    },
    build,
    plan: None,
};

/// The longest a blocking wait lasts before the loop looks at the stop flag again.
const WAIT_NS: i64 = 50_000_000;
/// How long after the window's end the receiver waits for signals still in flight.
const END_GRACE_NS: i64 = 100_000_000;
/// How long it then waits for the sender's report of what it sent, after a window that
/// ended: a sender another real-time task keeps off its CPU reports late, not never
/// (seen: 200 ms behind a spinning probe's run on the same CPU). A run being stopped
/// waits [`END_GRACE_NS`] at most: stopping promptly comes first, and a report missing
/// then is not called a failure.
const REPORT_GRACE_NS: i64 = 2_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Timer,
    Queue { process: bool, cross: bool },
}

fn build(setup: &ProbeSetup) -> Result<Box<dyn Probe>, BuildError> {
    let process = setup.param("task") == "process";
    let cross = setup.param("cpu") == "cross";
    let kind = match setup.param("kind") {
        "timer" if process || cross => {
            return Err(BuildError::Unsupported {
                probe: INFO.name,
                why: "kind=timer: task and cpu apply to kind=queue only (a timer's signal \
                      has no sending task); leave them at task=thread,cpu=same"
                    .to_string(),
            })
        }
        "timer" => Kind::Timer,
        _ => Kind::Queue { process, cross },
    };
    Ok(Box::new(SignalProbe {
        setup: setup.clone(),
        kind,
    }))
}

struct SignalProbe {
    setup: ProbeSetup,
    kind: Kind,
}

impl Probe for SignalProbe {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn prepare(&self, placement: &Placement) -> Result<Box<dyn Worker>, RtError> {
        let signo = sigwait::probe_signal();
        // Blocked before any partner exists: they inherit the mask, and nothing can
        // arrive unblocked.
        let blocked = BlockedSignal::new(signo)?;
        let target = Target {
            pid: std::process::id() as i32,
            tid: sched::gettid(),
            signo,
        };
        let partner = match self.kind {
            Kind::Timer => None,
            Kind::Queue { process, cross } => {
                // The receiver must preempt the sender on a shared CPU.
                let place = PartnerPlace {
                    cpu: self.setup.partner_cpu(placement, cross),
                    policy: Some(partners::policy_below(placement.policy, 1)),
                };
                let kind = if process {
                    TaskKind::Process
                } else {
                    TaskKind::Thread
                };
                let link = SenderLink::new(target)?;
                let task = link.start(kind, place)?;
                Some(Sender { link, task })
            }
        };
        Ok(Box::new(SignalWorker {
            setup: self.setup.clone(),
            placement: placement.clone(),
            target,
            blocked: Some(blocked),
            partner,
            account: Account::new(self.setup.recorder_for(placement)),
        }))
    }
}

/// The sending partner of `kind=queue`: its plan and report, and the task sending.
struct Sender {
    link: SenderLink,
    task: Partner,
}

impl Sender {
    /// The pid queued signals from this partner carry.
    fn pid(&self, target: Target) -> i32 {
        self.task.pid().unwrap_or(target.pid)
    }
}

struct SignalWorker {
    setup: ProbeSetup,
    placement: Placement,
    target: Target,
    /// Released on the measuring thread when measuring ends (it is that thread's mask).
    blocked: Option<BlockedSignal>,
    partner: Option<Sender>,
    account: Account,
}

/// How many instants `start + k × period` (k ≥ 0) lie in `[from, until)`.
fn periods_due(start: i64, period: i64, from: i64, until: i64) -> u64 {
    let index = |t: i64| {
        let offset = (t - start).max(0);
        (offset + period - 1) / period // the first k with start + k × period ≥ t
    };
    (index(until) - index(from)).max(0) as u64
}

/// What one pass of the receiving loop saw.
#[derive(Debug, Default, Clone, Copy)]
struct Pass {
    measured: u64,
    missed: u64,
    last: i64,
    /// The partner stopped reporting before the end.
    sender_lost: bool,
}

impl SignalWorker {
    /// Records one sample from `t` (the instant it spans from) to `t2`, placed in the
    /// window at `t`. A queued signal's `t` is when it was sent, not when it was due: a
    /// sender running late can stamp the last one past the window's end, where it still
    /// belongs to the window's last interval.
    #[inline(always)]
    fn take(&mut self, t: i64, t2: i64, window: &Window, live: &LiveStats) -> bool {
        if t <= window.warm_up_end {
            self.account.warm_up_samples += 1;
            self.account.recorder.count_warm_up(1);
            return false;
        }
        let sample = t2 - t;
        let placed = window.end.map_or(t, |end| t.min(end));
        self.account.recorder.record(sample, placed - window.warm_up_end);
        live.publish(sample, 0);
        if self.account.first.is_none() {
            self.account.first = Some(Nanos(sample));
        }
        true
    }

    /// Timer signals every `period` from one period after `window.start` until the
    /// window ends (due at the end of each period, as every probe's samples are).
    fn timer_pass(
        &mut self,
        window: &Window,
        period: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<Pass, RtError> {
        let timer = ThreadTimer::new(self.target.signo, self.target.tid)?;
        let mut due = window.start + period;
        timer.arm(due, period)?;
        let mut pass = Pass::default();
        while !stop.load(Ordering::Relaxed) && window.end.is_none_or(|end| due <= end) {
            let Some(r) = self.wait()? else { continue };
            if r.code != sigwait::SI_TIMER {
                continue; // the same signal number from elsewhere: not an expiry
            }
            if self.take(due, r.at_ns, window, live) {
                pass.measured += 1;
            }
            let overrun = r.overrun as i64;
            let lost_measured = window.boundaries_measured(due, period, overrun.max(0) as u64);
            pass.missed += lost_measured;
            self.account.recorder.count_missed(lost_measured);
            live.publish_missed(lost_measured);
            pass.last = r.at_ns;
            due += (1 + overrun) * period;
        }
        drop(timer);
        Ok(pass)
    }

    /// Queued signals from the partner, which sends from `window.start` every `period`
    /// until the window ends; waits a little past the end for signals in flight.
    fn queue_pass(
        &mut self,
        window: &Window,
        period: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<Pass, RtError> {
        let Some(partner) = &self.partner else {
            return Ok(Pass::default());
        };
        let link = partner.link.clone();
        let sender = partner.pid(self.target);
        let generation = link.plan(window.start, period, window.end, window.warm_up_end);
        let mut pass = Pass::default();
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(end) = window.end {
                let now = Clock::Monotonic.now_ns();
                let all_in = link
                    .report(generation)
                    .is_some_and(|r| pass.measured >= r.sent);
                if now >= end && (all_in || now >= end + END_GRACE_NS) {
                    break;
                }
            }
            let Some(r) = self.wait()? else { continue };
            if r.code != sigwait::SI_QUEUE || r.pid != sender {
                continue; // not from our partner
            }
            // t1 travelled as the low bits of an address-sized value: exact on 64-bit,
            // and on 32-bit for any sample below 4 s.
            let t1 = r.at_ns - (r.at_ns as usize).wrapping_sub(r.value) as i64;
            if self.take(t1, r.at_ns, window, live) {
                pass.measured += 1;
            }
            pass.last = r.at_ns;
        }
        let stopped_at = Clock::Monotonic.now_ns();
        // Stop the plan and read what was sent (the sender reports when it stops).
        if link.report(generation).is_none() {
            link.idle(); // stopped early, or no end: the sender stops within a poll
        }
        let report = {
            let asked = Clock::Monotonic.now_ns();
            loop {
                if let Some(r) = link.report(generation) {
                    break Some(r);
                }
                let waited = Clock::Monotonic.now_ns() - asked;
                if waited > REPORT_GRACE_NS
                    || (waited > END_GRACE_NS && stop.load(Ordering::Relaxed))
                {
                    break None;
                }
                wake::nap(Duration::from_millis(1));
            }
        };
        if let Some(r) = report.filter(|r| r.refused_for_good()) {
            return Err(RtError::new(
                "queue the signal to the measuring thread",
                std::io::Error::from_raw_os_error(r.errno),
            ));
        }
        // Every period due in the measured span (up to where the loop stopped) without
        // a sample is missed: the sender ran a period late, or its signal was lost.
        let until = window.end.unwrap_or(stopped_at).min(stopped_at);
        pass.missed = periods_due(window.start, period, window.warm_up_end, until)
            .saturating_sub(pass.measured);
        pass.sender_lost = report.is_none() && !stop.load(Ordering::Relaxed);
        live.publish_missed(pass.missed);
        Ok(pass)
    }

    #[inline]
    fn wait(&self) -> Result<Option<Received>, RtError> {
        match &self.blocked {
            Some(b) => b.wait(WAIT_NS),
            None => Ok(None),
        }
    }

    fn pass(
        &mut self,
        window: &Window,
        period: i64,
        stop: &AtomicBool,
        live: &LiveStats,
    ) -> Result<Pass, RtError> {
        if self.partner.is_some() {
            self.queue_pass(window, period, stop, live)
        } else {
            self.timer_pass(window, period, stop, live)
        }
    }
}

impl Worker for SignalWorker {
    fn rehearse(&mut self, live: &LiveStats, stop: &AtomicBool) -> Result<(), RtError> {
        // Six short periods of the real thing, the first one counted as warm-up.
        let period = 200_000;
        let start = Clock::Monotonic.now_ns() + 2 * period;
        let window = Window {
            start,
            warm_up_end: start + period + period / 2,
            end: Some(start + 6 * period),
        };
        self.pass(&window, period, stop, live)?;
        if let Some(b) = &self.blocked {
            b.drain();
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
        let faults_before = memory::thread_page_faults();
        let result = self.pass(window, self.setup.period.0.max(1), stop, live);
        self.account.page_faults = memory::thread_page_faults().saturating_sub(faults_before);
        // Everything bound to this thread goes now: the partner (before the mask, so
        // nothing arrives unblocked), then the mask.
        self.partner = None;
        self.blocked = None;
        let pass = result?;
        self.account.missed = pass.missed;
        let end = window.end.map_or(pass.last, |e| pass.last.min(e));
        self.account.elapsed = Nanos((end - window.warm_up_end).max(0));
        if pass.sender_lost {
            return Err(RtError::new(
                "the signal sender stopped before the end of the window (its periods \
                 are counted as missed)",
                std::io::Error::from(std::io::ErrorKind::BrokenPipe),
            ));
        }
        Ok(())
    }

    fn describe(&mut self, phase: &str) -> Vec<Stream> {
        vec![self.describe_now(phase)]
    }

    fn finish(self: Box<Self>, phase: &str) -> (Vec<Stream>, Vec<Event>) {
        (vec![self.describe_now(phase)], Vec::new())
    }
}

impl SignalWorker {
    fn describe_now(&self, phase: &str) -> Stream {
        self.account.stream(&INFO, &self.setup, &self.placement, phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(params: &[(&str, &str)]) -> ProbeSetup {
        info::test_setup(&INFO, params, &[0, 1])
    }

    #[test]
    fn timer_signals_have_no_sending_task() {
        assert!(build(&setup(&[("kind", "timer")])).is_ok());
        let err = build(&setup(&[("kind", "timer"), ("task", "process")]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("kind=queue only"));
        assert!(build(&setup(&[("kind", "timer"), ("cpu", "cross")])).is_err());
        assert!(build(&setup(&[("task", "process"), ("cpu", "cross")])).is_ok());
    }

    #[test]
    fn periods_due_counts_the_grid_points_in_the_span() {
        assert_eq!(periods_due(0, 10, 0, 100), 10);
        assert_eq!(periods_due(0, 10, 5, 100), 9);
        assert_eq!(periods_due(0, 10, 10, 101), 10);
        assert_eq!(periods_due(0, 10, 50, 40), 0);
        assert_eq!(periods_due(1_000, 100, 1_000, 1_000), 0);
    }
}
