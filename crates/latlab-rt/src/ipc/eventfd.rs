//! An eventfd: the sender adds its stamp to the 8-byte counter; a read returns the
//! counter and resets it to zero. Two stamps written before one read arrive as their
//! sum, which the receiver must recognise (it lies far in the future).

use super::{close, read_u64, write_u64, Errno, Received};
use crate::RtError;

pub(super) struct Counter {
    fd: i32,
}

impl Counter {
    pub(super) fn create() -> Result<Counter, RtError> {
        // SAFETY: eventfd takes an initial value and flags; returns a new descriptor.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(RtError::last("create an eventfd"));
        }
        Ok(Counter { fd })
    }

    #[inline]
    pub(super) fn send(&self, stamp: i64) -> Result<(), Errno> {
        write_u64(self.fd, stamp as u64)
    }

    /// Blocks in `read` (bounded by the caller's watchdog).
    #[inline]
    pub(super) fn receive(&self) -> Result<Received, Errno> {
        match read_u64(self.fd) {
            Ok(Some(v)) => Ok(Received::Message(v.min(i64::MAX as u64) as i64)),
            Ok(None) => Err(Errno(libc::EBADMSG)),
            Err(Errno(libc::EINTR)) => Ok(Received::Interrupted),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        close(self.fd);
    }
}
