//! Per-thread timer slack (`PR_SET_TIMERSLACK`).

use crate::RtError;

/// The largest timer slack latlab sets: 1 s.
///
/// The kernel may delay each of a thread's sleeps by up to its slack, so a slack of
/// hours turns every sleep into one of hours. A second already lets a measurement show
/// what slack does to wake-ups (the kernel's default is 50 µs), and keeps the value
/// within what `PR_GET_TIMERSLACK` returns on every architecture (below 2^31 ns).
pub const MAX_TIMER_SLACK_NS: u64 = 1_000_000_000;

/// Sets the calling thread's timer slack and restores the previous value on drop.
///
/// Must be dropped on the thread that created it: timer slack is per thread.
#[derive(Debug)]
pub struct TimerSlackGuard {
    original_ns: u64,
}

impl TimerSlackGuard {
    /// Sets the slack to `ns` nanoseconds (the kernel treats 0 as "back to default").
    pub fn set(ns: u64) -> Result<TimerSlackGuard, RtError> {
        let original_ns = current_ns();
        set_raw(ns)?;
        Ok(TimerSlackGuard { original_ns })
    }
}

impl Drop for TimerSlackGuard {
    fn drop(&mut self) {
        let _ = set_raw(self.original_ns);
    }
}

/// The calling thread's current timer slack in nanoseconds.
pub fn current_ns() -> u64 {
    // The value comes back as the system call's return value, a long: glibc's prctl()
    // returns an int, which would cut it to 32 bits (5 s read back as 705032704 ns).
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments and returns the value.
    let v = unsafe { libc::syscall(libc::SYS_prctl, libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    v.max(0) as u64
}

fn set_raw(ns: u64) -> Result<(), RtError> {
    // SAFETY: PR_SET_TIMERSLACK takes the value as an unsigned long, no pointers.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(RtError::last(format!("set timer slack to {ns} ns")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slack_above_32_bits_reads_back_whole() {
        // On this test's own thread; the guard puts the slack back.
        let before = current_ns();
        {
            let _slack = TimerSlackGuard::set(5_000_000_000).unwrap();
            assert_eq!(current_ns(), 5_000_000_000);
        }
        assert_eq!(current_ns(), before, "the guard restores the slack");
    }
}
