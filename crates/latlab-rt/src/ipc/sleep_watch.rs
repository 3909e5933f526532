//! Whether a thread is asleep, read from `/proc` by another task.

use crate::RtError;

/// Reads whether one thread is asleep, from its `/proc/…/stat` (state `S` or `D`),
/// through a descriptor opened by that thread, so any task can read it, a forked
/// child included.
pub struct SleepWatch {
    fd: i32,
}

impl std::fmt::Debug for SleepWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SleepWatch").field("fd", &self.fd).finish()
    }
}

impl SleepWatch {
    /// Watches the calling thread.
    pub fn current_thread() -> Result<SleepWatch, RtError> {
        // SAFETY: opening a constant NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c"/proc/thread-self/stat".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(RtError::last(
                "open /proc/thread-self/stat (is /proc mounted?)",
            ));
        }
        Ok(SleepWatch { fd })
    }

    /// True while the thread sleeps. Async-signal-safe.
    #[inline]
    pub fn asleep(&self) -> bool {
        let mut buf = [0u8; 512];
        // SAFETY: reads at most 512 bytes into the buffer, from offset 0.
        let n = unsafe { libc::pread(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return false;
        }
        let text = &buf[..n as usize];
        // "pid (comm) S …": the state follows the last ')' (comm may hold one).
        match text.iter().rposition(|&b| b == b')') {
            Some(i) => matches!(text.get(i + 2), Some(b'S') | Some(b'D')),
            None => false,
        }
    }
}

impl Drop for SleepWatch {
    fn drop(&mut self) {
        super::close(self.fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_sleeping_thread_is_seen_asleep_and_a_running_one_is_not() {
        let watch = SleepWatch::current_thread().unwrap();
        assert!(!watch.asleep(), "the calling thread is running");
        let watch = Arc::new(watch);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let w = watch.clone();
        let seen = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if w.asleep() {
                    let _ = tx.send(());
                    return true;
                }
            }
            false
        });
        // Block here until the other thread has seen us asleep.
        let _ = rx.recv_timeout(Duration::from_secs(3));
        assert!(seen.join().unwrap());
    }
}
