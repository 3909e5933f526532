//! Memory shared between a process and the children it forks: raw C objects
//! (`SharedMapping`), one Rust value ([`SharedRegion`]) and counters
//! ([`SharedCounters`]), all in anonymous `MAP_SHARED` mappings.

use crate::RtError;
use std::sync::atomic::{AtomicU64, Ordering};

/// An anonymous `MAP_SHARED` mapping of `len` zero-initialised `T`s: a forked child
/// sees the same memory. For the objects that must live where both tasks see them
/// (counters, a futex word, a `sem_t`, a `pthread_mutex_t`). Unmapped on drop.
pub(crate) struct SharedMapping<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> SharedMapping<T> {
    /// Maps zeroed memory for `len` (at least one) `T`s. `T` must be a plain C object
    /// or an atomic, for which all-zero bytes are a valid (if not yet initialised)
    /// value.
    pub(crate) fn zeroed(len: usize, what: &str) -> Result<SharedMapping<T>, RtError> {
        let len = len.max(1);
        // SAFETY: an anonymous shared read-write mapping; MAP_FAILED is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::bytes(len),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RtError::last(format!("map shared memory for {what}")));
        }
        Ok(SharedMapping {
            ptr: ptr.cast(),
            len,
        })
    }

    fn bytes(len: usize) -> usize {
        (len * std::mem::size_of::<T>()).max(1)
    }

    /// Object `i` (wrapping around the length), as a raw pointer: the C functions that
    /// use it take one.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> *mut T {
        // No division on the usual path: these are read in measuring loops.
        let i = if i < self.len { i } else { i % self.len };
        // SAFETY: `i < len`: within the mapping.
        unsafe { self.ptr.add(i) }
    }
}

impl<T> Drop for SharedMapping<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `zeroed`, once.
        unsafe { libc::munmap(self.ptr.cast(), Self::bytes(self.len)) };
    }
}

// SAFETY: the mapping is page memory owned by this value; what is placed in it is made
// for use from several threads and processes (atomics, futex words, process-shared
// semaphores and mutexes), and every access goes through atomics or their C functions.
unsafe impl<T> Send for SharedMapping<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedMapping<T> {}

/// A value in an anonymous shared mapping: a forked child sees (and changes) the same
/// memory as its parent. Dropped and unmapped with the last owner in the parent.
///
/// `T` must keep the state it shares inline (atomics, arrays, plain numbers): memory
/// it points to elsewhere is copied, not shared, into a child.
pub struct SharedRegion<T> {
    memory: SharedMapping<T>,
}

impl<T> std::fmt::Debug for SharedRegion<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegion").finish_non_exhaustive()
    }
}

impl<T> SharedRegion<T> {
    /// Maps a region and moves `value` into it.
    pub fn new(value: T) -> Result<SharedRegion<T>, RtError> {
        let memory: SharedMapping<T> =
            SharedMapping::zeroed(1, "memory shared with partner processes")?;
        // SAFETY: the mapping is valid for writes of one T and page aligned (any
        // alignment of T); what it holds is not yet a T, so nothing is dropped.
        unsafe { memory.get(0).write(value) };
        Ok(SharedRegion { memory })
    }
}

impl<T> std::ops::Deref for SharedRegion<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: initialised in `new`, mapped until drop, and only shared as `&T`.
        unsafe { &*self.memory.get(0) }
    }
}

impl<T> Drop for SharedRegion<T> {
    fn drop(&mut self) {
        // SAFETY: the value was initialised in `new` and is dropped once, here; the
        // mapping is unmapped after, when `memory` drops.
        unsafe { std::ptr::drop_in_place(self.memory.get(0)) };
    }
}

// SAFETY: the region only hands out `&T`, so sharing or sending it across threads is
// as safe as sharing a `&T`, which `T: Sync` allows.
unsafe impl<T: Sync> Send for SharedRegion<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SharedRegion<T> {}

/// Counters in an anonymous shared mapping: a forked child's increments are seen by
/// its parent. Unmapped on drop.
pub struct SharedCounters {
    memory: SharedMapping<AtomicU64>,
}

impl std::fmt::Debug for SharedCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCounters")
            .field("len", &self.memory.len)
            .finish()
    }
}

impl SharedCounters {
    /// `len` counters, all zero.
    pub fn new(len: usize) -> Result<SharedCounters, RtError> {
        Ok(SharedCounters {
            memory: SharedMapping::zeroed(len, "shared counters")?,
        })
    }

    /// Counter `i` (wraps around the length).
    pub fn get(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the mapping holds zero-initialised (valid) AtomicU64s, is page
        // aligned, and lives as long as `self`.
        unsafe { &*self.memory.get(i) }
    }

    /// The sum of all counters.
    pub fn total(&self) -> u64 {
        (0..self.memory.len)
            .map(|i| self.get(i).load(Ordering::Relaxed))
            .sum()
    }
}

/// CPU time of a process, split as the kernel accounts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// Time spent in user mode, in nanoseconds.
    pub user_ns: u64,
    /// Time spent in the kernel on its behalf, in nanoseconds.
    pub system_ns: u64,
}

/// `getrusage(who)`'s user and system time; `None` when it fails.
fn rusage_times(who: libc::c_int) -> Option<CpuTimes> {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to the rusage above.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return None;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some(CpuTimes {
        user_ns: ns(usage.ru_utime),
        system_ns: ns(usage.ru_stime),
    })
}

/// CPU time (user + system) of all waited-for children, in nanoseconds.
pub fn children_cpu_ns() -> u64 {
    rusage_times(libc::RUSAGE_CHILDREN).map_or(0, |t| t.user_ns + t.system_ns)
}

/// CPU time of this process (every thread) and of all its waited-for children; `None`
/// when the kernel would not say.
pub fn own_and_children_cpu_times() -> Option<CpuTimes> {
    let (own, children) = (
        rusage_times(libc::RUSAGE_SELF)?,
        rusage_times(libc::RUSAGE_CHILDREN)?,
    );
    Some(CpuTimes {
        user_ns: own.user_ns + children.user_ns,
        system_ns: own.system_ns + children.system_ns,
    })
}

/// Free bytes available to unprivileged users on the file system holding `path`.
pub fn free_bytes(path: &std::path::Path) -> Result<u64, RtError> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        RtError::new(
            "read free space",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        )
    })?;
    // SAFETY: a zeroed statvfs is valid; statvfs fills it from a valid C path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(RtError::last(format!(
            "read free space of {}",
            path.display()
        )));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Asks the kernel to write all dirty data to disk (`sync(2)`).
pub fn sync_all() {
    // SAFETY: sync takes no arguments.
    unsafe { libc::sync() };
}
