//! What a partner runs: the sender and the holder, and the waits they are made of.
//!
//! A forked partner runs this code after `fork` in a multithreaded process, so it is
//! async-signal-safe throughout: raw system calls, clock reads, atomics on the shared
//! control block; no allocation, no lock but the one measured, no panic (arithmetic
//! saturates). Failures are recorded as a stage and an `errno` with [`fail`].

use super::control::{
    Control, Plan, Stage, ACQUIRED, END, FAILED, FAILURE, GO, IDLE_POLL, PERIOD, QUIT, RELEASED,
    STAMP, START, WAITING,
};
use super::sleep_watch::SleepWatch;
use super::{nap_until, now, Acquired, Channel, Errno, Semaphore, MAX_WAIT_NS};
use std::sync::atomic::Ordering;

/// Records a failure for the measuring side; returns the exit code.
pub(super) fn fail(control: &Control, stage: Stage, e: Errno) -> i32 {
    let word = ((stage as u64) << 32) | (e.0 as u32 as u64);
    let _ = control
        .get(FAILURE)
        .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed);
    FAILED
}

#[inline(always)]
fn word(control: &Control, slot: usize) -> i64 {
    control.get(slot).load(Ordering::Acquire) as i64
}

#[inline(always)]
fn quitting(control: &Control) -> bool {
    word(control, QUIT) != 0
}

/// Idles until a new plan is published (`Some`) or the quit word is set (`None`).
fn next_plan(control: &Control, seen: &mut i64) -> Option<Plan> {
    let poll = word(control, IDLE_POLL).clamp(1, MAX_WAIT_NS);
    loop {
        if quitting(control) {
            return None;
        }
        let go = word(control, GO);
        if go != *seen {
            *seen = go;
            return Some(Plan {
                start: word(control, START),
                period: word(control, PERIOD).max(1),
                end: word(control, END),
            });
        }
        let _ = nap_until(now().saturating_add(poll));
    }
}

/// Sleeps until `deadline` in steps of at most [`MAX_WAIT_NS`]; `Ok(true)` when told
/// to quit meanwhile.
fn nap_or_quit(control: &Control, deadline: i64) -> Result<bool, Errno> {
    loop {
        if quitting(control) {
            return Ok(true);
        }
        let t = now();
        if t >= deadline {
            return Ok(false);
        }
        nap_until(deadline.min(t.saturating_add(MAX_WAIT_NS)))?;
    }
}

/// Spins until `ready()` holds (true), or for at most `limit_ns` or until told to quit
/// (false). After a short while it yields between looks, so a waited-for task of the
/// same priority (or any task, under a non-real-time policy) on the same CPU can run.
#[inline(always)]
fn spin_until(control: &Control, limit_ns: i64, ready: impl Fn() -> bool) -> bool {
    const SPIN_NS: i64 = 50_000;
    let begun = now();
    loop {
        if ready() {
            return true;
        }
        let waited = now().saturating_sub(begun);
        if quitting(control) || waited >= limit_ns {
            return false;
        }
        if waited < SPIN_NS {
            std::hint::spin_loop();
        } else {
            // SAFETY: sched_yield takes no arguments.
            unsafe { libc::sched_yield() };
        }
    }
}

/// The sender: one stamped message per instant of each plan.
pub(super) fn sender_program(control: &Control, channel: &Channel) -> i32 {
    let mut seen = 0;
    while let Some(plan) = next_plan(control, &mut seen) {
        let mut k = 1;
        while plan.due(k) <= plan.end {
            match nap_or_quit(control, plan.due(k)) {
                Ok(false) => {}
                Ok(true) => return 0,
                Err(e) => return fail(control, Stage::Sleep, e),
            }
            let stamp = now();
            match channel.send(stamp) {
                // A full channel: the receiver is far behind; it sees the gap.
                Ok(()) | Err(Errno(libc::EAGAIN)) => {}
                Err(e) => return fail(control, Stage::Send, e),
            }
            // After a late wake, go on with the next instant still ahead.
            k = (k + 1).max(plan.index_at(now()) + 1);
        }
    }
    0
}

/// The holder: see the module documentation.
pub(super) fn holder_program(
    control: &Control,
    semaphore: &Semaphore,
    watch: Option<&SleepWatch>,
) -> i32 {
    let mut seen = 0;
    while let Some(plan) = next_plan(control, &mut seen) {
        let mut holding = false;
        let outcome = hold_through(control, semaphore, watch, &plan, &mut holding);
        if holding {
            // Leave it available between plans.
            if let Err(e) = semaphore.release() {
                return fail(control, Stage::Release, e);
            }
        }
        match outcome {
            Ok(false) => {}
            Ok(true) => return 0,
            Err(code) => return code,
        }
    }
    0
}

/// Acquires, retrying after timeouts; `Ok(false)` when told to quit first.
fn acquire_or_quit(control: &Control, semaphore: &Semaphore) -> Result<bool, Errno> {
    loop {
        if quitting(control) {
            return Ok(false);
        }
        match semaphore.acquire(MAX_WAIT_NS)? {
            Acquired::Yes => return Ok(true),
            Acquired::TimedOut | Acquired::Interrupted => {}
        }
    }
}

/// One plan of the holder; `Ok(true)` when told to quit.
fn hold_through(
    control: &Control,
    semaphore: &Semaphore,
    watch: Option<&SleepWatch>,
    plan: &Plan,
    holding: &mut bool,
) -> Result<bool, i32> {
    let failed = |stage, e| fail(control, stage, e);
    match acquire_or_quit(control, semaphore) {
        Ok(true) => *holding = true,
        Ok(false) => return Ok(true),
        Err(e) => return Err(failed(Stage::Acquire, e)),
    }
    // The last instant released for: announcements are instants of this plan, all
    // later than its start (and than any instant of an earlier plan).
    let mut served = plan.start;
    loop {
        let next = plan.due(plan.index_at(served) + 1);
        if next > plan.end {
            return Ok(false);
        }
        match nap_or_quit(control, next) {
            Ok(false) => {}
            Ok(true) => return Ok(true),
            Err(e) => return Err(failed(Stage::Sleep, e)),
        }
        // The measuring thread announces each instant it is about to wait for; one we
        // are late for is still served.
        if !spin_until(control, MAX_WAIT_NS, || word(control, WAITING) > served) {
            if quitting(control) || now() > plan.end.saturating_add(MAX_WAIT_NS) {
                return Ok(quitting(control));
            }
            continue;
        }
        let cycle = word(control, WAITING);
        if word(control, ACQUIRED) >= cycle {
            served = cycle; // it got through without us: nothing to release
            continue;
        }
        // Release only once it is blocked in the acquire (Rhealstone: the waiting
        // task is already waiting).
        if let Some(watch) = watch {
            spin_until(control, MAX_WAIT_NS, || {
                watch.asleep() || word(control, ACQUIRED) >= cycle
            });
        }
        control.get(STAMP).store(now() as u64, Ordering::Release);
        control.get(RELEASED).store(cycle as u64, Ordering::Release);
        *holding = false;
        if let Err(e) = semaphore.release() {
            return Err(failed(Stage::Release, e));
        }
        served = cycle;
        // Take it back only after the measuring thread has had it: else a release
        // followed at once by an acquire could snatch it back first.
        spin_until(control, MAX_WAIT_NS, || word(control, ACQUIRED) >= cycle);
        match acquire_or_quit(control, semaphore) {
            Ok(true) => *holding = true,
            Ok(false) => return Ok(true),
            Err(e) => return Err(failed(Stage::Acquire, e)),
        }
    }
}
