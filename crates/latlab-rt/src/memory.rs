//! Locked memory and a prefaulted stack, so page faults cannot land in a measurement.

use crate::RtError;

/// Holds all current and future memory of the process locked in RAM; unlocks on drop.
#[derive(Debug)]
pub struct MemoryLock {
    _private: (),
}

impl MemoryLock {
    /// Locks all current and future mappings (`mlockall(MCL_CURRENT | MCL_FUTURE)`).
    ///
    /// Fails with ENOMEM when `RLIMIT_MEMLOCK` is too small and the caller lacks
    /// `CAP_IPC_LOCK`, or EPERM when locking is not permitted at all.
    pub fn lock_all() -> Result<MemoryLock, RtError> {
        // SAFETY: mlockall takes flags only and affects no Rust-visible state.
        let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
        if rc != 0 {
            return Err(RtError::last("lock memory (mlockall)"));
        }
        Ok(MemoryLock { _private: () })
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        // SAFETY: munlockall takes no arguments; unlocking cannot invalidate memory.
        unsafe { libc::munlockall() };
    }
}

/// The soft `RLIMIT_MEMLOCK` in bytes (`None` = unlimited).
pub fn memlock_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid `lim`.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
    if rc != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        None
    } else {
        Some(lim.rlim_cur)
    }
}

/// Touches `bytes` of the calling thread's stack so its pages are mapped (and, under
/// `MCL_FUTURE`, locked) before the measuring loop starts.
#[inline(never)]
pub fn prefault_stack<const BYTES: usize>() {
    let mut buf = [0u8; BYTES];
    // One write per page is enough to fault each page in.
    for i in (0..BYTES).step_by(4096) {
        buf[i] = 1;
    }
    std::hint::black_box(&mut buf);
}
