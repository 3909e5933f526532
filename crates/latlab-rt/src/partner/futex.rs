//! Futex waits and wakes on a 32-bit word, shared between threads and forked processes.
//!
//! The operations are the process-shared ones (no `FUTEX_PRIVATE_FLAG`), so a word in a
//! [`SharedRegion`](super::SharedRegion) works across `fork` as well as between threads.

use crate::clock::ns_to_timespec;
use std::sync::atomic::AtomicU32;

/// How a [`wait`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// Woken by a [`wake`] (or spuriously): check the word.
    Woken,
    /// The word no longer held the expected value when the wait began.
    Changed,
    /// The timeout passed.
    TimedOut,
    /// A signal interrupted the wait.
    Interrupted,
}

/// Blocks while `word` holds `expected`, for at most `timeout_ns` (relative, on
/// `CLOCK_MONOTONIC`).
pub fn wait(word: &AtomicU32, expected: u32, timeout_ns: i64) -> Waited {
    let ts = ns_to_timespec(timeout_ns.max(0));
    // SAFETY: FUTEX_WAIT reads the aligned 32-bit word `word` points to (an AtomicU32
    // has the layout of a u32) and a valid relative timespec; it writes nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        )
    };
    if rc == 0 {
        return Waited::Woken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Waited::Changed,
        Some(libc::ETIMEDOUT) => Waited::TimedOut,
        Some(libc::EINTR) => Waited::Interrupted,
        // EFAULT/EINVAL cannot happen for a valid word; treat as a spurious wake.
        _ => Waited::Woken,
    }
}

/// Wakes up to `count` tasks waiting on `word`; returns how many were woken.
pub fn wake(word: &AtomicU32, count: i32) -> usize {
    // SAFETY: FUTEX_WAKE only uses the address of the aligned word as a key.
    let rc = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count) };
    rc.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn a_wait_ends_on_change_timeout_and_wake() {
        let word = AtomicU32::new(1);
        assert_eq!(wait(&word, 0, 1_000_000), Waited::Changed);
        assert_eq!(wait(&word, 1, 1_000_000), Waited::TimedOut);
        let shared = Arc::new(AtomicU32::new(0));
        let waker = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                shared.store(1, Ordering::Release);
                wake(&shared, 1)
            })
        };
        while shared.load(Ordering::Acquire) == 0 {
            let _ = wait(&shared, 0, 1_000_000_000);
        }
        waker.join().unwrap();
    }
}
