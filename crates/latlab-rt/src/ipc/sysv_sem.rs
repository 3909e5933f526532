//! A SysV semaphore set of one (`semget(IPC_PRIVATE)`, removed on drop, and recorded
//! meanwhile so that a later latlab can remove it if this one is killed).

use super::leftovers::{self, Kind};
use super::{Acquired, Errno};
use crate::clock::ns_to_timespec;
use crate::RtError;

/// `struct sembuf` (the libc crate does not declare it for Linux).
#[repr(C)]
struct SemBuf {
    sem_num: libc::c_ushort,
    sem_op: libc::c_short,
    sem_flg: libc::c_short,
}

pub(super) struct Set {
    id: i32,
}

impl Set {
    pub(super) fn create() -> Result<Set, RtError> {
        // SAFETY: semget with IPC_PRIVATE creates a new set of one; no pointers.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            let e = Errno::last();
            let what = match e.0 {
                libc::ENOSPC => {
                    "create a SysV semaphore set: the system's limits \
                                 (sysctl kernel.sem: SEMMNI sets, SEMMNS semaphores) are \
                                 reached; `ipcs -s` lists them and `ipcrm` removes stale ones"
                }
                libc::ENOSYS => {
                    "create a SysV semaphore set: this kernel has no SysV IPC \
                                 (CONFIG_SYSVIPC)"
                }
                _ => "create a SysV semaphore set (semget)",
            };
            return Err(e.context(what));
        }
        let set = Set { id };
        // SAFETY: SETVAL on semaphore 0 of our set; the value is passed as an int.
        if unsafe { libc::semctl(id, 0, libc::SETVAL, 1 as libc::c_int) } != 0 {
            return Err(RtError::last("initialise the SysV semaphore"));
        }
        // After SETVAL, the last change the set's recorded identity (its ctime) sees.
        leftovers::record(Kind::Semaphores, id);
        Ok(set)
    }

    #[inline]
    pub(super) fn acquire(&self, timeout_ns: i64) -> Result<Acquired, Errno> {
        let mut op = SemBuf {
            sem_num: 0,
            sem_op: -1,
            sem_flg: 0,
        };
        let timeout = ns_to_timespec(timeout_ns);
        // SAFETY: semtimedop on our set with one valid operation and a relative timeout.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_semtimedop,
                self.id,
                &mut op as *mut SemBuf,
                1usize,
                &timeout as *const libc::timespec,
            )
        };
        if rc == 0 {
            return Ok(Acquired::Yes);
        }
        match Errno::last() {
            Errno(libc::EAGAIN) => Ok(Acquired::TimedOut),
            Errno(libc::EINTR) => Ok(Acquired::Interrupted),
            e => Err(e),
        }
    }

    #[inline]
    pub(super) fn release(&self) -> Result<(), Errno> {
        let mut op = SemBuf {
            sem_num: 0,
            sem_op: 1,
            sem_flg: 0,
        };
        // SAFETY: semop on our set with one valid operation.
        if unsafe { libc::semop(self.id, (&mut op as *mut SemBuf).cast(), 1) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }
}

impl Drop for Set {
    fn drop(&mut self) {
        // SAFETY: removing the set we created, once; a blocked waiter gets EIDRM.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
        leftovers::forget(Kind::Semaphores, self.id);
    }
}
