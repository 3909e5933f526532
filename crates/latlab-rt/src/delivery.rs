//! What became of bytes written into a pipe: a write that succeeded only put them in the
//! pipe's buffer, and a reader that exits without reading them (`| head -c1`) loses
//! them without the writer hearing of it. The pipe itself tells: how much it still
//! holds (`FIONREAD`), and whether anyone can still read it (`POLLERR` on the writing
//! end once every reader has closed it).

use std::time::{Duration, Instant};

/// How often the pipe is looked at while waiting.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// What became of what was written to a pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The reader took everything.
    Read,
    /// Every reader closed the pipe with this many bytes still in it.
    Unread(u64),
    /// A reader is still there, and has not taken everything yet.
    Pending,
    /// `fd` is not a pipe: nothing to tell.
    NotAPipe,
}

/// Waits at most `patience` for the reader of the pipe `fd` (the writing end) to take
/// what was written into it, or to go away without it.
pub fn delivery(fd: i32, patience: Duration) -> Delivery {
    // SAFETY: libc::stat is plain integers, for which all zero bytes are a valid value.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes only into the struct it is given, which outlives the call; a
    // bad fd is an error return, not undefined behaviour.
    let stat_failed = unsafe { libc::fstat(fd, &mut stat) } != 0;
    if stat_failed || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return Delivery::NotAPipe;
    }
    let started = Instant::now();
    loop {
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, the bytes the pipe holds, into `unread`.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut unread) } != 0 {
            return Delivery::NotAPipe;
        }
        if unread == 0 {
            return Delivery::Read;
        }
        let mut poll = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        if ready > 0 && poll.revents & libc::POLLERR != 0 {
            return Delivery::Unread(unread as u64);
        }
        if started.elapsed() >= patience {
            return Delivery::Pending;
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into the array, which we own from here.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        use std::os::fd::FromRawFd;
        // SAFETY: both descriptors were just created and are owned by nothing else.
        unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        }
    }

    #[test]
    fn a_reader_that_leaves_without_reading_is_told_apart_from_one_that_read() {
        let (mut reader, mut writer) = pipe();
        writer.write_all(b"0123456789").unwrap();
        let mut first = [0u8; 1];
        reader.read_exact(&mut first).unwrap();
        assert_eq!(
            delivery(writer.as_raw_fd(), Duration::ZERO),
            Delivery::Pending
        );
        drop(reader);
        assert_eq!(
            delivery(writer.as_raw_fd(), Duration::from_secs(1)),
            Delivery::Unread(9)
        );

        let (mut reader, mut writer) = pipe();
        writer.write_all(b"0123456789").unwrap();
        let mut all = [0u8; 10];
        reader.read_exact(&mut all).unwrap();
        assert_eq!(
            delivery(writer.as_raw_fd(), Duration::from_secs(1)),
            Delivery::Read
        );
        let file = std::fs::File::open("/proc/self/status").unwrap();
        assert_eq!(
            delivery(file.as_raw_fd(), Duration::ZERO),
            Delivery::NotAPipe
        );
    }
}
