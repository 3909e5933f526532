//! Intertask communication for the `msg` and `sem` probes: message channels,
//! semaphores, and what the partner task (a [`crate::partner`] thread or forked
//! process) at the other end runs.
//!
//! A partner process is forked from a multithreaded program, so until it exits it may
//! only do what is async-signal-safe: no allocation, no lock other than the primitive
//! under test, raw system calls and clock reads. Everything a partner executes is
//! therefore in this module — the partner programs in [`partner`], and every operation
//! they call, which reports failures as a plain [`Errno`] (a `Copy` number) rather than
//! an [`RtError`] (which allocates). The measuring side turns an `Errno` into an
//! `RtError` with [`Errno::context`].
//!
//! Every object is released on every path: SysV queues and semaphore sets are created
//! `IPC_PRIVATE` and removed (`IPC_RMID`) when their owner is dropped — and recorded
//! until then, so the next latlab removes those of one that was killed
//! ([`leftovers::sweep_stale`]) — POSIX queues are
//! unlinked as soon as both ends have them open, descriptors are closed, shared
//! mappings unmapped, and a partner is stopped and joined or reaped (by its pid) before
//! the objects it uses go away.

pub mod channel;
mod control;
mod eventfd;
mod futex;
pub mod leftovers;
mod mutex;
pub mod partner;
mod pipe;
mod posix_mq;
mod posix_sem;
mod programs;
pub mod semaphore;
mod sleep_watch;
mod sysv_msg;
mod sysv_sem;
#[cfg(test)]
mod tests;
mod unix;
mod watchdog;

pub use channel::{Channel, Received, Transport};
pub use control::Plan;
pub use partner::{PartnerSpec, PlannedPartner};
pub use semaphore::{Acquired, SemKind, Semaphore};
pub use sleep_watch::SleepWatch;

use crate::clock::{ns_to_timespec, Clock};
pub(crate) use crate::shared::SharedMapping;
use crate::RtError;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

/// The longest any blocking wait of a probe or partner lasts before it looks again
/// at the stop flag and at the other side: 100 ms.
pub const MAX_WAIT_NS: i64 = 100_000_000;

/// An `errno` value: what a failed call in a partner (or a measuring loop) returns,
/// without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's current `errno`.
    #[inline]
    pub fn last() -> Errno {
        // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
        Errno(unsafe { *libc::__errno_location() })
    }

    /// An [`RtError`] saying what was being done.
    pub fn context(self, what: impl Into<String>) -> RtError {
        RtError::new(what, std::io::Error::from_raw_os_error(self.0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&std::io::Error::from_raw_os_error(self.0), f)
    }
}

/// Reads CLOCK_MONOTONIC in ns (a vDSO call; async-signal-safe).
#[inline(always)]
fn now() -> i64 {
    Clock::Monotonic.now_ns()
}

/// An absolute CLOCK_REALTIME instant `timeout_ns` from now, for the calls whose
/// timeout is on that clock (`mq_timedreceive`, `sem_timedwait`,
/// `pthread_mutex_timedlock`). A wall-clock step while waiting lengthens or shortens
/// the one wait; the timeout only bounds a wait on a partner that stopped answering.
#[inline]
fn realtime_deadline(timeout_ns: i64) -> libc::timespec {
    ns_to_timespec(Clock::Realtime.now_ns() + timeout_ns)
}

/// Sleeps until `deadline` (CLOCK_MONOTONIC, absolute), retrying after signals.
#[inline]
fn nap_until(deadline: i64) -> Result<(), Errno> {
    let ts = ns_to_timespec(deadline);
    loop {
        // SAFETY: a valid timespec by reference; no remainder for absolute sleeps.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            e => return Err(Errno(e)),
        }
    }
}

/// A fresh number for names unique within this process (`/latlab-<pid>-<n>`).
fn next_unique() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Reads one 8-byte message from a descriptor (pipe, socket, eventfd).
#[inline]
fn read_u64(fd: i32) -> Result<Option<u64>, Errno> {
    let mut value = 0u64;
    // SAFETY: reads at most 8 bytes into the valid u64.
    let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
    match n {
        8 => Ok(Some(value)),
        n if n >= 0 => Ok(None),
        _ => Err(Errno::last()),
    }
}

/// Writes one 8-byte message to a descriptor.
#[inline]
fn write_u64(fd: i32, value: u64) -> Result<(), Errno> {
    // SAFETY: writes 8 bytes from the valid u64.
    let n = unsafe { libc::write(fd, (&value as *const u64).cast(), 8) };
    if n == 8 {
        Ok(())
    } else if n < 0 {
        Err(Errno::last())
    } else {
        Err(Errno(libc::EIO))
    }
}

/// Closes a descriptor we own.
fn close(fd: i32) {
    if fd >= 0 {
        // SAFETY: the caller owns `fd` and closes it once.
        unsafe { libc::close(fd) };
    }
}
