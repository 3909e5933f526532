//! A POSIX unnamed semaphore in shared memory.

use super::{realtime_deadline, Acquired, Errno, SharedMapping};
use crate::RtError;

pub(super) struct Sem {
    memory: SharedMapping<libc::sem_t>,
}

impl Sem {
    pub(super) fn create(between_processes: bool) -> Result<Sem, RtError> {
        let memory = SharedMapping::zeroed(1, "a POSIX semaphore")?;
        // SAFETY: initialising the semaphore in its own zeroed mapping, once, value 1.
        if unsafe { libc::sem_init(memory.get(0), between_processes as libc::c_int, 1) } != 0 {
            return Err(RtError::last("initialise a POSIX semaphore (sem_init)"));
        }
        Ok(Sem { memory })
    }

    #[inline]
    pub(super) fn acquire(&self, timeout_ns: i64) -> Result<Acquired, Errno> {
        let deadline = realtime_deadline(timeout_ns);
        // SAFETY: an initialised semaphore and a valid absolute timeout.
        if unsafe { libc::sem_timedwait(self.memory.get(0), &deadline) } == 0 {
            return Ok(Acquired::Yes);
        }
        match Errno::last() {
            Errno(libc::ETIMEDOUT) => Ok(Acquired::TimedOut),
            Errno(libc::EINTR) => Ok(Acquired::Interrupted),
            e => Err(e),
        }
    }

    #[inline]
    pub(super) fn release(&self) -> Result<(), Errno> {
        // SAFETY: an initialised semaphore.
        if unsafe { libc::sem_post(self.memory.get(0)) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }
}

impl Drop for Sem {
    fn drop(&mut self) {
        // SAFETY: destroying the semaphore initialised in `create`, once, before its
        // memory is unmapped; no task waits on it any more (the owner stops partners
        // first).
        unsafe { libc::sem_destroy(self.memory.get(0)) };
    }
}
