//! Memory shared between a process and the children it forks, and forking itself.

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

/// Whether `fork_child` returned in the parent or the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// In the parent, with the child's pid.
    Parent(i32),
    /// In the child.
    Child,
}

/// Forks the calling process.
///
/// # Safety
///
/// The caller must be single-threaded at the time of the call (after a fork only the
/// calling thread exists in the child, and any lock another thread held stays locked
/// forever), and the child must leave with [`exit_child`].
pub unsafe fn fork_child() -> Result<Forked, RtError> {
    // SAFETY: the caller guarantees the process is single-threaded.
    match unsafe { libc::fork() } {
        -1 => Err(RtError::last("fork")),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Forks the calling process, which must have a single thread: checked, so this is
/// safe to call (a process with other threads is refused with EBUSY).
pub fn fork_single_threaded() -> Result<Forked, RtError> {
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse::<u32>().ok())
        });
    if threads != Some(1) {
        return Err(RtError::new(
            "fork (the process has more than one thread)",
            std::io::Error::from_raw_os_error(libc::EBUSY),
        ));
    }
    // SAFETY: the process has exactly one thread, checked just above; the callers in
    // latlab end their children with `exit_child`.
    unsafe { fork_child() }
}

/// Ends a forked child at once, without running the parent's exit handlers twice.
pub fn exit_child(code: i32) -> ! {
    // SAFETY: _exit takes a status and never returns.
    unsafe { libc::_exit(code) }
}

/// Waits for a child (any status); returns its raw wait status.
pub fn wait_child(pid: i32) -> Result<i32, RtError> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(status);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(RtError::new("wait for a child", err));
        }
    }
}

/// CPU time (user + system) of all waited-for children, in nanoseconds.
pub fn children_cpu_ns() -> u64 {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to the rusage above.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
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
