//! The task-switch probe's rings: members of equal priority on one CPU hand the CPU
//! to each other, by `sched_yield` ([`YieldRing`]) or by a token through a pipe each
//! ([`PipeRing`]). A coordinator starts a burst of hand-overs and is told when it ends.

use super::futex::{self, Waited};
use crate::clock::Clock;
use crate::RtError;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

/// Most members of a ring.
pub const MAX_MEMBERS: usize = 8;
/// Most hand-overs in one burst.
pub const MAX_HOPS: usize = 1024;
/// A hand-over that gave no sample.
pub const NO_SAMPLE: i64 = i64::MIN;
/// Longest wait of a member for the next burst before it looks at the stop request.
const WAIT_NS: i64 = 100_000_000;
/// Set in [`YieldRing::stamp`]'s member word when the stamp did not follow a yield.
const FRESH: u32 = 1 << 31;

/// Burst bookkeeping shared by both rings.
#[derive(Debug)]
struct Burst {
    stop: AtomicU32,
    /// Burst number: the futex word members wait on.
    round: AtomicU32,
    /// Next hand-over index.
    hop: AtomicU32,
    /// Hand-overs in this burst.
    end: AtomicU32,
    /// The number of the last burst that ended: the futex word the coordinator waits on.
    done: AtomicU32,
}

impl Burst {
    fn new() -> Burst {
        Burst {
            stop: AtomicU32::new(0),
            round: AtomicU32::new(0),
            hop: AtomicU32::new(0),
            end: AtomicU32::new(0),
            done: AtomicU32::new(0),
        }
    }

    /// Arms a burst of `hand_overs` (capped at [`MAX_HOPS`]) and returns its number.
    fn arm(&self, hand_overs: usize) -> u32 {
        self.hop.store(0, Ordering::Relaxed);
        self.end
            .store(hand_overs.min(MAX_HOPS) as u32, Ordering::Relaxed);
        self.round.fetch_add(1, Ordering::AcqRel).wrapping_add(1)
    }

    /// The member that takes the last hand-over reports the burst's end.
    fn finish(&self) {
        self.done
            .store(self.round.load(Ordering::Acquire), Ordering::Release);
        futex::wake(&self.done, 1);
    }

    /// Waits until burst `round` ended, at most `timeout_ns`; false on timeout.
    fn wait_done(&self, round: u32, timeout_ns: i64) -> bool {
        let until = Clock::Monotonic.now_ns() + timeout_ns;
        loop {
            let done = self.done.load(Ordering::Acquire);
            if done == round {
                return true;
            }
            let left = until - Clock::Monotonic.now_ns();
            if left <= 0 {
                return false;
            }
            let _ = futex::wait(&self.done, done, left);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire) != 0
    }
}

/// Members stamp the clock, then `sched_yield`; the next member's stamp on return
/// minus the previous one's is one hand-over.
#[derive(Debug)]
pub struct YieldRing {
    burst: Burst,
    stamp_ns: [AtomicI64; MAX_HOPS],
    stamp_by: [AtomicU32; MAX_HOPS],
}

impl Default for YieldRing {
    fn default() -> Self {
        YieldRing {
            burst: Burst::new(),
            stamp_ns: std::array::from_fn(|_| AtomicI64::new(0)),
            stamp_by: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

impl YieldRing {
    /// Starts a burst of `hand_overs` stamps and wakes the members; returns its number.
    pub fn start(&self, hand_overs: usize) -> u32 {
        let round = self.burst.arm(hand_overs);
        futex::wake(&self.burst.round, i32::MAX);
        round
    }

    /// Waits for burst `round` to end, at most `timeout_ns`; false on timeout.
    pub fn wait_done(&self, round: u32, timeout_ns: i64) -> bool {
        self.burst.wait_done(round, timeout_ns)
    }

    /// Stamp `k` of the last burst: when, by which member, and whether it was taken on
    /// return from a yield (false for a member's first stamp of a burst, taken on return
    /// from waiting for it).
    pub fn stamp(&self, k: usize) -> (i64, u32, bool) {
        let by = self.stamp_by[k].load(Ordering::Relaxed);
        (
            self.stamp_ns[k].load(Ordering::Relaxed),
            by & !FRESH,
            by & FRESH == 0,
        )
    }

    /// Asks every member to end.
    pub fn stop(&self) {
        self.burst.stop.store(1, Ordering::Release);
        self.burst.round.fetch_add(1, Ordering::AcqRel);
        futex::wake(&self.burst.round, i32::MAX);
    }
}

impl super::sealed::Sealed for YieldRing {}

impl super::PartnerBody for YieldRing {
    fn run(&self, index: usize) {
        let b = &self.burst;
        // Bursts are numbered from 1: one started before this member first ran still counts.
        let mut seen = 0;
        while !b.stopping() {
            if let Waited::TimedOut | Waited::Interrupted = futex::wait(&b.round, seen, WAIT_NS) {
                continue;
            }
            let round = b.round.load(Ordering::Acquire);
            if round == seen || b.stopping() {
                continue;
            }
            seen = round;
            let mut fresh = FRESH;
            loop {
                let now = Clock::Monotonic.now_ns();
                let k = b.hop.fetch_add(1, Ordering::AcqRel);
                let end = b.end.load(Ordering::Relaxed);
                if k >= end {
                    if k == end {
                        b.finish();
                    }
                    break;
                }
                self.stamp_ns[k as usize].store(now, Ordering::Relaxed);
                self.stamp_by[k as usize].store(index as u32 | fresh, Ordering::Relaxed);
                fresh = 0;
                super::yield_now();
            }
        }
    }

    fn stop(&self) {
        YieldRing::stop(self);
    }
}

/// Token values that carry no stamp.
const START: i64 = -1;
const STOP: i64 = -2;

/// Member `i` reads tokens from pipe `i` and writes to pipe `i + 1` (mod the ring): it
/// stamps the clock, writes the stamp as the token and blocks reading its own pipe; the
/// reader's stamp after its read minus the token is one hand-over.
#[derive(Debug)]
pub struct PipeRing {
    burst: Burst,
    members: usize,
    read_fd: [i32; MAX_MEMBERS],
    write_fd: [i32; MAX_MEMBERS],
    sample_ns: [AtomicI64; MAX_HOPS],
}

impl PipeRing {
    /// A ring of `members` (2 … [`MAX_MEMBERS`]) pipes.
    pub fn new(members: usize) -> Result<PipeRing, RtError> {
        let mut ring = PipeRing {
            burst: Burst::new(),
            members: members.clamp(2, MAX_MEMBERS),
            read_fd: [-1; MAX_MEMBERS],
            write_fd: [-1; MAX_MEMBERS],
            sample_ns: std::array::from_fn(|_| AtomicI64::new(NO_SAMPLE)),
        };
        for i in 0..ring.members {
            let mut fds = [-1; 2];
            // SAFETY: pipe2 writes two descriptors into the valid two-element array.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(RtError::last(
                    "create a pipe (too many open files? raise ulimit -n)",
                ));
            }
            ring.read_fd[i] = fds[0];
            ring.write_fd[i] = fds[1];
        }
        Ok(ring)
    }

    /// Starts a burst of `hand_overs` by giving member 0 a token; returns its number.
    pub fn start(&self, hand_overs: usize) -> Result<u32, RtError> {
        let round = self.burst.arm(hand_overs);
        send(self.write_fd[0], START).map_err(|e| RtError::new("write to a partner's pipe", e))?;
        Ok(round)
    }

    /// Waits for burst `round` to end, at most `timeout_ns`; false on timeout.
    pub fn wait_done(&self, round: u32, timeout_ns: i64) -> bool {
        self.burst.wait_done(round, timeout_ns)
    }

    /// Hand-over `k` of the last burst, or [`NO_SAMPLE`] (the first one, from the
    /// coordinator's start token).
    pub fn sample(&self, k: usize) -> i64 {
        self.sample_ns[k].load(Ordering::Relaxed)
    }

    /// Asks every member to end (a stop token each).
    pub fn stop(&self) {
        self.burst.stop.store(1, Ordering::Release);
        for &fd in &self.write_fd[..self.members] {
            let _ = send(fd, STOP);
        }
    }
}

impl Drop for PipeRing {
    fn drop(&mut self) {
        for &fd in self
            .read_fd
            .iter()
            .chain(&self.write_fd)
            .filter(|&&fd| fd >= 0)
        {
            // SAFETY: closing descriptors this ring created and nothing else closes.
            unsafe { libc::close(fd) };
        }
    }
}

/// Writes one token (retrying on EINTR).
fn send(fd: i32, token: i64) -> std::io::Result<()> {
    loop {
        // SAFETY: write of 8 bytes from a valid i64 to a descriptor of the ring.
        let rc = unsafe { libc::write(fd, &token as *const i64 as *const libc::c_void, 8) };
        if rc == 8 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if rc >= 0 || err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// Reads one token (retrying on EINTR); `None` at end of file or on an error.
fn receive(fd: i32) -> Option<i64> {
    let mut token = 0i64;
    loop {
        // SAFETY: read of at most 8 bytes into a valid i64; pipe writes of 8 bytes are
        // atomic, so a token is never split.
        let rc = unsafe { libc::read(fd, &mut token as *mut i64 as *mut libc::c_void, 8) };
        if rc == 8 {
            return Some(token);
        }
        if rc != -1 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

impl super::sealed::Sealed for PipeRing {}

impl super::PartnerBody for PipeRing {
    fn run(&self, index: usize) {
        let b = &self.burst;
        let next = self.write_fd[(index + 1) % self.members];
        // A blocking read without a timeout: the coordinator's stop token (or, when
        // latlab is gone, the parent-death signal) ends it; a timeout would put a
        // second system call into every measured hand-over.
        while let Some(token) = receive(self.read_fd[index]) {
            let received = Clock::Monotonic.now_ns();
            if token == STOP || b.stopping() {
                return;
            }
            let k = b.hop.fetch_add(1, Ordering::AcqRel);
            let end = b.end.load(Ordering::Relaxed);
            if k < end {
                let sample = if token >= 0 {
                    received - token
                } else {
                    NO_SAMPLE
                };
                self.sample_ns[k as usize].store(sample, Ordering::Relaxed);
            }
            if k + 1 >= end {
                b.finish();
                continue;
            }
            if send(next, Clock::Monotonic.now_ns()).is_err() {
                return;
            }
        }
    }

    fn stop(&self) {
        PipeRing::stop(self);
    }
}
