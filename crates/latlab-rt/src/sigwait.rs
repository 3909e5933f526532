//! Signals as the measured primitive (the `signal` probe): one thread blocks a signal
//! and waits for it with `sigtimedwait`; a POSIX timer (`SIGEV_THREAD_ID`) or a
//! partner thread or process (`rt_tgsigqueueinfo`, i.e. `sigqueue` aimed at one
//! thread, with a value) sends it.
//!
//! Every signal here is aimed at one thread, never at the process: a process-directed
//! signal may be taken by any thread that does not block it (and a real-time signal's
//! default action ends the process), so latlab's other threads need not know about
//! it. The receiving thread blocks the signal for as long as a [`BlockedSignal`]
//! lives; dropping it drains what is still pending and restores the thread's mask.
//! No signal disposition is changed.
//!
//! The sender ([`SignalSender`]) is a [`crate::partner`] body, written for a forked
//! child of a multithreaded process: it uses atomics in a shared mapping, clock reads,
//! `clock_nanosleep` and raw system calls only — no allocation, no lock, nothing that
//! can panic.

use crate::clock::{ns_to_timespec, Clock};
use crate::partner::{self, sealed, Partner, PartnerBody, PartnerPlace, SharedRegion, TaskKind};
use crate::signal;
use crate::RtError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The signal the `signal` probe measures: a real-time signal latlab uses for nothing
/// else (the wake-up and timer signals are `SIGRTMIN+4` and `+5`).
pub fn probe_signal() -> i32 {
    libc::SIGRTMIN() + 6
}

/// `si_code` of a signal sent by a POSIX timer expiry.
pub const SI_TIMER: i32 = -2;
/// `si_code` of a signal sent with `sigqueue` (or `rt_tgsigqueueinfo`).
pub const SI_QUEUE: i32 = -1;

/// A signal blocked in the calling thread so that it can be waited for; on drop,
/// pending instances are discarded and the thread's previous mask is restored.
///
/// Must be dropped on the thread that created it.
#[derive(Debug)]
pub struct BlockedSignal {
    set: libc::sigset_t,
    saved: libc::sigset_t,
}

impl BlockedSignal {
    /// Blocks `signo` in the calling thread.
    pub fn new(signo: i32) -> Result<BlockedSignal, RtError> {
        let saved = signal::block_in_current_thread(&[signo])?;
        Ok(BlockedSignal {
            set: signal::sigset_of(&[signo]),
            saved,
        })
    }

    /// Waits up to `timeout_ns` for the signal; `None` on timeout or when another
    /// signal's handler interrupted the wait (a stop request). The clock is read as
    /// soon as the call returns.
    #[inline]
    pub fn wait(&self, timeout_ns: i64) -> Result<Option<Received>, RtError> {
        let timeout = ns_to_timespec(timeout_ns.max(0));
        // SAFETY: siginfo_t is plain data, for which all-zero bytes are valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is an initialised set holding the signal this thread blocked;
        // `info` and `timeout` are valid for the call.
        let rc = unsafe { libc::sigtimedwait(&self.set, &mut info, &timeout) };
        let at_ns = Clock::Monotonic.now_ns();
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(RtError::new("sigtimedwait", err)),
            };
        }
        // SAFETY: the kernel filled `info` for this signal; the union members read are
        // the ones its si_code says are valid (timer: overrun; queue: pid and value),
        // and reading the others yields plain integers without meaning, never UB.
        let (pid, value, overrun) = unsafe {
            (
                info.si_pid(),
                info.si_value().sival_ptr as usize,
                info.si_overrun(),
            )
        };
        Ok(Some(Received {
            at_ns,
            code: info.si_code,
            pid,
            value,
            overrun: if info.si_code == SI_TIMER {
                overrun.max(0) as u64
            } else {
                0
            },
        }))
    }

    /// Discards every pending instance of the signal.
    pub fn drain(&self) {
        let zero = ns_to_timespec(0);
        // SAFETY: sigtimedwait with a zero timeout only dequeues our blocked signal.
        while unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &zero) } > 0 {}
    }
}

impl Drop for BlockedSignal {
    fn drop(&mut self) {
        // Unblocking a pending real-time signal would run its default action, which
        // ends the process: discard it first.
        self.drain();
        signal::restore_mask(&self.saved);
    }
}

/// One signal taken by [`BlockedSignal::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// CLOCK_MONOTONIC right after the wait returned, ns.
    pub at_ns: i64,
    /// `si_code`: [`SI_TIMER`], [`SI_QUEUE`], or another sender's.
    pub code: i32,
    /// The sender's process id (queued signals).
    pub pid: i32,
    /// The value sent (`si_value.sival_ptr` as an integer).
    pub value: usize,
    /// For a timer: expirations after the one that queued this signal, before it was
    /// taken.
    pub overrun: u64,
}

/// A POSIX timer delivering a signal to one thread (`SIGEV_THREAD_ID`); deleted on
/// drop.
#[derive(Debug)]
pub struct ThreadTimer {
    timer: libc::timer_t,
}

// SAFETY: a POSIX timer id is a process-wide kernel handle usable from any thread.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// A CLOCK_MONOTONIC timer sending `signo` to thread `tid`, not yet armed.
    pub fn new(signo: i32, tid: i32) -> Result<ThreadTimer, RtError> {
        // SAFETY: a zeroed sigevent is valid; we fill notify, signal and target thread.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signo;
        event.sigev_notify_thread_id = tid;
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to the event and to storage for the timer id.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) } != 0 {
            return Err(RtError::last("timer_create (SIGEV_THREAD_ID)"));
        }
        Ok(ThreadTimer { timer })
    }

    /// Arms it: first expiry at `first_ns` (absolute), then every `period_ns`.
    pub fn arm(&self, first_ns: i64, period_ns: i64) -> Result<(), RtError> {
        let spec = libc::itimerspec {
            it_interval: ns_to_timespec(period_ns),
            it_value: ns_to_timespec(first_ns),
        };
        // SAFETY: our timer id; a valid itimerspec; the old value is not wanted.
        let rc = unsafe {
            libc::timer_settime(self.timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(RtError::last("timer_settime"));
        }
        Ok(())
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: deleting the timer we created, once.
        unsafe { libc::timer_delete(self.timer) };
    }
}

/// Where a sender aims its signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The receiving process (thread group) id.
    pub pid: i32,
    /// The receiving thread id.
    pub tid: i32,
    /// The signal.
    pub signo: i32,
}

/// Queues a signal with a value to one thread, as `sigqueue` would (`si_code` =
/// `SI_QUEUE`, the sender's pid and uid): `rt_tgsigqueueinfo`. The siginfo is built
/// once, so a send is one system call.
#[derive(Debug)]
pub struct Queuer {
    target: Target,
    info: QueuedInfo,
}

impl Queuer {
    /// A queuer from the calling process to `target`.
    pub fn new(target: Target) -> Queuer {
        Queuer {
            target,
            info: QueuedInfo {
                signo: target.signo,
                errno: 0,
                code: SI_QUEUE,
                #[cfg(target_pointer_width = "64")]
                pad: 0,
                // SAFETY: getpid and getuid take no arguments and cannot fail.
                pid: unsafe { libc::getpid() },
                // SAFETY: as above.
                uid: unsafe { libc::getuid() },
                value: 0,
                rest: [0; QUEUED_INFO_REST],
            },
        }
    }

    /// Queues the signal with `value`; the errno on failure (no allocation: callable
    /// from a forked child).
    #[inline]
    pub fn send(&mut self, value: usize) -> Result<(), i32> {
        self.info.value = value;
        // SAFETY: rt_tgsigqueueinfo reads a 128-byte siginfo, which `QueuedInfo` is,
        // laid out as the kernel's `_rt` member (checked by a test).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                self.target.pid,
                self.target.tid,
                self.target.signo,
                &mut self.info as *mut QueuedInfo,
            )
        };
        if rc != 0 {
            // SAFETY: __errno_location returns the calling thread's errno slot.
            return Err(unsafe { *libc::__errno_location() });
        }
        Ok(())
    }
}

const QUEUED_INFO_HEAD: usize = if cfg!(target_pointer_width = "64") {
    32
} else {
    24
};
const QUEUED_INFO_REST: usize = 128 - QUEUED_INFO_HEAD;

/// The kernel's siginfo for a queued signal: three ints, the union (pointer-aligned)
/// whose `_rt` member is pid, uid and the value; 128 bytes in all.
#[derive(Debug)]
#[repr(C)]
struct QueuedInfo {
    signo: i32,
    errno: i32,
    code: i32,
    #[cfg(target_pointer_width = "64")]
    pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    rest: [u8; QUEUED_INFO_REST],
}

/// The slots of a sender's shared plan ([`SenderLink`]).
mod slot {
    pub const GENERATION: usize = 0;
    pub const START: usize = 1;
    pub const PERIOD: usize = 2;
    pub const END: usize = 3;
    pub const MEASURED_FROM: usize = 4;
    pub const QUIT: usize = 5;
    pub const DONE: usize = 6;
    pub const SENT: usize = 7;
    pub const SKIPPED: usize = 8;
    pub const ERRNO: usize = 9;
    pub const COUNT: usize = 10;
}

/// The sender: its target, and its plan and report in words a forked child reads and
/// writes as a thread would (the body lives in a [`SharedRegion`]).
#[derive(Debug)]
pub struct SignalSender {
    slots: [AtomicU64; slot::COUNT],
    target: Target,
}

impl sealed::Sealed for SignalSender {}

impl PartnerBody for SignalSender {
    fn run(&self, _index: usize) {
        self.run_sender();
    }

    fn stop(&self) {
        self.store(slot::QUIT, 1);
    }
}

/// The measuring side's handle on a sender's plan and report.
#[derive(Debug, Clone)]
pub struct SenderLink {
    sender: Arc<SharedRegion<SignalSender>>,
}

/// What a sender reports about a plan it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderReport {
    /// Signals sent with a stamp at or after the plan's `measured_from`.
    pub sent: u64,
    /// Periods from `measured_from` on in which nothing was sent: the sender ran more
    /// than a period late, or the kernel refused the signal.
    pub skipped: u64,
    /// The last errno of a refused signal (0 = none).
    pub errno: i32,
}

impl SenderReport {
    /// True when the kernel refused a signal for a reason that will not pass (the
    /// receiver is gone, or out of the sender's reach): the sender then stopped.
    pub fn refused_for_good(&self) -> bool {
        self.errno == libc::ESRCH || self.errno == libc::EPERM
    }
}

impl SenderLink {
    /// A new link to a sender aimed at `target`, without a plan.
    pub fn new(target: Target) -> Result<SenderLink, RtError> {
        let sender = SignalSender {
            slots: Default::default(),
            target,
        };
        Ok(SenderLink {
            sender: Arc::new(SharedRegion::new(sender)?),
        })
    }

    /// Starts the sender as a thread or a forked process at `place`. Call it from the
    /// thread that will receive: a child process dies with that thread.
    pub fn start(&self, kind: TaskKind, place: PartnerPlace) -> Result<Partner, RtError> {
        partner::spawn(kind, &self.sender, 0, place)
    }

    fn load(&self, i: usize) -> i64 {
        self.sender.load(i)
    }

    fn store(&self, i: usize, v: i64) {
        self.sender.store(i, v);
    }

    /// Starts a plan: one signal per period from `start_ns` (absolute, CLOCK_MONOTONIC)
    /// to `end_ns` (exclusive; `None` = until the next plan or quit), counting those
    /// stamped from `measured_from_ns` on. Returns the plan's generation.
    pub fn plan(
        &self,
        start_ns: i64,
        period_ns: i64,
        end_ns: Option<i64>,
        measured_from_ns: i64,
    ) -> i64 {
        let generation = self.load(slot::GENERATION) + 1;
        self.store(slot::START, start_ns);
        self.store(slot::PERIOD, period_ns.max(1));
        self.store(slot::END, end_ns.unwrap_or(0));
        self.store(slot::MEASURED_FROM, measured_from_ns);
        self.store(slot::GENERATION, generation);
        generation
    }

    /// Ends the current plan early: an empty plan replaces it.
    pub fn idle(&self) {
        self.plan(1, 1, Some(1), i64::MAX);
    }

    /// The report of plan `generation`, once the sender has finished it.
    pub fn report(&self, generation: i64) -> Option<SenderReport> {
        (self.load(slot::DONE) == generation).then(|| SenderReport {
            sent: self.load(slot::SENT) as u64,
            skipped: self.load(slot::SKIPPED) as u64,
            errno: self.load(slot::ERRNO) as i32,
        })
    }

    /// Signals sent so far under the current plan (from `measured_from` on).
    pub fn sent_so_far(&self) -> u64 {
        self.load(slot::SENT) as u64
    }
}

/// How long a sender sleeps at most before looking at its plan again.
const SENDER_POLL_NS: i64 = 5_000_000;
/// How often an idle sender looks for a plan.
const IDLE_POLL_NS: i64 = 50_000;

/// Sleeps until `deadline` (absolute, CLOCK_MONOTONIC); an interruption just returns.
#[inline]
fn nap_until(deadline: i64) {
    let ts = ns_to_timespec(deadline);
    // SAFETY: a valid timespec; no remainder is needed for an absolute sleep.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

impl SignalSender {
    fn load(&self, i: usize) -> i64 {
        self.slots[i].load(Ordering::Acquire) as i64
    }

    fn store(&self, i: usize, v: i64) {
        self.slots[i].store(v as u64, Ordering::Release);
    }

    fn quitting(&self) -> bool {
        self.load(slot::QUIT) != 0
    }

    /// The sender: waits for a plan, then each period stamps t1 on CLOCK_MONOTONIC and
    /// at once queues the signal to its target with t1 as its value; reports when the
    /// plan ends; returns when told to quit. Async-signal-safe (see the module
    /// documentation).
    fn run_sender(&self) {
        let (link, target) = (self, self.target);
        let mut seen = 0;
        loop {
            if link.quitting() {
                return;
            }
            let generation = link.load(slot::GENERATION);
            if generation == seen {
                // Idle between plans (a few ms around each): look often, so that a plan
                // published at its own start instant loses no period.
                nap_until(Clock::Monotonic.now_ns().saturating_add(IDLE_POLL_NS));
                continue;
            }
            seen = generation;
            let period = link.load(slot::PERIOD).max(1);
            let end = match link.load(slot::END) {
                0 => i64::MAX,
                e => e,
            };
            let from = link.load(slot::MEASURED_FROM);
            let (mut sent, mut skipped, mut errno) = (0i64, 0i64, 0i64);
            link.store(slot::SENT, 0);
            let mut due = link.load(slot::START);
            let mut queuer = Queuer::new(target);
            while due < end && !link.quitting() && link.load(slot::GENERATION) == generation {
                let now = Clock::Monotonic.now_ns();
                if now < due {
                    nap_until(due.min(now.saturating_add(SENDER_POLL_NS)));
                    continue;
                }
                // More than a period late: the periods that passed get no signal.
                let late_periods = (now - due) / period;
                if late_periods > 0 {
                    // Count the skipped periods due at or after `from`.
                    let first_measured = if from <= due {
                        0
                    } else {
                        (from - due + period - 1) / period
                    };
                    skipped += (late_periods - first_measured).max(0);
                    due += late_periods * period;
                }
                let t1 = Clock::Monotonic.now_ns();
                match queuer.send(t1 as usize) {
                    Ok(()) if t1 >= from => {
                        sent += 1;
                        link.store(slot::SENT, sent);
                    }
                    Ok(()) => {}
                    Err(e) => {
                        errno = e as i64;
                        if due >= from {
                            skipped += 1;
                        }
                        if e == libc::ESRCH || e == libc::EPERM {
                            break; // the receiver is gone or out of reach
                        }
                    }
                }
                due += period;
            }
            link.store(slot::SKIPPED, skipped);
            link.store(slot::ERRNO, errno);
            link.store(slot::DONE, generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_info_is_the_kernels_siginfo() {
        assert_eq!(std::mem::size_of::<QueuedInfo>(), 128);
        assert_eq!(
            std::mem::size_of::<QueuedInfo>(),
            std::mem::size_of::<libc::siginfo_t>()
        );
        assert_eq!(
            std::mem::offset_of!(QueuedInfo, value),
            QUEUED_INFO_HEAD - std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn a_queued_value_arrives_with_its_sender() {
        let signo = probe_signal();
        let blocked = BlockedSignal::new(signo).unwrap();
        let target = Target {
            pid: std::process::id() as i32,
            tid: crate::sched::gettid(),
            signo,
        };
        Queuer::new(target).send(0xdead_beef).unwrap();
        let got = blocked.wait(100_000_000).unwrap().expect("the signal");
        assert_eq!(got.code, SI_QUEUE);
        assert_eq!(got.pid, target.pid);
        assert_eq!(got.value, 0xdead_beef);
        assert_eq!(blocked.wait(0).unwrap(), None);
    }

    #[test]
    fn a_thread_timer_reports_its_expiries() {
        let signo = probe_signal();
        let blocked = BlockedSignal::new(signo).unwrap();
        let timer = ThreadTimer::new(signo, crate::sched::gettid()).unwrap();
        let first = Clock::Monotonic.now_ns() + 1_000_000;
        timer.arm(first, 1_000_000).unwrap();
        let got = blocked.wait(500_000_000).unwrap().expect("an expiry");
        assert_eq!(got.code, SI_TIMER);
        assert!(got.at_ns >= first);
        drop(timer);
        drop(blocked);
    }
}
