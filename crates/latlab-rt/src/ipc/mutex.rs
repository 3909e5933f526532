//! A pthread mutex in shared memory (default type and protocol: no priority
//! inheritance, as rt-tests' ptsematest).

use super::{realtime_deadline, Acquired, Errno, SharedMapping};
use crate::RtError;

pub(super) struct Mutex {
    memory: SharedMapping<libc::pthread_mutex_t>,
}

impl Mutex {
    pub(super) fn create(between_processes: bool) -> Result<Mutex, RtError> {
        let memory = SharedMapping::zeroed(1, "a pthread mutex")?;
        // SAFETY: attribute object initialised, set, used and destroyed locally; the
        // mutex is initialised once in its own zeroed mapping.
        let rc = unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            let mut rc = libc::pthread_mutexattr_init(&mut attr);
            if rc == 0 && between_processes {
                rc = libc::pthread_mutexattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
            }
            if rc == 0 {
                rc = libc::pthread_mutex_init(memory.get(0), &attr);
            }
            libc::pthread_mutexattr_destroy(&mut attr);
            rc
        };
        if rc != 0 {
            return Err(Errno(rc).context("initialise a pthread mutex"));
        }
        Ok(Mutex { memory })
    }

    /// `pthread_mutex_timedlock` (it is never interrupted by signals).
    #[inline]
    pub(super) fn acquire(&self, timeout_ns: i64) -> Result<Acquired, Errno> {
        let deadline = realtime_deadline(timeout_ns);
        // SAFETY: an initialised mutex and a valid absolute timeout.
        match unsafe { libc::pthread_mutex_timedlock(self.memory.get(0), &deadline) } {
            0 => Ok(Acquired::Yes),
            libc::ETIMEDOUT => Ok(Acquired::TimedOut),
            e => Err(Errno(e)),
        }
    }

    #[inline]
    pub(super) fn release(&self) -> Result<(), Errno> {
        // SAFETY: an initialised mutex, unlocked by the task that locked it (the
        // probes' protocol guarantees it).
        match unsafe { libc::pthread_mutex_unlock(self.memory.get(0)) } {
            0 => Ok(()),
            e => Err(Errno(e)),
        }
    }
}

impl Drop for Mutex {
    fn drop(&mut self) {
        // SAFETY: destroying the mutex initialised in `create`, once, before its memory
        // is unmapped.
        unsafe { libc::pthread_mutex_destroy(self.memory.get(0)) };
    }
}
