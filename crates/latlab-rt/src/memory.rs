//! Locked memory and a prefaulted stack, so page faults cannot land in a measurement.

use crate::RtError;

/// How much of the process to lock in RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockScope {
    /// Every page the process maps now or later, touched or not
    /// (`MCL_CURRENT | MCL_FUTURE`, cyclictest's `-m`).
    All,
    /// Every page the process has touched or touches later
    /// (`MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT`). Code and data never used stay out of
    /// RAM; the caller must touch what its measuring loop needs before measuring.
    Touched,
}

/// `MCL_ONFAULT` (Linux 4.4): lock pages when they are faulted in, not all at once.
const MCL_ONFAULT: libc::c_int = 4;

/// Holds memory locked in RAM; unlocks on drop.
#[derive(Debug)]
pub struct MemoryLock {
    /// What was locked (`Touched` falls back to `All` on kernels without `MCL_ONFAULT`).
    pub scope: LockScope,
}

impl MemoryLock {
    /// Locks with the given scope.
    ///
    /// Fails with ENOMEM when `RLIMIT_MEMLOCK` is too small and the caller lacks
    /// `CAP_IPC_LOCK`, or EPERM when locking is not permitted at all.
    pub fn lock(scope: LockScope) -> Result<MemoryLock, RtError> {
        let base = libc::MCL_CURRENT | libc::MCL_FUTURE;
        if scope == LockScope::Touched {
            // SAFETY: mlockall takes flags only and affects no Rust-visible state.
            if unsafe { libc::mlockall(base | MCL_ONFAULT) } == 0 {
                return Ok(MemoryLock { scope });
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return Err(RtError::last("lock memory (mlockall on fault)"));
            }
            // A kernel before 4.4: lock everything instead.
        }
        // SAFETY: as above.
        if unsafe { libc::mlockall(base) } != 0 {
            return Err(RtError::last("lock memory (mlockall)"));
        }
        Ok(MemoryLock {
            scope: LockScope::All,
        })
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

/// Page faults (minor + major) the calling thread has taken so far.
pub fn thread_page_faults() -> u64 {
    // SAFETY: a zeroed rusage is valid; getrusage fills it for the calling thread.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to the rusage above.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc != 0 {
        return 0;
    }
    (usage.ru_minflt + usage.ru_majflt).max(0) as u64
}

/// Makes every thread allocate from one malloc arena (glibc; elsewhere nothing).
///
/// glibc gives each thread that allocates its own arena. latlab's threads allocate only
/// before and after measuring, never in the loop, so sharing costs no contention that
/// matters, and a measuring thread's buffers reuse what the start-up freed instead of
/// fresh pages: about 200 KiB less resident, and locked, memory in a one-CPU run. (Load
/// workers, whose threads allocate as they work, keep glibc's default.)
pub fn share_one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes an allocator setting; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
