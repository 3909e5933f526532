//! A SysV message queue (`msgget(IPC_PRIVATE)`, removed with `IPC_RMID` on drop, and
//! recorded meanwhile so that a later latlab can remove it if this one is killed).

use super::leftovers::{self, Kind};
use super::{Errno, Received};
use crate::RtError;

/// One message: the type SysV requires, then the stamp.
#[repr(C)]
struct Message {
    mtype: libc::c_long,
    stamp: i64,
}

const PAYLOAD: usize = std::mem::size_of::<i64>();

pub(super) struct Queue {
    id: i32,
}

impl Queue {
    pub(super) fn create() -> Result<Queue, RtError> {
        // SAFETY: msgget with IPC_PRIVATE creates a new queue; no pointers.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            let e = Errno::last();
            let what = match e.0 {
                libc::ENOSPC => "create a SysV message queue: the system's limit on queues \
                                 (sysctl kernel.msgmni) is reached; `ipcs -q` lists them and \
                                 `ipcrm` removes stale ones"
                    .to_string(),
                libc::ENOSYS => "create a SysV message queue: this kernel has no SysV IPC \
                                 (CONFIG_SYSVIPC)"
                    .to_string(),
                _ => "create a SysV message queue (msgget)".to_string(),
            };
            return Err(e.context(what));
        }
        leftovers::record(Kind::Queue, id);
        Ok(Queue { id })
    }

    #[inline]
    pub(super) fn send(&self, stamp: i64) -> Result<(), Errno> {
        let message = Message { mtype: 1, stamp };
        // SAFETY: a valid message whose payload is PAYLOAD bytes after the type.
        let rc = unsafe {
            libc::msgsnd(
                self.id,
                (&message as *const Message).cast(),
                PAYLOAD,
                libc::IPC_NOWAIT,
            )
        };
        if rc != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// Blocks in `msgrcv` (no timeout: the caller's watchdog bounds it).
    #[inline]
    pub(super) fn receive(&self) -> Result<Received, Errno> {
        let mut message = Message { mtype: 0, stamp: 0 };
        // SAFETY: room for a type and PAYLOAD bytes; any message type (0).
        let n = unsafe {
            libc::msgrcv(
                self.id,
                (&mut message as *mut Message).cast(),
                PAYLOAD,
                0,
                0,
            )
        };
        match n {
            n if n == PAYLOAD as isize => Ok(Received::Message(message.stamp)),
            n if n >= 0 => Err(Errno(libc::EBADMSG)),
            _ => match Errno::last() {
                Errno(libc::EINTR) => Ok(Received::Interrupted),
                e => Err(e),
            },
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: removing the queue we created, once; a blocked receiver gets EIDRM.
        unsafe { libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
        leftovers::forget(Kind::Queue, self.id);
    }
}
