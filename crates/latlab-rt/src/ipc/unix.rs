//! A connected pair of Unix datagram sockets; the receiving one has a receive
//! timeout (`SO_RCVTIMEO`), so `recv` is bounded without any call per message.

use super::{close, read_u64, Errno, Received};
use crate::clock::ns_to_timespec;
use crate::RtError;

pub(super) struct Pair {
    receiving: i32,
    sending: i32,
}

impl Pair {
    pub(super) fn create(timeout_ns: i64) -> Result<Pair, RtError> {
        let mut fds = [-1; 2];
        // SAFETY: socketpair writes two descriptors into the array.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(RtError::last("create a Unix socket pair"));
        }
        let pair = Pair {
            receiving: fds[0],
            sending: fds[1],
        };
        let ts = ns_to_timespec(timeout_ns);
        let timeout = libc::timeval {
            tv_sec: ts.tv_sec,
            tv_usec: ts.tv_nsec / 1000,
        };
        // SAFETY: setsockopt on our socket with a timeval of the right size.
        let rc = unsafe {
            libc::setsockopt(
                pair.receiving,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(RtError::last("set the socket's receive timeout"));
        }
        Ok(pair)
    }

    #[inline]
    pub(super) fn send(&self, stamp: i64) -> Result<(), Errno> {
        let bytes = stamp.to_ne_bytes();
        // SAFETY: 8 valid bytes to our connected socket, without blocking.
        let n = unsafe {
            libc::send(
                self.sending,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match n {
            8 => Ok(()),
            n if n < 0 => Err(Errno::last()),
            _ => Err(Errno(libc::EIO)),
        }
    }

    #[inline]
    pub(super) fn receive(&self) -> Result<Received, Errno> {
        match read_u64(self.receiving) {
            Ok(Some(v)) => Ok(Received::Message(v as i64)),
            Ok(None) => Err(Errno(libc::EBADMSG)),
            Err(Errno(libc::EAGAIN)) => Ok(Received::TimedOut),
            Err(Errno(libc::EINTR)) => Ok(Received::Interrupted),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        close(self.receiving);
        close(self.sending);
    }
}
