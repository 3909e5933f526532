//! A lock made of one futex word (Drepper, "Futexes Are Tricky", mutex 2): 0 free,
//! 1 held, 2 held with waiters. Only a release that saw waiters makes a system call.

use super::{Acquired, Errno, SharedMapping};
use crate::clock::ns_to_timespec;
use crate::RtError;
use std::sync::atomic::{AtomicU32, Ordering};

pub(super) struct Futex {
    memory: SharedMapping<AtomicU32>,
    /// `FUTEX_PRIVATE_FLAG` unless shared between processes.
    private: i32,
}

impl Futex {
    pub(super) fn create(between_processes: bool) -> Result<Futex, RtError> {
        Ok(Futex {
            memory: SharedMapping::zeroed(1, "a futex")?,
            private: if between_processes {
                0
            } else {
                libc::FUTEX_PRIVATE_FLAG
            },
        })
    }

    #[inline(always)]
    fn word(&self) -> &AtomicU32 {
        // SAFETY: the mapping holds one zero-initialised (valid) AtomicU32 and lives
        // as long as `self`.
        unsafe { &*self.memory.get(0) }
    }

    #[inline]
    pub(super) fn acquire(&self, timeout_ns: i64) -> Result<Acquired, Errno> {
        let word = self.word();
        if word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Ok(Acquired::Yes);
        }
        let timeout = ns_to_timespec(timeout_ns);
        loop {
            // Mark it contended; if it was free meanwhile, it is ours.
            if word.swap(2, Ordering::Acquire) == 0 {
                return Ok(Acquired::Yes);
            }
            // SAFETY: FUTEX_WAIT on our word while it holds 2, with a relative timeout.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAIT | self.private,
                    2u32,
                    &timeout as *const libc::timespec,
                )
            };
            if rc != 0 {
                match Errno::last() {
                    Errno(libc::EAGAIN) => {}
                    Errno(libc::ETIMEDOUT) => return Ok(Acquired::TimedOut),
                    Errno(libc::EINTR) => return Ok(Acquired::Interrupted),
                    e => return Err(e),
                }
            }
        }
    }

    #[inline]
    pub(super) fn release(&self) -> Result<(), Errno> {
        let word = self.word();
        if word.fetch_sub(1, Ordering::Release) != 1 {
            word.store(0, Ordering::Release);
            // SAFETY: FUTEX_WAKE of one waiter on our word.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAKE | self.private,
                    1,
                )
            };
            if rc < 0 {
                return Err(Errno::last());
            }
        }
        Ok(())
    }
}
