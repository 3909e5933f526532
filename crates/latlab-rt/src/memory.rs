//! Locked memory and a prefaulted stack, so page faults cannot land in a measurement.
//!
//! How the kernel counts a lock against `RLIMIT_MEMLOCK` (unless the caller has
//! `CAP_IPC_LOCK`) decides what may be locked: `mlockall(MCL_CURRENT)` needs every byte
//! mapped now within the limit, and under `MCL_FUTURE` every later mapping — a thread's
//! whole stack, heap growth, a buffer — must fit beside it, touched or not (even with
//! `MCL_ONFAULT`). A later mapping that does not fit fails with ENOMEM, so a thread
//! cannot start and an allocation aborts the process. [`LockRoom`] therefore lets the
//! future be locked only when the limit holds everything the caller will still map.

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

/// How far in time a lock reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockReach {
    /// What is mapped now and everything mapped later (`MCL_FUTURE`).
    CurrentAndFuture,
    /// Only what is mapped now: later mappings (thread stacks, buffers) stay unlocked,
    /// so none of them can fail for the limit's sake. The main thread's stack is left
    /// unlocked too: a locked stack that grows past the limit gets SIGSEGV.
    Current,
}

/// A lock to take: its scope, and how many bytes the caller will still map while
/// holding it (thread stacks, buffers, heap growth), as an upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRequest {
    /// What to lock.
    pub scope: LockScope,
    /// Bytes mapped after the lock is taken, at most.
    pub mapped_later: u64,
}

/// What `RLIMIT_MEMLOCK` leaves room for in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRoom {
    /// The soft `RLIMIT_MEMLOCK` in bytes (`None` = unlimited).
    pub limit: Option<u64>,
    /// `CAP_IPC_LOCK` is in effect: the kernel ignores the limit.
    pub exempt: bool,
    /// Bytes mapped now, as the kernel counts them for `MCL_CURRENT` (its `total_vm`).
    pub mapped: u64,
}

impl LockRoom {
    /// The room of the calling process, now.
    pub fn of_this_process() -> LockRoom {
        LockRoom {
            limit: memlock_limit(),
            exempt: has_ipc_lock(),
            // Unreadable /proc: assume the worst, so nothing is locked that may not fit.
            mapped: mapped_bytes().unwrap_or(u64::MAX),
        }
    }

    /// The limit that binds, if any (`None`: unlimited, or exempt from it).
    pub fn binding_limit(&self) -> Option<u64> {
        self.limit.filter(|_| !self.exempt)
    }

    /// How far a lock may reach when `mapped_later` more bytes (the main thread's
    /// stack growth included) will be mapped while it is held: the future too only when
    /// the limit holds all of it; what is mapped now when that fits; else nothing.
    pub fn reach(&self, mapped_later: u64) -> Option<LockReach> {
        let Some(limit) = self.binding_limit() else {
            return Some(LockReach::CurrentAndFuture);
        };
        if self.mapped.saturating_add(mapped_later) <= limit {
            Some(LockReach::CurrentAndFuture)
        } else if self.mapped <= limit {
            Some(LockReach::Current)
        } else {
            None
        }
    }
}

/// `MCL_ONFAULT` (Linux 4.4): lock pages when they are faulted in, not all at once.
const MCL_ONFAULT: libc::c_int = 4;

/// Holds memory locked in RAM; unlocks on drop.
#[derive(Debug)]
pub struct MemoryLock {
    /// What was locked (`Touched` falls back to `All` on kernels without `MCL_ONFAULT`).
    pub scope: LockScope,
    /// How far in time.
    pub reach: LockReach,
}

impl MemoryLock {
    /// Locks with the given scope and reach.
    ///
    /// Fails with ENOMEM when `RLIMIT_MEMLOCK` is too small and the caller lacks
    /// `CAP_IPC_LOCK`, or EPERM when locking is not permitted at all. Use
    /// [`LockRoom::reach`] to choose a reach the limit can hold.
    pub fn lock(scope: LockScope, reach: LockReach) -> Result<MemoryLock, RtError> {
        let base = match reach {
            LockReach::CurrentAndFuture => libc::MCL_CURRENT | libc::MCL_FUTURE,
            LockReach::Current => libc::MCL_CURRENT,
        };
        let lock = MemoryLock::lock_all(scope, base, reach)?;
        if reach == LockReach::Current {
            if let Err(e) = unlock_main_stack() {
                // Dropping the lock unlocks everything again.
                drop(lock);
                return Err(e);
            }
        }
        Ok(lock)
    }

    fn lock_all(
        scope: LockScope,
        base: libc::c_int,
        reach: LockReach,
    ) -> Result<MemoryLock, RtError> {
        if scope == LockScope::Touched {
            // SAFETY: mlockall takes flags only and affects no Rust-visible state.
            if unsafe { libc::mlockall(base | MCL_ONFAULT) } == 0 {
                return Ok(MemoryLock { scope, reach });
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
            reach,
        })
    }
}

/// Unlocks the main thread's stack, the one mapping that grows by itself: without
/// `MCL_FUTURE` its growth is not budgeted, and a locked stack growing past the limit
/// would end the process with SIGSEGV.
fn unlock_main_stack() -> Result<(), RtError> {
    let what = "leave the main thread's stack unlocked";
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| RtError::new(what, e))?;
    let range = maps
        .lines()
        .find(|l| l.ends_with("[stack]"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, b)| {
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        })
        .filter(|(start, end)| start < end)
        .ok_or_else(|| {
            RtError::new(
                what,
                std::io::Error::other("no [stack] mapping in /proc/self/maps"),
            )
        })?;
    // SAFETY: munlock only changes whether the mapped pages of the range stay resident;
    // it invalidates no memory.
    if unsafe { libc::munlock(range.0 as *const libc::c_void, range.1 - range.0) } != 0 {
        return Err(RtError::last(what));
    }
    Ok(())
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

/// `CAP_IPC_LOCK`'s bit in the capability sets (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;

/// True when `CAP_IPC_LOCK` is in the effective set (false when unreadable).
fn has_ipc_lock() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// Bytes the process maps now: the first field of `/proc/self/statm` (the kernel's
/// `total_vm`, which `mlockall(MCL_CURRENT)` checks against the limit), in pages.
fn mapped_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.checked_mul(u64::try_from(page).ok()?)
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn room(limit: Option<u64>, exempt: bool, mapped: u64) -> LockRoom {
        LockRoom {
            limit,
            exempt,
            mapped,
        }
    }

    #[test]
    fn the_future_is_locked_only_when_the_limit_holds_what_is_mapped_later() {
        // Debian's default 8 MiB and a run that maps 7 MiB now and 2 MiB later: locking
        // the future would make its later thread stacks and buffers fail.
        let debian = room(Some(8 * MIB), false, 7 * MIB);
        assert_eq!(debian.reach(2 * MIB), Some(LockReach::Current));
        assert_eq!(debian.reach(MIB), Some(LockReach::CurrentAndFuture));
        assert_eq!(room(Some(64 << 10), false, 7 * MIB).reach(0), None);
    }

    #[test]
    fn no_limit_or_cap_ipc_lock_locks_everything() {
        assert_eq!(
            room(None, false, 500 * MIB).reach(u64::MAX),
            Some(LockReach::CurrentAndFuture)
        );
        assert_eq!(
            room(Some(64 << 10), true, 500 * MIB).reach(u64::MAX),
            Some(LockReach::CurrentAndFuture)
        );
        assert_eq!(room(Some(64 << 10), true, 0).binding_limit(), None);
    }

    #[test]
    fn this_process_maps_something() {
        let room = LockRoom::of_this_process();
        assert!(room.mapped > 0 && room.mapped < u64::MAX);
    }
}
