//! POSIX mutexes (with or without priority inheritance) and condition variables, with
//! deadlines on `CLOCK_MONOTONIC`, for the priority-inversion probes.
//!
//! These are the C library's own objects, as a real-time application uses them, so a
//! probe measures what `PTHREAD_PRIO_INHERIT` (a `FUTEX_LOCK_PI` in the kernel) and
//! `pthread_cond_broadcast` really do. Each lives in a box of its own: a pthread
//! object must not move once initialised. The process-shared mutex of `pi:task=process`
//! is initialised and locked with the same functions, in place in a shared mapping
//! ([`crate::partner::Inversion`]).

use crate::clock::{ns_to_timespec, Clock};
use crate::RtError;
use std::cell::UnsafeCell;

extern "C" {
    // glibc 2.30: the libc crate does not declare it.
    fn pthread_mutex_clocklock(
        mutex: *mut libc::pthread_mutex_t,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> libc::c_int;
    // glibc 2.30.
    fn pthread_cond_clockwait(
        cond: *mut libc::pthread_cond_t,
        mutex: *mut libc::pthread_mutex_t,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> libc::c_int;
}

/// What a mutex does for a task blocked on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `PTHREAD_PRIO_NONE`: the holder keeps its own priority.
    None,
    /// `PTHREAD_PRIO_INHERIT`: the holder runs at the highest priority of the tasks
    /// blocked on the mutex until it releases it.
    Inherit,
}

/// A pthread mutex.
pub struct Mutex {
    raw: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

impl std::fmt::Debug for Mutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mutex")
    }
}

// SAFETY: a pthread mutex is made to be used from several threads at once; it is only
// touched through the pthread functions, behind a pointer that never moves.
unsafe impl Send for Mutex {}
// SAFETY: as above.
unsafe impl Sync for Mutex {}

fn check(rc: libc::c_int, what: &str) -> Result<(), RtError> {
    match rc {
        0 => Ok(()),
        e => Err(RtError::new(what, std::io::Error::from_raw_os_error(e))),
    }
}

impl Mutex {
    /// A mutex with `protocol`. `PTHREAD_PRIO_INHERIT` fails with ENOTSUP on systems
    /// without PI futexes.
    pub fn new(protocol: Protocol) -> Result<Mutex, RtError> {
        // SAFETY: a zeroed pthread_mutex_t in a box of its own, which never moves,
        // initialised once here.
        unsafe {
            let raw = Box::new(UnsafeCell::new(std::mem::zeroed::<libc::pthread_mutex_t>()));
            init_mutex(raw.get(), protocol, false)?;
            Ok(Mutex { raw })
        }
    }

    /// Locks, waiting until `deadline_ns` on `CLOCK_MONOTONIC` at the latest; false when
    /// the deadline passed first.
    pub fn lock_until(&self, deadline_ns: i64) -> Result<bool, RtError> {
        // SAFETY: a valid, initialised mutex that never moves.
        unsafe { lock_mutex_until(self.raw.get(), deadline_ns) }
    }

    /// Unlocks a mutex the calling thread holds.
    pub fn unlock(&self) {
        // SAFETY: a valid, initialised mutex; callers unlock only what they locked.
        unsafe { libc::pthread_mutex_unlock(self.raw.get()) };
    }
}

/// Initialises the mutex at `raw` with `protocol`; `between_processes` makes it
/// `PTHREAD_PROCESS_SHARED` (it must then live in memory shared with the other
/// processes). Async-signal-safe it is not: call it before forking.
///
/// # Safety
///
/// `raw` must point to writable memory for a mutex that is not initialised (or was
/// destroyed) and will not move until it is destroyed.
pub(crate) unsafe fn init_mutex(
    raw: *mut libc::pthread_mutex_t,
    protocol: Protocol,
    between_processes: bool,
) -> Result<(), RtError> {
    // SAFETY: the attribute is initialised before use and destroyed after; the caller
    // vouches for `raw`.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        check(libc::pthread_mutexattr_init(&mut attr), "create a mutex")?;
        let proto = match protocol {
            Protocol::None => libc::PTHREAD_PRIO_NONE,
            Protocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
        };
        let mut set = check(
            libc::pthread_mutexattr_setprotocol(&mut attr, proto),
            "make a priority-inheritance mutex (PI futexes unsupported by this kernel or C library)",
        );
        if between_processes {
            set = set.and_then(|()| {
                check(
                    libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED),
                    "make a process-shared mutex",
                )
            });
        }
        let init = set.and_then(|()| check(libc::pthread_mutex_init(raw, &attr), "create a mutex"));
        libc::pthread_mutexattr_destroy(&mut attr);
        init
    }
}

/// Locks the mutex at `raw`, waiting until `deadline_ns` on `CLOCK_MONOTONIC` at the
/// latest; false when the deadline passed first.
///
/// # Safety
///
/// `raw` must point to an initialised mutex that does not move.
#[inline]
pub(crate) unsafe fn lock_mutex_until(
    raw: *mut libc::pthread_mutex_t,
    deadline_ns: i64,
) -> Result<bool, RtError> {
    // SAFETY: the caller vouches for the mutex.
    match unsafe { clocklock(raw, deadline_ns) } {
        0 => Ok(true),
        libc::ETIMEDOUT => Ok(false),
        e => Err(RtError::new(
            "lock a mutex",
            std::io::Error::from_raw_os_error(e),
        )),
    }
}

/// `pthread_mutex_clocklock` on `CLOCK_MONOTONIC` until `deadline_ns`: 0, ETIMEDOUT or
/// the error number. Allocates nothing and takes no other lock, so a forked child may
/// call it on a process-shared mutex.
///
/// # Safety
///
/// `raw` must point to an initialised mutex that does not move.
#[inline]
pub(crate) unsafe fn clocklock(raw: *mut libc::pthread_mutex_t, deadline_ns: i64) -> libc::c_int {
    let ts = ns_to_timespec(deadline_ns);
    // SAFETY: the caller vouches for the mutex; a valid timespec.
    let rc = unsafe { pthread_mutex_clocklock(raw, libc::CLOCK_MONOTONIC, &ts) };
    if rc != libc::EINVAL {
        return rc;
    }
    // A C library without monotonic PI timeouts: the same deadline on the realtime
    // clock.
    let real = Clock::Realtime.now_ns() + deadline_ns - Clock::Monotonic.now_ns();
    let ts = ns_to_timespec(real);
    // SAFETY: as above.
    unsafe { libc::pthread_mutex_timedlock(raw, &ts) }
}

impl Drop for Mutex {
    fn drop(&mut self) {
        // SAFETY: nobody holds or waits on the mutex any more (we own it exclusively).
        unsafe { libc::pthread_mutex_destroy(self.raw.get()) };
    }
}

/// A pthread condition variable whose waits time out on `CLOCK_MONOTONIC`.
pub struct Condvar {
    raw: Box<UnsafeCell<libc::pthread_cond_t>>,
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Condvar")
    }
}

// SAFETY: as for Mutex: made for concurrent use, never moved.
unsafe impl Send for Condvar {}
// SAFETY: as above.
unsafe impl Sync for Condvar {}

impl Condvar {
    /// A condition variable.
    pub fn new() -> Result<Condvar, RtError> {
        // SAFETY: as in Mutex::new.
        unsafe {
            let raw = Box::new(UnsafeCell::new(std::mem::zeroed::<libc::pthread_cond_t>()));
            check(
                libc::pthread_cond_init(raw.get(), std::ptr::null()),
                "create a condition variable",
            )?;
            Ok(Condvar { raw })
        }
    }

    /// Waits for a signal with `mutex` held (released while waiting, held again on
    /// return), until `deadline_ns` on `CLOCK_MONOTONIC` at the latest; false on timeout.
    pub fn wait_until(&self, mutex: &Mutex, deadline_ns: i64) -> bool {
        let ts = ns_to_timespec(deadline_ns);
        // SAFETY: valid, initialised objects that never move; the caller holds `mutex`.
        let rc = unsafe {
            pthread_cond_clockwait(self.raw.get(), mutex.raw.get(), libc::CLOCK_MONOTONIC, &ts)
        };
        rc == 0
    }

    /// Wakes every waiter.
    pub fn broadcast(&self) {
        // SAFETY: a valid, initialised condition variable.
        unsafe { libc::pthread_cond_broadcast(self.raw.get()) };
    }
}

impl Drop for Condvar {
    fn drop(&mut self) {
        // SAFETY: nobody waits on it any more (we own it exclusively).
        unsafe { libc::pthread_cond_destroy(self.raw.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_time_out_and_inheritance_is_available() {
        for protocol in [Protocol::None, Protocol::Inherit] {
            let m = std::sync::Arc::new(Mutex::new(protocol).unwrap());
            assert!(m.lock_until(Clock::Monotonic.now_ns() + 1_000_000).unwrap());
            let other = m.clone();
            let held = std::thread::spawn(move || {
                other
                    .lock_until(Clock::Monotonic.now_ns() + 5_000_000)
                    .unwrap()
            })
            .join()
            .unwrap();
            assert!(!held, "a held mutex times out for another thread");
            m.unlock();
        }
    }
}
