//! Sleep methods: ways for a thread to wait until an instant and wake up.
//!
//! Each method is a [`WakeSource`]. A measuring loop asks it to wait for an expected
//! instant and learns when it actually woke; the difference is the wake-up latency.
//! Periodic kernel timers (timerfd, POSIX timers) also report how many periods
//! expired, because after a late wake the kernel's count — not the loop's guess — says
//! which deadline comes next.

use crate::clock::{ns_to_timespec, Clock};
use crate::signal;
use crate::RtError;
use std::sync::atomic::{AtomicBool, Ordering};

/// How a thread waits for its next period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `clock_nanosleep(TIMER_ABSTIME)` to the absolute deadline (cyclictest's default).
    Abs,
    /// Relative `clock_nanosleep` of one period (the Wilshire / Rapid Reaction test);
    /// deadlines drift by the accumulated latency.
    Rel,
    /// A periodic `timerfd` with an absolute first expiry, woken by `read()`.
    Timerfd,
    /// A periodic POSIX timer delivering a signal to this thread (`SIGEV_THREAD_ID`),
    /// waited for with `sigwaitinfo()`.
    PosixTimer,
    /// Busy-waiting on the clock: no sleep at all, the floor of what software sees.
    Spin,
    /// Sleep until `margin` before the deadline, then busy-wait.
    Hybrid,
}

impl Method {
    /// Every method, in the order they are documented.
    pub const ALL: [Method; 6] = [
        Method::Abs,
        Method::Rel,
        Method::Timerfd,
        Method::PosixTimer,
        Method::Spin,
        Method::Hybrid,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Method::Abs => "abs",
            Method::Rel => "rel",
            Method::Timerfd => "timerfd",
            Method::PosixTimer => "posix-timer",
            Method::Spin => "spin",
            Method::Hybrid => "hybrid",
        }
    }

    /// True when deadlines are relative to the previous wake (they drift).
    pub fn is_relative(self) -> bool {
        self == Method::Rel
    }
}

/// One wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    /// When the thread ran again, on the source's clock.
    pub at_ns: i64,
    /// For periodic kernel timers: how many periods expired since the last wake
    /// (1 when on time). `None` when the source does not know.
    pub expirations: Option<u64>,
}

/// Why a wait ended without a wake-up.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// A signal interrupted the wait (or the stop flag was seen while spinning).
    #[error("interrupted")]
    Interrupted,
    /// The kernel call failed.
    #[error(transparent)]
    Failed(#[from] RtError),
}

/// A way to wait for an instant. Implemented by every [`Method`] and by simulated
/// clocks in tests.
pub trait WakeSource {
    /// Reads the source's clock.
    fn now_ns(&self) -> i64;

    /// Prepares periodic waking: first deadline and period (absolute, on the clock).
    /// Called once, before the first [`wait`](WakeSource::wait).
    fn arm(&mut self, first_deadline_ns: i64, period_ns: i64) -> Result<(), RtError>;

    /// Waits until `expected_ns` and reports the wake. Spinning sources give up with
    /// [`WaitError::Interrupted`] when `stop` becomes true.
    fn wait(&mut self, expected_ns: i64, stop: &AtomicBool) -> Result<Wake, WaitError>;
}

/// A concrete sleep method bound to a clock, ready to be armed.
///
/// One per measuring thread, built once; kept unboxed so a wake costs no indirection.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Sleeper {
    /// See [`Method::Abs`].
    Abs(Clock),
    /// See [`Method::Rel`].
    Rel(RelSleep),
    /// See [`Method::Timerfd`].
    Timerfd(TimerFd),
    /// See [`Method::PosixTimer`].
    PosixTimer(PosixTimer),
    /// See [`Method::Spin`].
    Spin(Clock),
    /// See [`Method::Hybrid`]; the margin in nanoseconds.
    Hybrid(Clock, i64),
    /// Scripted wake-ups on a virtual clock (see [`Replay`]).
    Replay(Replay),
}

impl Sleeper {
    /// A sleeper for `method` on `clock`; `hybrid_margin_ns` is used by `hybrid` only.
    pub fn new(method: Method, clock: Clock, hybrid_margin_ns: i64) -> Sleeper {
        match method {
            Method::Abs => Sleeper::Abs(clock),
            Method::Rel => Sleeper::Rel(RelSleep {
                clock,
                period_ns: 0,
                remaining: None,
            }),
            Method::Timerfd => Sleeper::Timerfd(TimerFd { clock, fd: -1 }),
            Method::PosixTimer => Sleeper::PosixTimer(PosixTimer {
                clock,
                timer: None,
                saved_mask: None,
                wait_set: signal::sigset_of(&[]),
            }),
            Method::Spin => Sleeper::Spin(clock),
            Method::Hybrid => Sleeper::Hybrid(clock, hybrid_margin_ns),
        }
    }

    /// A sleeper that replays `steps` (at most [`Replay::CAPACITY`]) without sleeping.
    pub fn replay(steps: &[ReplayStep]) -> Sleeper {
        let mut script = [ReplayStep::Wake {
            late_ns: 0,
            expirations: None,
        }; Replay::CAPACITY];
        let len = steps.len().min(Replay::CAPACITY);
        script[..len].copy_from_slice(&steps[..len]);
        Sleeper::Replay(Replay {
            now: 0,
            script,
            len,
            next: 0,
        })
    }

    #[inline(always)]
    fn clock(&self) -> Clock {
        match self {
            Sleeper::Abs(c) | Sleeper::Spin(c) | Sleeper::Hybrid(c, _) => *c,
            Sleeper::Rel(r) => r.clock,
            Sleeper::Timerfd(t) => t.clock,
            Sleeper::PosixTimer(p) => p.clock,
            Sleeper::Replay(_) => Clock::Monotonic,
        }
    }
}

impl WakeSource for Sleeper {
    #[inline(always)]
    fn now_ns(&self) -> i64 {
        match self {
            Sleeper::Replay(r) => r.now,
            _ => self.clock().now_ns(),
        }
    }

    fn arm(&mut self, first_deadline_ns: i64, period_ns: i64) -> Result<(), RtError> {
        match self {
            Sleeper::Rel(r) => {
                r.period_ns = period_ns;
                Ok(())
            }
            Sleeper::Timerfd(t) => t.arm(first_deadline_ns, period_ns),
            Sleeper::PosixTimer(p) => p.arm(first_deadline_ns, period_ns),
            Sleeper::Abs(_) | Sleeper::Spin(_) | Sleeper::Hybrid(..) | Sleeper::Replay(_) => Ok(()),
        }
    }

    #[inline]
    fn wait(&mut self, expected_ns: i64, stop: &AtomicBool) -> Result<Wake, WaitError> {
        match self {
            Sleeper::Abs(clock) => {
                sleep_until(*clock, expected_ns)?;
                Ok(woke(clock.now_ns()))
            }
            Sleeper::Rel(r) => r.wait(),
            Sleeper::Timerfd(t) => t.wait(),
            Sleeper::PosixTimer(p) => p.wait(),
            Sleeper::Spin(clock) => spin_until(*clock, expected_ns, stop),
            Sleeper::Hybrid(clock, margin) => {
                let wake_early = expected_ns - *margin;
                if clock.now_ns() < wake_early {
                    sleep_until(*clock, wake_early)?;
                }
                spin_until(*clock, expected_ns, stop)
            }
            Sleeper::Replay(r) => r.wait(expected_ns),
        }
    }
}

/// One scripted wake-up of a [`Replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayStep {
    /// Wake `late_ns` after the expected instant (negative: early), reporting
    /// `expirations` as a periodic kernel timer would.
    Wake {
        /// Lateness.
        late_ns: i64,
        /// Periods expired, for periodic-timer behaviour.
        expirations: Option<u64>,
    },
    /// The wait is interrupted by a signal.
    Interrupt,
}

/// Wake-ups replayed from a script on a virtual clock: no sleeping, no kernel call.
///
/// A measuring loop runs on it once before measuring, so every path of the loop's
/// code and every page it uses is touched (and, under `LockScope::Touched`, locked)
/// before the first real sample. After the script, each wake is a little later than
/// the one before, so every new sample is a new largest one.
#[derive(Debug, Clone)]
pub struct Replay {
    now: i64,
    script: [ReplayStep; Replay::CAPACITY],
    len: usize,
    next: usize,
}

impl Replay {
    /// Most steps a script can hold.
    pub const CAPACITY: usize = 16;

    fn wait(&mut self, expected_ns: i64) -> Result<Wake, WaitError> {
        let step = if self.next < self.len {
            self.script[self.next]
        } else {
            ReplayStep::Wake {
                late_ns: 1_000 + 7 * self.next as i64,
                expirations: None,
            }
        };
        self.next += 1;
        match step {
            ReplayStep::Interrupt => Err(WaitError::Interrupted),
            ReplayStep::Wake {
                late_ns,
                expirations,
            } => {
                self.now = self.now.max(expected_ns) + late_ns;
                Ok(Wake {
                    at_ns: self.now,
                    expirations,
                })
            }
        }
    }
}

#[inline(always)]
fn woke(at_ns: i64) -> Wake {
    Wake {
        at_ns,
        expirations: None,
    }
}

/// `clock_nanosleep(TIMER_ABSTIME)`.
#[inline]
pub fn sleep_until(clock: Clock, deadline_ns: i64) -> Result<(), WaitError> {
    let ts = ns_to_timespec(deadline_ns);
    // SAFETY: a valid timespec by reference, no remainder pointer (absolute sleeps
    // do not use it).
    let rc = unsafe {
        libc::clock_nanosleep(clock.id(), libc::TIMER_ABSTIME, &ts, std::ptr::null_mut())
    };
    match rc {
        0 => Ok(()),
        libc::EINTR => Err(WaitError::Interrupted),
        e => Err(WaitError::Failed(RtError::new(
            "clock_nanosleep",
            std::io::Error::from_raw_os_error(e),
        ))),
    }
}

/// Sleeps for about `duration`, for waits outside a measurement (polling a partner,
/// reaping a child): until an absolute instant on CLOCK_MONOTONIC, and a signal ends
/// it early. `std::thread::sleep` instead resumes after every signal with what
/// remained, which under a long timer slack includes the slack: interrupted every
/// few milliseconds (a stop request), such a sleep grows instead of ending.
pub fn nap(duration: std::time::Duration) {
    let deadline = Clock::Monotonic
        .now_ns()
        .saturating_add(duration.as_nanos().min(i64::MAX as u128) as i64);
    // Interrupted (or failed, which cannot happen with a valid clock): the caller's
    // loop looks again anyway.
    let _ = sleep_until(Clock::Monotonic, deadline);
}

#[inline]
fn spin_until(clock: Clock, expected_ns: i64, stop: &AtomicBool) -> Result<Wake, WaitError> {
    loop {
        let now = clock.now_ns();
        if now >= expected_ns {
            return Ok(woke(now));
        }
        if stop.load(Ordering::Relaxed) {
            return Err(WaitError::Interrupted);
        }
        std::hint::spin_loop();
    }
}

/// Relative sleeps of one period; an interrupted sleep resumes with what remained.
#[derive(Debug)]
pub struct RelSleep {
    clock: Clock,
    period_ns: i64,
    remaining: Option<libc::timespec>,
}

impl RelSleep {
    #[inline]
    fn wait(&mut self) -> Result<Wake, WaitError> {
        let request = self
            .remaining
            .take()
            .unwrap_or_else(|| ns_to_timespec(self.period_ns));
        let mut remaining = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespecs for the request and the remainder.
        let rc = unsafe { libc::clock_nanosleep(self.clock.id(), 0, &request, &mut remaining) };
        match rc {
            0 => Ok(woke(self.clock.now_ns())),
            libc::EINTR => {
                self.remaining = Some(remaining);
                Err(WaitError::Interrupted)
            }
            e => Err(WaitError::Failed(RtError::new(
                "clock_nanosleep (relative)",
                std::io::Error::from_raw_os_error(e),
            ))),
        }
    }
}

/// A periodic timerfd.
#[derive(Debug)]
pub struct TimerFd {
    clock: Clock,
    fd: i32,
}

impl TimerFd {
    fn arm(&mut self, first_deadline_ns: i64, period_ns: i64) -> Result<(), RtError> {
        // SAFETY: timerfd_create takes a clock id and flags and returns a new fd.
        let fd = unsafe { libc::timerfd_create(self.clock.id(), libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(RtError::last("timerfd_create"));
        }
        self.fd = fd;
        let spec = libc::itimerspec {
            it_interval: ns_to_timespec(period_ns),
            it_value: ns_to_timespec(first_deadline_ns),
        };
        // SAFETY: `fd` is our timerfd; `spec` is valid; the old value is not wanted.
        let rc = unsafe {
            libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(RtError::last("timerfd_settime"));
        }
        Ok(())
    }

    #[inline]
    fn wait(&mut self) -> Result<Wake, WaitError> {
        let mut expirations: u64 = 0;
        // SAFETY: reads exactly 8 bytes into the u64; `fd` is our armed timerfd.
        let n = unsafe {
            libc::read(
                self.fd,
                &mut expirations as *mut u64 as *mut libc::c_void,
                std::mem::size_of::<u64>(),
            )
        };
        if n != 8 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                return Err(WaitError::Interrupted);
            }
            return Err(WaitError::Failed(RtError::new("read timerfd", err)));
        }
        Ok(Wake {
            at_ns: self.clock.now_ns(),
            expirations: Some(expirations),
        })
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: we own the fd and close it once.
            unsafe { libc::close(self.fd) };
        }
    }
}

/// A periodic POSIX timer signalling this thread.
#[derive(Debug)]
pub struct PosixTimer {
    clock: Clock,
    timer: Option<TimerId>,
    saved_mask: Option<libc::sigset_t>,
    wait_set: libc::sigset_t,
}

#[derive(Debug)]
struct TimerId(libc::timer_t);

/// `si_code` of a signal sent by a POSIX timer expiry.
const SI_TIMER: i32 = -2;

// Offset of `si_overrun` in the kernel's siginfo for timers: three ints, then the
// union aligned to the pointer size, whose `_timer` member starts with `int _tid`.
const SI_OVERRUN_OFFSET: usize = if cfg!(target_pointer_width = "64") {
    20
} else {
    16
};

impl PosixTimer {
    fn arm(&mut self, first_deadline_ns: i64, period_ns: i64) -> Result<(), RtError> {
        let signo = signal::timer_signal();
        self.saved_mask = Some(signal::block_in_current_thread(&[signo])?);
        self.wait_set = signal::sigset_of(&[signo]);
        // SAFETY: a zeroed sigevent is valid; we fill notify, signal and target thread.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signo;
        event.sigev_notify_thread_id = crate::sched::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to the event and to storage for the timer id.
        if unsafe { libc::timer_create(self.clock.id(), &mut event, &mut timer) } != 0 {
            return Err(RtError::last("timer_create (SIGEV_THREAD_ID)"));
        }
        self.timer = Some(TimerId(timer));
        let spec = libc::itimerspec {
            it_interval: ns_to_timespec(period_ns),
            it_value: ns_to_timespec(first_deadline_ns),
        };
        // SAFETY: `timer` was just created; `spec` is valid; old value not wanted.
        let rc =
            unsafe { libc::timer_settime(timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(RtError::last("timer_settime"));
        }
        Ok(())
    }

    #[inline]
    fn wait(&mut self) -> Result<Wake, WaitError> {
        // SAFETY: siginfo_t is plain data, for which all-zero bytes are valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `wait_set` is an initialised set holding the one signal this thread
        // blocked in `arm`; `info` is valid storage for the result.
        let rc = unsafe { libc::sigwaitinfo(&self.wait_set, &mut info) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                return Err(WaitError::Interrupted);
            }
            return Err(WaitError::Failed(RtError::new("sigwaitinfo", err)));
        }
        if info.si_code != SI_TIMER {
            // The same signal number sent by someone else (kill, sigqueue): not an
            // expiry, and its siginfo holds no overrun count. Wait again.
            return Err(WaitError::Interrupted);
        }
        let at_ns = self.clock.now_ns();
        // SAFETY: siginfo_t is at least 128 bytes; the offset lies within it and the
        // kernel stores the timer overrun count there for SI_TIMER signals.
        let overrun = unsafe {
            std::ptr::read_unaligned(
                (&info as *const libc::siginfo_t as *const u8).add(SI_OVERRUN_OFFSET) as *const i32,
            )
        };
        Ok(Wake {
            at_ns,
            expirations: Some(1 + overrun.max(0) as u64),
        })
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        if let Some(TimerId(t)) = self.timer.take() {
            // SAFETY: deleting the timer we created, once.
            unsafe { libc::timer_delete(t) };
        }
        // Drain an expiry still pending: unblocking it would run its default action,
        // which terminates the process.
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: sigtimedwait with a zero timeout only dequeues our blocked signal.
        while unsafe { libc::sigtimedwait(&self.wait_set, std::ptr::null_mut(), &zero) } > 0 {}
        if let Some(mask) = self.saved_mask.take() {
            signal::restore_mask(&mask);
        }
    }
}

// SAFETY: a POSIX timer id is a kernel handle usable from any thread of the process.
// The sleeper is moved to its measuring thread before it is armed, and must be
// dropped there too: dropping it drains that thread's pending expiries and restores
// that thread's signal mask (the timer probe does so when measuring ends).
unsafe impl Send for TimerId {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slack::TimerSlackGuard;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_nap_interrupted_under_a_long_timer_slack_ends_instead_of_growing() {
        // A stop request interrupts a thread every few ms; under a 1 s slack a sleep
        // that resumes with its remaining time (slack included) would never end.
        signal::install_wake_handler().unwrap();
        let _slack = TimerSlackGuard::set(1_000_000_000).unwrap();
        let me = crate::sched::gettid();
        let napped = Arc::new(AtomicBool::new(false));
        let interrupter = {
            let napped = napped.clone();
            std::thread::spawn(move || {
                let begun = Instant::now();
                while !napped.load(Ordering::Relaxed) {
                    if begun.elapsed() > Duration::from_secs(5) {
                        return false; // the nap outlasted every interruption
                    }
                    let _ = signal::interrupt_thread(me);
                    std::thread::sleep(Duration::from_millis(5));
                }
                true
            })
        };
        nap(Duration::from_millis(2));
        napped.store(true, Ordering::Relaxed);
        assert!(
            interrupter.join().unwrap(),
            "the nap ended only after the interruptions stopped"
        );
    }
}
