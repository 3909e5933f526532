//! Counters shared between a process and the children it forks, and forking itself.

use crate::RtError;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters in an anonymous shared mapping: a forked child's increments are seen by
/// its parent. Unmapped on drop.
#[derive(Debug)]
pub struct SharedCounters {
    ptr: *mut AtomicU64,
    len: usize,
}

// SAFETY: the mapping holds only atomics, which are safe to use from any thread.
unsafe impl Send for SharedCounters {}
// SAFETY: as above: every access goes through an AtomicU64.
unsafe impl Sync for SharedCounters {}

impl SharedCounters {
    /// `len` counters, all zero.
    pub fn new(len: usize) -> Result<SharedCounters, RtError> {
        let len = len.max(1);
        let bytes = len * std::mem::size_of::<AtomicU64>();
        // SAFETY: an anonymous shared read-write mapping; we check for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RtError::last("map shared counters"));
        }
        Ok(SharedCounters {
            ptr: ptr as *mut AtomicU64,
            len,
        })
    }

    /// Counter `i` (wraps around the length).
    pub fn get(&self, i: usize) -> &AtomicU64 {
        // SAFETY: the mapping holds `len` zero-initialised (valid) AtomicU64s, is page
        // aligned, and lives as long as `self`.
        unsafe { &*self.ptr.add(i % self.len) }
    }

    /// The sum of all counters.
    pub fn total(&self) -> u64 {
        (0..self.len)
            .map(|i| self.get(i).load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping created in `new`, once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len * 8) };
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
