//! A POSIX message queue, named `/latlab-<pid>-<n>` and unlinked as soon as both ends
//! have it open: nothing is left in `/dev/mqueue` whatever happens next.

use super::{next_unique, realtime_deadline, Errno, Received};
use crate::RtError;
use std::ffi::CString;

/// Messages the queue holds: below the default `fs.mqueue.msg_max` (10), so no
/// privilege is needed.
const CAPACITY: libc::c_long = 8;
const PAYLOAD: usize = std::mem::size_of::<i64>();

pub(super) struct Queue {
    receiving: libc::mqd_t,
    sending: libc::mqd_t,
    /// The name it had (already unlinked).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) name: String,
}

impl Queue {
    pub(super) fn create() -> Result<Queue, RtError> {
        let name = format!("/latlab-{}-{}", std::process::id(), next_unique());
        let c_name = CString::new(name.clone()).expect("no NUL in the name");
        // SAFETY: a zeroed mq_attr is valid; we set the two sizes mq_open reads.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = CAPACITY;
        attr.mq_msgsize = PAYLOAD as libc::c_long;
        // SAFETY: a valid C name, flags, mode and attributes (read during the call).
        let receiving = unsafe {
            libc::mq_open(
                c_name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDONLY | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &attr as *const libc::mq_attr,
            )
        };
        if receiving < 0 {
            return Err(explain(Errno::last(), &name));
        }
        // SAFETY: opening the queue just created, for writing, without blocking.
        let sending = unsafe {
            libc::mq_open(
                c_name.as_ptr(),
                libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        let opened = Errno::last();
        // Both ends are open (or the second failed): the name is no longer needed.
        // SAFETY: unlinking the name we created.
        unsafe { libc::mq_unlink(c_name.as_ptr()) };
        if sending < 0 {
            // SAFETY: closing the descriptor opened above, once.
            unsafe { libc::mq_close(receiving) };
            return Err(explain(opened, &name));
        }
        Ok(Queue {
            receiving,
            sending,
            name,
        })
    }

    #[inline]
    pub(super) fn send(&self, stamp: i64) -> Result<(), Errno> {
        let bytes = stamp.to_ne_bytes();
        // SAFETY: PAYLOAD valid bytes; our sending descriptor.
        if unsafe { libc::mq_send(self.sending, bytes.as_ptr().cast(), PAYLOAD, 0) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    #[inline]
    pub(super) fn receive(&self, timeout_ns: i64) -> Result<Received, Errno> {
        let deadline = realtime_deadline(timeout_ns);
        let mut bytes = [0u8; PAYLOAD];
        // SAFETY: a buffer of the queue's message size, no priority wanted, a valid
        // absolute timeout.
        let n = unsafe {
            libc::mq_timedreceive(
                self.receiving,
                bytes.as_mut_ptr().cast(),
                PAYLOAD,
                std::ptr::null_mut(),
                &deadline,
            )
        };
        match n {
            n if n == PAYLOAD as isize => Ok(Received::Message(i64::from_ne_bytes(bytes))),
            n if n >= 0 => Err(Errno(libc::EBADMSG)),
            _ => match Errno::last() {
                Errno(libc::ETIMEDOUT) => Ok(Received::TimedOut),
                Errno(libc::EINTR) => Ok(Received::Interrupted),
                e => Err(e),
            },
        }
    }
}

fn explain(e: Errno, name: &str) -> RtError {
    let why = match e.0 {
        libc::EMFILE => format!(
            "open POSIX message queue {name}: RLIMIT_MSGQUEUE (the bytes of queues one \
             user may hold) or the open-files limit is exhausted: raise it with `ulimit -q` \
             / `ulimit -n`, or close other queues"
        ),
        libc::ENOSPC => format!(
            "open POSIX message queue {name}: the system's limit on queues \
             (/proc/sys/fs/mqueue/queues_max) is reached"
        ),
        libc::EINVAL => format!(
            "open POSIX message queue {name}: {CAPACITY} messages of {PAYLOAD} bytes exceed \
             /proc/sys/fs/mqueue/msg_max or msgsize_max: raise them (sysctl fs.mqueue.msg_max=10)"
        ),
        libc::ENOSYS => format!(
            "open POSIX message queue {name}: this kernel has no POSIX message queues \
             (CONFIG_POSIX_MQUEUE)"
        ),
        _ => format!("open POSIX message queue {name}"),
    };
    e.context(why)
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: closing our two descriptors, once each; the queue (already
        // unlinked) is freed with the last one.
        unsafe {
            libc::mq_close(self.receiving);
            libc::mq_close(self.sending);
        }
    }
}
