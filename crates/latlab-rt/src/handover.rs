//! A single-slot hand-over between a measuring thread and a reader, without locks.
//!
//! A long run writes checkpoints from a non-real-time thread, but what it checkpoints
//! (histograms, counts) belongs to the measuring thread, which may neither lock nor
//! allocate. [`Handover`] holds one preallocated value and passes its ownership back
//! and forth through one atomic state: the reader [`ask`](Handover::ask)s, the
//! measuring thread sees the request with one relaxed load per sample
//! ([`asked`](Handover::asked)), copies its state into the slot
//! ([`fill`](Handover::fill)) and the reader [`take`](Handover::take)s it. Each side
//! touches the slot only while the state says it owns it (release/acquire), so the
//! copy is never read half-written and the measuring thread never waits.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

/// The reader owns the slot; nothing asked.
const IDLE: u8 = 0;
/// The writer owns the slot and is to fill it.
const ASKED: u8 = 1;
/// The reader owns the slot, filled.
const FILLED: u8 = 2;

/// One slot passed between a single writer (the measuring thread) and a single reader.
#[repr(align(128))] // its own cache lines: the writer reads the state every sample
pub struct Handover<T> {
    state: AtomicU8,
    slot: UnsafeCell<T>,
}

// SAFETY: the slot is only touched by the side the state gives it to (see the methods),
// and the state's release/acquire pairs order those accesses; `T: Send` because the
// value's ownership moves between threads.
unsafe impl<T: Send> Sync for Handover<T> {}

impl<T> Handover<T> {
    /// A hand-over holding `value` (allocated by the caller, before measuring).
    pub fn new(value: T) -> Handover<T> {
        Handover {
            state: AtomicU8::new(IDLE),
            slot: UnsafeCell::new(value),
        }
    }

    /// Reader: asks the writer for a fresh copy. Does nothing while one is asked for
    /// or waiting to be taken.
    pub fn ask(&self) {
        let _ = self
            .state
            .compare_exchange(IDLE, ASKED, Ordering::Release, Ordering::Relaxed);
    }

    /// Writer: whether a copy is asked for. One relaxed load, for the measuring loop.
    #[inline(always)]
    pub fn asked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ASKED
    }

    /// Writer: fills the slot with `fill` if a copy is asked for, and hands it to the
    /// reader. `fill` must not allocate or block when called from a measuring loop.
    #[inline]
    pub fn fill(&self, fill: impl FnOnce(&mut T)) {
        if self.state.load(Ordering::Acquire) != ASKED {
            return;
        }
        // SAFETY: in state ASKED only the (single) writer touches the slot; the
        // reader's release in `ask` happened before this acquire.
        fill(unsafe { &mut *self.slot.get() });
        self.state.store(FILLED, Ordering::Release);
    }

    /// Reader: reads the filled slot with `read` and frees it for the next request;
    /// `None` while the writer has not filled it.
    pub fn take<R>(&self, read: impl FnOnce(&T) -> R) -> Option<R> {
        if self.state.load(Ordering::Acquire) != FILLED {
            return None;
        }
        // SAFETY: in state FILLED only the (single) reader touches the slot; the
        // writer's release in `fill` happened before this acquire.
        let out = read(unsafe { &*self.slot.get() });
        self.state.store(IDLE, Ordering::Release);
        Some(out)
    }

    /// Reader: withdraws a request the writer has not answered (it stopped measuring),
    /// so the slot is the reader's again; true when it was withdrawn or was never
    /// asked, false when it is filled (to be taken).
    pub fn withdraw(&self) -> bool {
        match self
            .state
            .compare_exchange(ASKED, IDLE, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state == IDLE,
        }
    }
}

impl<T> std::fmt::Debug for Handover<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handover")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_copy_is_made_only_when_asked_and_taken_once() {
        let h = Handover::new(0u64);
        h.fill(|v| *v = 1);
        assert_eq!(h.take(|v| *v), None, "not asked: not filled");
        h.ask();
        assert!(h.asked());
        assert_eq!(h.take(|v| *v), None, "asked, not yet filled");
        h.fill(|v| *v = 2);
        assert!(!h.asked());
        assert_eq!(h.take(|v| *v), Some(2));
        assert_eq!(h.take(|v| *v), None);
        h.ask();
        assert!(h.withdraw());
        h.fill(|v| *v = 3);
        assert_eq!(h.take(|v| *v), None, "withdrawn");
    }

    #[test]
    fn a_reader_never_sees_a_half_written_copy() {
        // The writer keeps an array whose elements are all equal; every copy taken
        // must be too.
        let h = Arc::new(Handover::new([0u64; 64]));
        // The writer writes until the reader has taken enough copies (or for 10 s):
        // neither's thread may get the CPU for a while.
        let enough = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (h, enough) = (h.clone(), enough.clone());
            std::thread::spawn(move || {
                let began = std::time::Instant::now();
                let mut state = [0u64; 64];
                let mut i = 0u64;
                while !enough.load(std::sync::atomic::Ordering::Relaxed)
                    && began.elapsed() < std::time::Duration::from_secs(10)
                {
                    i += 1;
                    state.iter_mut().for_each(|v| *v = i);
                    if h.asked() {
                        h.fill(|slot| slot.copy_from_slice(&state));
                    }
                }
            })
        };
        let mut taken = 0;
        let mut last = 0;
        while !writer.is_finished() {
            h.ask();
            if let Some((first, all_equal)) = h.take(|s| (s[0], s.iter().all(|&v| v == s[0]))) {
                assert!(all_equal, "a torn copy");
                assert!(first >= last, "copies go forward");
                last = first;
                taken += 1;
                if taken == 1_000 {
                    enough.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
            std::hint::spin_loop();
        }
        writer.join().unwrap();
        assert!(taken >= 1_000, "{taken} copies taken");
    }
}
