//! A pipe: the stamp is written as 8 bytes (below PIPE_BUF, so atomic) and read back.

use super::{close, read_u64, write_u64, Errno, Received};
use crate::RtError;

pub(super) struct Pipe {
    reading: i32,
    writing: i32,
}

impl Pipe {
    pub(super) fn create() -> Result<Pipe, RtError> {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(RtError::last("create a pipe"));
        }
        let pipe = Pipe {
            reading: fds[0],
            writing: fds[1],
        };
        // The writing end only: a full pipe is skipped, never waited on.
        // SAFETY: fcntl on our own descriptor.
        if unsafe { libc::fcntl(pipe.writing, libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
            return Err(RtError::last("make the pipe's writing end non-blocking"));
        }
        Ok(pipe)
    }

    #[inline]
    pub(super) fn send(&self, stamp: i64) -> Result<(), Errno> {
        write_u64(self.writing, stamp as u64)
    }

    /// Blocks in `read` (bounded by the caller's watchdog).
    #[inline]
    pub(super) fn receive(&self) -> Result<Received, Errno> {
        match read_u64(self.reading) {
            Ok(Some(v)) => Ok(Received::Message(v as i64)),
            Ok(None) => Err(Errno(libc::EPIPE)),
            Err(Errno(libc::EINTR)) => Ok(Received::Interrupted),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        close(self.reading);
        close(self.writing);
    }
}
