//! The control block a measuring thread shares with its message or semaphore partner:
//! the plan it publishes, the words both sides read and write, and how a partner's
//! failure is recorded. Both the measuring side (`partner.rs`) and the programs a
//! partner runs (`programs.rs`) speak it; neither owns the other.

use std::sync::atomic::AtomicU64;

/// A schedule: instants `start + k·period` for k = 1, 2, … up to and including `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Instant 0 (not itself part of the schedule), CLOCK_MONOTONIC ns.
    pub start: i64,
    /// Spacing, ns (positive).
    pub period: i64,
    /// The last instant that may be scheduled.
    pub end: i64,
}

impl Plan {
    /// Instant `k`.
    #[inline(always)]
    pub fn due(&self, k: i64) -> i64 {
        self.start.saturating_add(k.saturating_mul(self.period))
    }

    /// The index of the latest instant at or before `t` (0 before the first one).
    #[inline(always)]
    pub fn index_at(&self, t: i64) -> i64 {
        t.saturating_sub(self.start).div_euclid(self.period).max(0)
    }
}

// Control words. Cycle identifiers in the holder's handshake are instants of the
// plan (they only grow, across plans too).
pub(in crate::ipc) const QUIT: usize = 0;
pub(in crate::ipc) const GO: usize = 1;
pub(in crate::ipc) const START: usize = 2;
pub(in crate::ipc) const PERIOD: usize = 3;
pub(in crate::ipc) const END: usize = 4;
pub(in crate::ipc) const IDLE_POLL: usize = 5;
pub(in crate::ipc) const FAILURE: usize = 6;
pub(in crate::ipc) const WAITING: usize = 7;
pub(in crate::ipc) const RELEASED: usize = 8;
pub(in crate::ipc) const STAMP: usize = 9;
pub(in crate::ipc) const ACQUIRED: usize = 10;
const SLOTS: usize = 11;

/// What a partner was doing when it failed (stored with the errno).
#[derive(Clone, Copy)]
#[repr(u64)]
pub(in crate::ipc) enum Stage {
    Sleep = 3,
    Send = 4,
    Acquire = 5,
    Release = 6,
}

pub(in crate::ipc) fn stage_name(code: u64) -> &'static str {
    match code {
        3 => "sleep until its next instant (clock_nanosleep)",
        4 => "send a message",
        5 => "acquire the semaphore",
        6 => "release the semaphore",
        _ => "run",
    }
}

/// Exit code of a program that failed (the details are in the control block).
pub(in crate::ipc) const FAILED: i32 = 70;

/// The words the measuring thread and its partner share.
#[derive(Debug, Default)]
pub(in crate::ipc) struct Control {
    words: [AtomicU64; SLOTS],
}

impl Control {
    /// Word `slot`.
    #[inline(always)]
    pub(in crate::ipc) fn get(&self, slot: usize) -> &AtomicU64 {
        &self.words[slot]
    }
}
