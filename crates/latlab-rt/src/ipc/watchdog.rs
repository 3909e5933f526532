//! A one-shot timer that interrupts one thread's blocking call.

use super::Errno;
use crate::clock::ns_to_timespec;
use crate::{signal, RtError};

/// A POSIX timer on CLOCK_MONOTONIC that sends latlab's wake-up signal (a no-op
/// handler installed without `SA_RESTART`) to the thread that created it, so a
/// blocking call without a timeout of its own (`msgrcv`, `read`) returns `EINTR` when
/// it expires. Re-arming replaces the pending expiry, so one call per wait suffices.
#[derive(Debug)]
pub(super) struct Watchdog {
    timer: libc::timer_t,
}

// SAFETY: a POSIX timer id is a process-wide kernel handle; deleting it from another
// thread (where the owner is dropped) is allowed.
unsafe impl Send for Watchdog {}

impl Watchdog {
    /// A disarmed watchdog aimed at the calling thread.
    pub(super) fn for_current_thread() -> Result<Watchdog, RtError> {
        signal::install_wake_handler()?;
        // SAFETY: a zeroed sigevent is valid; we fill notify, signal and target thread.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal::wake_signal();
        event.sigev_notify_thread_id = crate::sched::gettid();
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to the event and to storage for the timer id.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) } != 0 {
            return Err(RtError::last("create the receive watchdog timer"));
        }
        Ok(Watchdog { timer })
    }

    /// Expires once, `after_ns` from now.
    #[inline]
    pub(super) fn arm(&self, after_ns: i64) -> Result<(), Errno> {
        let spec = libc::itimerspec {
            it_interval: ns_to_timespec(0),
            it_value: ns_to_timespec(after_ns),
        };
        // SAFETY: our timer; a valid spec; the old value is not wanted.
        if unsafe { libc::timer_settime(self.timer, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // SAFETY: deleting the timer created in `for_current_thread`, once. A signal
        // already sent only runs the no-op handler.
        unsafe { libc::timer_delete(self.timer) };
    }
}
