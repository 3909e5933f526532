//! The preemption probe's low-priority spinner: while a window is open it stamps
//! `CLOCK_MONOTONIC` into one shared slot, as fast as it can.

use super::futex::{self, Waited};
use crate::clock::Clock;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

/// Longest the spinner spins in one window if nobody closes it: a measuring task that
/// stopped waking must not leave a real-time spinner holding the CPU.
const MAX_SPIN_NS: i64 = 100_000_000;
/// Longest wait for a window before looking at the stop request again.
const WAIT_NS: i64 = 100_000_000;

/// State shared by the measuring task and its spinner (member 0).
#[derive(Debug, Default)]
pub struct Spinner {
    stop: AtomicU32,
    /// Window number, incremented to open a window (the futex word the spinner waits on).
    window: AtomicU32,
    /// The open window's number; 0 when closed.
    open: AtomicU32,
    /// The spinner's last stamp, ns on `CLOCK_MONOTONIC`.
    last_ns: AtomicI64,
}

impl Spinner {
    /// Opens a window and wakes the spinner, which spins once the caller sleeps (it runs
    /// at a lower priority on the same CPU). Returns the instant the window opened: any
    /// stamp at or after it was taken in this window.
    pub fn open_window(&self) -> i64 {
        let opened = Clock::Monotonic.now_ns();
        let next = self.window.load(Ordering::Relaxed).wrapping_add(1).max(1);
        self.open.store(next, Ordering::Relaxed);
        self.window.store(next, Ordering::Release);
        futex::wake(&self.window, 1);
        opened
    }

    /// The spinner's last stamp.
    #[inline(always)]
    pub fn last_stamp(&self) -> i64 {
        self.last_ns.load(Ordering::Acquire)
    }

    /// Ends the spinning of the current window (the spinner sees it when it next runs).
    #[inline(always)]
    pub fn close_window(&self) {
        self.open.store(0, Ordering::Relaxed);
    }

    /// Asks the spinner to end.
    pub fn stop(&self) {
        self.close_window();
        self.stop.store(1, Ordering::Release);
        self.window.fetch_add(1, Ordering::Release);
        futex::wake(&self.window, i32::MAX);
    }
}

impl super::sealed::Sealed for Spinner {}

impl super::PartnerBody for Spinner {
    fn run(&self, _index: usize) {
        // Windows are numbered from 1: one opened before this task first ran still counts.
        let mut seen = 0;
        while self.stop.load(Ordering::Acquire) == 0 {
            if let Waited::TimedOut | Waited::Interrupted = futex::wait(&self.window, seen, WAIT_NS)
            {
                continue;
            }
            let window = self.window.load(Ordering::Acquire);
            if window == seen {
                continue;
            }
            seen = window;
            let started = Clock::Monotonic.now_ns();
            loop {
                let now = Clock::Monotonic.now_ns();
                self.last_ns.store(now, Ordering::Release);
                if self.open.load(Ordering::Relaxed) != window || now - started > MAX_SPIN_NS {
                    break;
                }
            }
        }
    }

    fn stop(&self) {
        Spinner::stop(self);
    }
}
