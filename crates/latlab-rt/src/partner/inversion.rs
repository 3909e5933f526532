//! The priority-inversion probe's partners around one pthread mutex: the holder L
//! (member 0) and the medium-priority spinner M (member 1), threads or forked
//! processes. The mutex lives inline in the shared state; for processes it is
//! `PTHREAD_PROCESS_SHARED`, so the state must be in a [`SharedRegion`].
//!
//! Cycles are numbered from 1; the measuring task H announces a cycle to L, waits until
//! L holds the mutex, wakes M and locks the mutex itself.

use super::futex;
use super::SharedRegion;
use crate::clock::{self, Clock};
use crate::pthread::{self, Protocol};
use crate::RtError;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Longest a partner blocks (on its futex word or the mutex) before it looks at the
/// stop request again.
const WAIT_NS: i64 = 100_000_000;

/// State shared by H, L and M.
pub struct Inversion {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    /// Whether `mutex` was initialised (and is to be destroyed).
    ready: AtomicBool,
    stop: AtomicU32,
    /// The cycle L is to take the mutex in (L's futex word).
    low_go: AtomicU32,
    /// The cycle in which L holds the mutex (H's futex word).
    low_holds: AtomicU32,
    /// The cycle M is to spin in (M's futex word).
    medium_go: AtomicU32,
    /// The cycle whose spinning M is to end.
    medium_stop: AtomicU32,
    /// CPU time L works while holding the mutex, ns.
    hold_ns: i64,
    /// Longest M spins when nobody stops it, ns.
    hog_ns: i64,
}

impl std::fmt::Debug for Inversion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inversion")
            .field("hold_ns", &self.hold_ns)
            .field("hog_ns", &self.hog_ns)
            .finish_non_exhaustive()
    }
}

// SAFETY: the mutex is made for concurrent use by several threads (and, process-shared,
// by several processes) and is only touched through the pthread functions at an
// address that never moves (the state sits in its shared mapping); everything else is
// atomics or constants.
unsafe impl Sync for Inversion {}
// SAFETY: as above.
unsafe impl Send for Inversion {}

impl Inversion {
    /// The shared state with a mutex of `protocol`, process-shared when
    /// `between_processes`; L works `hold_ns` of its own CPU time per cycle, M spins
    /// `hog_ns` at most.
    pub fn create(
        protocol: Protocol,
        between_processes: bool,
        hold_ns: i64,
        hog_ns: i64,
    ) -> Result<SharedRegion<Inversion>, RtError> {
        let region = SharedRegion::new(Inversion {
            // SAFETY: all-zero bytes are a valid (not yet initialised) pthread_mutex_t.
            mutex: UnsafeCell::new(unsafe { std::mem::zeroed() }),
            ready: AtomicBool::new(false),
            stop: AtomicU32::new(0),
            low_go: AtomicU32::new(0),
            low_holds: AtomicU32::new(0),
            medium_go: AtomicU32::new(0),
            medium_stop: AtomicU32::new(0),
            hold_ns,
            hog_ns,
        })?;
        // SAFETY: the mutex is initialised once, in place in the mapping, where it stays
        // until the region is dropped; no other task sees it yet.
        unsafe { pthread::init_mutex(region.mutex.get(), protocol, between_processes)? };
        region.ready.store(true, Ordering::Release);
        Ok(region)
    }

    /// H: tells L to take the mutex in `cycle`.
    pub fn start_low(&self, cycle: u32) {
        self.low_go.store(cycle, Ordering::Release);
        futex::wake(&self.low_go, 1);
    }

    /// H: waits until L holds the mutex in `cycle`, for `timeout_ns` at most; false
    /// when it did not take it in time.
    pub fn wait_low_holds(&self, cycle: u32, timeout_ns: i64) -> bool {
        let until = Clock::Monotonic.now_ns() + timeout_ns;
        loop {
            let holds = self.low_holds.load(Ordering::Acquire);
            if holds == cycle {
                return true;
            }
            let left = until - Clock::Monotonic.now_ns();
            if left <= 0 {
                return false;
            }
            let _ = futex::wait(&self.low_holds, holds, left);
        }
    }

    /// H: wakes M to spin in `cycle`.
    pub fn start_medium(&self, cycle: u32) {
        self.medium_go.store(cycle, Ordering::Release);
        futex::wake(&self.medium_go, 1);
    }

    /// H: ends M's spinning in `cycle` (M sees it when it next runs).
    pub fn stop_medium(&self, cycle: u32) {
        self.medium_stop.store(cycle, Ordering::Release);
    }

    /// Locks the mutex, waiting until `deadline_ns` on `CLOCK_MONOTONIC` at the latest;
    /// false when the deadline passed first.
    #[inline(always)]
    pub fn lock_until(&self, deadline_ns: i64) -> Result<bool, RtError> {
        // SAFETY: initialised in `create`, never moved while the region lives.
        unsafe { pthread::lock_mutex_until(self.mutex.get(), deadline_ns) }
    }

    /// Unlocks the mutex the caller locked.
    #[inline(always)]
    pub fn unlock(&self) {
        // SAFETY: an initialised mutex, unlocked by the task that locked it.
        unsafe { libc::pthread_mutex_unlock(self.mutex.get()) };
    }

    /// Asks L and M to end.
    pub fn stop(&self) {
        self.stop.store(1, Ordering::Release);
        for word in [&self.low_go, &self.medium_go] {
            word.fetch_add(1, Ordering::AcqRel);
            futex::wake(word, i32::MAX);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire) != 0
    }

    /// Waits until `word` differs from `seen` or a stop is requested; the new value.
    fn next_cycle(&self, word: &AtomicU32, seen: u32) -> Option<u32> {
        loop {
            if self.stopping() {
                return None;
            }
            let now = word.load(Ordering::Acquire);
            if now != seen {
                return Some(now);
            }
            let _ = futex::wait(word, seen, WAIT_NS);
        }
    }

    /// L: per cycle, lock, report holding, work `hold_ns` of CPU time, unlock.
    fn low(&self) {
        let mut seen = 0;
        while let Some(cycle) = self.next_cycle(&self.low_go, seen) {
            seen = cycle;
            // The raw call: an error must not allocate in a forked child.
            // SAFETY: initialised in `create`, never moved while the region lives.
            let rc = unsafe {
                pthread::clocklock(self.mutex.get(), Clock::Monotonic.now_ns() + WAIT_NS)
            };
            if rc != 0 {
                continue;
            }
            self.low_holds.store(cycle, Ordering::Release);
            futex::wake(&self.low_holds, 1);
            // Its own CPU time: the time M keeps it off the CPU does not shorten the work.
            let until = clock::thread_cpu_ns() + self.hold_ns;
            while clock::thread_cpu_ns() < until && !self.stopping() {
                std::hint::spin_loop();
            }
            self.unlock();
        }
    }

    /// M: per cycle, spin until told to stop or `hog_ns` passed.
    fn medium(&self) {
        let mut seen = 0;
        while let Some(cycle) = self.next_cycle(&self.medium_go, seen) {
            seen = cycle;
            let until = Clock::Monotonic.now_ns() + self.hog_ns;
            while self.medium_stop.load(Ordering::Acquire) != cycle
                && Clock::Monotonic.now_ns() < until
                && !self.stopping()
            {
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for Inversion {
    fn drop(&mut self) {
        if *self.ready.get_mut() {
            // SAFETY: initialised in `create` and destroyed once, here, after every
            // partner ended (the region is dropped with its last owner in the parent),
            // before its memory is unmapped.
            unsafe { libc::pthread_mutex_destroy(self.mutex.get()) };
        }
    }
}

impl super::sealed::Sealed for Inversion {}

impl super::PartnerBody for Inversion {
    /// Member 0 is the holder L, member 1 the spinner M.
    fn run(&self, index: usize) {
        match index {
            0 => self.low(),
            _ => self.medium(),
        }
    }

    fn stop(&self) {
        Inversion::stop(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partner::{spawn, PartnerPlace, TaskKind};
    use crate::{affinity, sched};
    use std::sync::Arc;

    #[test]
    fn a_holder_process_holds_the_shared_mutex_until_its_work_is_done() {
        let place = PartnerPlace {
            cpu: Some(affinity::allowed_cpus().unwrap()[0]),
            policy: Some(sched::current_thread().unwrap()),
        };
        for protocol in [Protocol::Inherit, Protocol::None] {
            // A hold long beside a preemption of this thread between the two checks.
            let state = Arc::new(Inversion::create(protocol, true, 300_000_000, 0).unwrap());
            let holder = spawn(TaskKind::Process, &state, 0, place).unwrap();
            state.start_low(1);
            assert!(
                state.wait_low_holds(1, 5_000_000_000),
                "{protocol:?}: L holds"
            );
            let now = Clock::Monotonic.now_ns();
            assert!(
                !state.lock_until(now + 1_000_000).unwrap(),
                "{protocol:?}: the child's hold keeps the parent out"
            );
            assert!(
                state.lock_until(now + 5_000_000_000).unwrap(),
                "{protocol:?}: the child unlocks after its work"
            );
            state.unlock();
            state.stop();
            drop(holder);
        }
    }
}
