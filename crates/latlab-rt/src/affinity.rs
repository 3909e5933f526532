//! CPU affinity of the calling thread and the set of CPUs it may use.

use crate::RtError;
use std::mem;

/// Pins the calling thread to exactly one CPU.
pub fn pin_current_thread(cpu: usize) -> Result<(), RtError> {
    pin_task(0, cpu)
}

/// Pins thread or process `tid` (0 = the calling thread) to exactly one CPU.
pub fn pin_task(tid: i32, cpu: usize) -> Result<(), RtError> {
    try_pin_task(tid, cpu).map_err(|e| {
        RtError::new(
            format!("pin thread to CPU {cpu}"),
            std::io::Error::from_raw_os_error(e),
        )
    })
}

/// [`pin_task`] without allocating: the bare `errno` on failure.
fn try_pin_task(tid: i32, cpu: usize) -> Result<(), i32> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(libc::EINVAL);
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, CPU_SET stays in bounds
    // (checked above), and sched_setaffinity reads exactly size_of::<cpu_set_t>() bytes.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        // SAFETY: the calling thread's errno slot is always valid.
        return Err(unsafe { *libc::__errno_location() });
    }
    Ok(())
}

/// The CPUs the calling thread is allowed to run on (its affinity mask), ascending.
pub fn allowed_cpus() -> Result<Vec<usize>, RtError> {
    // SAFETY: as above; sched_getaffinity writes at most size_of::<cpu_set_t>() bytes
    // into `set`, and CPU_ISSET reads within the set for i < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        if libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(RtError::last("read the CPU affinity mask"));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&i| libc::CPU_ISSET(i, &set))
            .collect())
    }
}

/// The CPUs among `candidates` that a thread of this process may be pinned to: those
/// inside its cpuset (cgroup), whatever its affinity is now. The kernel intersects a
/// requested mask with the cpuset when setting it, so a short-lived thread asks for
/// every candidate and reads back what it got. CPUs set aside by `isolcpus` or
/// `nohz_full` are among them: no task starts there, but any may be pinned there.
pub fn permitted_among(candidates: &[usize]) -> Result<Vec<usize>, RtError> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("latlab-cpus".to_string())
            .spawn_scoped(scope, || match set_current_thread(candidates) {
                Ok(()) => allowed_cpus(),
                // No candidate inside the cpuset (or none the kernel knows).
                Err(e) if e.source.raw_os_error() == Some(libc::EINVAL) => Ok(Vec::new()),
                Err(e) => Err(e),
            })
            .map_err(|e| RtError::new("start a thread to read the cpuset", e))?
            .join()
            .unwrap_or_else(|_| {
                Err(RtError::new(
                    "read the cpuset",
                    std::io::Error::other("the thread reading it panicked"),
                ))
            })
    })
}

/// Restricts the calling thread to `cpus`.
pub fn set_current_thread(cpus: &[usize]) -> Result<(), RtError> {
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(RtError::new(
            "set CPU affinity",
            std::io::Error::from_raw_os_error(libc::EINVAL),
        ));
    }
    // SAFETY: as in `pin_current_thread`; every index is below CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(RtError::last("set CPU affinity"));
    }
    Ok(())
}

/// Moves the calling thread onto `cpus` and restores its previous mask on drop.
#[derive(Debug)]
pub struct AffinityGuard {
    original: Vec<usize>,
}

impl AffinityGuard {
    /// Applies `cpus`, remembering the current mask.
    pub fn apply(cpus: &[usize]) -> Result<AffinityGuard, RtError> {
        let original = allowed_cpus()?;
        set_current_thread(cpus)?;
        Ok(AffinityGuard { original })
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        let _ = set_current_thread(&self.original);
    }
}
