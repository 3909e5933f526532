//! The signals latlab uses internally: one to interrupt a blocked measuring thread, one
//! to deliver POSIX timer expirations to a chosen thread.

use crate::RtError;
use std::sync::atomic::{AtomicU64, Ordering};

/// The signal sent to a measuring thread to break it out of a blocking sleep so it
/// notices a stop request at once. Its handler only counts it; it is installed without
/// `SA_RESTART` so blocking calls return `EINTR`.
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN() + 4
}

/// The signal POSIX timers (`SIGEV_THREAD_ID`) are delivered with.
pub fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 5
}

/// Wake signals handled by this process.
static WAKE_SIGNALS_HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_wake_signal(_: libc::c_int) {
    // A lock-free atomic add: async-signal-safe.
    WAKE_SIGNALS_HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// How many [`wake_signal`]s this process has handled so far.
pub fn wake_signals_handled() -> u64 {
    WAKE_SIGNALS_HANDLED.load(Ordering::Relaxed)
}

/// Installs the no-op handler for [`wake_signal`] (process-wide, idempotent).
pub fn install_wake_handler() -> Result<(), RtError> {
    // SAFETY: we build a zeroed sigaction, set a handler that is async-signal-safe (one
    // atomic add) and an empty mask, and pass valid pointers to sigaction.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_wake_signal as *const () as usize;
        action.sa_flags = 0; // no SA_RESTART: blocking calls must return EINTR
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(wake_signal(), &action, std::ptr::null_mut()) != 0 {
            return Err(RtError::last("install the wake-up signal handler"));
        }
    }
    Ok(())
}

/// Sends [`wake_signal`] to one thread of this process.
pub fn interrupt_thread(tid: i32) -> Result<(), RtError> {
    // SAFETY: tgkill with our own pid, a thread id we were given and a valid signal;
    // a thread that has already exited yields ESRCH, which we report.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid,
            wake_signal() as libc::c_long,
        )
    };
    if rc != 0 {
        return Err(RtError::last(format!("interrupt thread {tid}")));
    }
    Ok(())
}

/// `SIGCONT`s this process has handled: each means it had been stopped (`SIGSTOP`,
/// Ctrl-Z, a debugger) and went on.
static CONTINUED: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_continue(_: libc::c_int) {
    // A lock-free atomic add: async-signal-safe.
    CONTINUED.fetch_add(1, Ordering::Relaxed);
}

/// How many times this process was continued after a stop, since
/// [`count_continues`] was first called.
pub fn continues() -> u64 {
    CONTINUED.load(Ordering::Relaxed)
}

/// Counts every `SIGCONT` from now on (process-wide, idempotent); the process still
/// goes on as the signal's default action has it. A stopped process cannot catch the
/// stop itself, but the continue tells it that it was stopped.
///
/// The handler runs on a thread that does not block the signal: measuring threads
/// block it ([`block_continue_counting`]), so that it never cuts their sleeps short
/// (the kernel restarts no sleep after a handler, `SA_RESTART` or not).
pub fn count_continues() -> Result<(), RtError> {
    // SAFETY: as in `install_wake_handler`; the handler is one atomic add, and with
    // SA_RESTART interrupted system calls other than sleeps go on.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_continue as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGCONT, &action, std::ptr::null_mut()) != 0 {
            return Err(RtError::last("install the SIGCONT handler"));
        }
    }
    Ok(())
}

/// Keeps [`count_continues`]' handler off the calling thread (a measuring thread).
pub fn block_continue_counting() -> Result<(), RtError> {
    block_in_current_thread(&[libc::SIGCONT]).map(|_| ())
}

/// A set of signals.
pub(crate) fn sigset_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set; sigaddset only sets bits in it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks `signals` in the calling thread; returns the previous mask.
pub(crate) fn block_in_current_thread(signals: &[i32]) -> Result<libc::sigset_t, RtError> {
    let set = sigset_of(signals);
    // SAFETY: valid pointers to an initialised set and to storage for the old mask.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        if rc != 0 {
            return Err(RtError::new(
                "block a signal in the calling thread",
                std::io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(old)
    }
}

/// Restores a mask saved by [`block_in_current_thread`].
pub(crate) fn restore_mask(old: &libc::sigset_t) {
    // SAFETY: `old` is a mask previously returned by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}
