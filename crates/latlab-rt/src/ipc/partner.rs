//! The partner at the other end of a message channel or semaphore: a
//! [`crate::partner`] task (a thread of latlab or a forked process) that follows a
//! plan.
//!
//! The measuring thread and its partner share a block of control words (in the
//! partner's [`SharedRegion`], so a forked child sees it too). The measuring side
//! publishes a [`Plan`] (a schedule of instants); the partner follows it, then idles
//! until the next plan or the quit word. Two programs exist:
//!
//! * the **sender** (for `msg`): at each instant of the plan (absolute
//!   `clock_nanosleep`), stamp CLOCK_MONOTONIC and send the stamp;
//! * the **holder** (for `sem`): hold the semaphore; at each instant wait until the
//!   measuring thread has announced that it is about to wait for that instant and is
//!   seen asleep (its `/proc` state, [`SleepWatch`]), stamp, release, wait until it has
//!   acquired, take the semaphore back.
//!
//! A forked partner runs only the programs in `programs.rs` and the IPC operations
//! they call: raw system calls, clock reads, atomics; no allocation, no lock but the
//! one measured. Its failures are written to the control block as a stage and an
//! `errno`, and read back by the measuring side.

use super::control::{
    stage_name, Control, Plan, ACQUIRED, END, FAILURE, GO, IDLE_POLL, PERIOD, QUIT, RELEASED,
    STAMP, START, WAITING,
};
use super::programs::{holder_program, sender_program};
use super::{Channel, Errno, Semaphore, SleepWatch};
use crate::partner::{
    self, sealed, Ended, Partner, PartnerBody, PartnerPlace, SharedRegion, TaskKind,
};
use crate::RtError;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where and how a partner runs.
#[derive(Debug, Clone, Copy)]
pub struct PartnerSpec {
    /// Thread or process.
    pub task: TaskKind,
    /// Its CPU and policy.
    pub place: PartnerPlace,
    /// How often an idle partner looks for a new plan.
    pub idle_poll_ns: i64,
}

/// What a partner runs against the object it measures.
enum Program {
    Sender(Arc<Channel>),
    Holder(Arc<Semaphore>, Option<Arc<SleepWatch>>),
}

/// A partner's body: the control words and its program. The objects the program
/// works on are shared through the kernel (descriptors, SysV ids) or their own shared
/// mappings, so a forked child's copies of the handles reach the same objects.
pub struct PlanFollower {
    control: Control,
    program: Program,
}

impl sealed::Sealed for PlanFollower {}

impl PartnerBody for PlanFollower {
    fn run(&self, _index: usize) {
        // A failure is in the control block for the measuring side.
        let _ = match &self.program {
            Program::Sender(channel) => sender_program(&self.control, channel),
            Program::Holder(semaphore, watch) => {
                holder_program(&self.control, semaphore, watch.as_deref())
            }
        };
    }

    fn stop(&self) {
        self.control.get(QUIT).store(1, Ordering::Release);
    }
}

/// A running partner following plans; dropping it stops it and joins or reaps it.
#[derive(Debug)]
pub struct PlannedPartner {
    body: Arc<SharedRegion<PlanFollower>>,
    task: TaskKind,
    partner: Partner,
}

impl std::fmt::Debug for PlanFollower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanFollower").finish_non_exhaustive()
    }
}

impl PlannedPartner {
    /// Starts a sender on `channel`.
    pub fn sender(spec: &PartnerSpec, channel: Arc<Channel>) -> Result<PlannedPartner, RtError> {
        PlannedPartner::spawn(spec, Program::Sender(channel))
    }

    /// Starts a holder of `semaphore`. With `watch` (see
    /// [`SleepWatch::current_thread`]) it releases only once the watched thread is seen
    /// asleep; without, as soon as that thread has announced its wait — enough when
    /// the holder can run only once the waiter has blocked (one CPU, the waiter at a
    /// higher real-time priority).
    pub fn holder(
        spec: &PartnerSpec,
        semaphore: Arc<Semaphore>,
        watch: Option<Arc<SleepWatch>>,
    ) -> Result<PlannedPartner, RtError> {
        PlannedPartner::spawn(spec, Program::Holder(semaphore, watch))
    }

    fn spawn(spec: &PartnerSpec, program: Program) -> Result<PlannedPartner, RtError> {
        let body = Arc::new(SharedRegion::new(PlanFollower {
            control: Control::default(),
            program,
        })?);
        body.control
            .get(IDLE_POLL)
            .store(spec.idle_poll_ns.max(1) as u64, Ordering::Relaxed);
        let partner = partner::spawn(spec.task, &body, 0, spec.place)?;
        Ok(PlannedPartner {
            body,
            task: spec.task,
            partner,
        })
    }

    #[inline(always)]
    fn word(&self, slot: usize) -> i64 {
        self.body.control.get(slot).load(Ordering::Acquire) as i64
    }

    #[inline(always)]
    fn set(&self, slot: usize, value: i64) {
        self.body
            .control
            .get(slot)
            .store(value as u64, Ordering::Release);
    }

    /// Publishes a plan for the partner to follow (replacing any unfinished one).
    pub fn follow(&self, plan: Plan) {
        self.set(START, plan.start);
        self.set(PERIOD, plan.period.max(1));
        self.set(END, plan.end);
        self.body.control.get(GO).fetch_add(1, Ordering::AcqRel);
    }

    /// Holder handshake: the measuring thread is about to wait for instant `due`.
    #[inline(always)]
    pub fn announce_waiting(&self, due: i64) {
        self.set(WAITING, due);
    }

    /// Holder handshake: the instant the holder last released for, and its stamp
    /// taken just before releasing.
    #[inline(always)]
    pub fn released(&self) -> (i64, i64) {
        let due = self.word(RELEASED);
        (due, self.word(STAMP))
    }

    /// Holder handshake: the measuring thread acquired for instant `due`.
    #[inline(always)]
    pub fn announce_acquired(&self, due: i64) {
        self.set(ACQUIRED, due);
    }

    /// `Err` when the partner has ended (it only ends when told to): why it did.
    pub fn check(&mut self) -> Result<(), RtError> {
        match self.partner.ended() {
            Some(ended) => Err(self.why_ended(ended)),
            None => Ok(()),
        }
    }

    /// Tells the partner to quit, waits for it (a process that does not end within
    /// [`partner::PROCESS_GRACE`] is killed, by its pid) and says whether it had
    /// failed.
    pub fn stop(&mut self) -> Result<(), RtError> {
        match self.partner.end() {
            Ended::Exited(0) if self.word(FAILURE) == 0 => Ok(()),
            ended => Err(self.why_ended(ended)),
        }
    }

    fn why_ended(&self, ended: Ended) -> RtError {
        let failure = self.word(FAILURE) as u64;
        let who = format!("the partner {}", self.task.name());
        let gone = || std::io::Error::from_raw_os_error(libc::ECHILD);
        match ended {
            _ if failure != 0 => Errno((failure & 0xffff_ffff) as i32)
                .context(format!("{who} failed to {}", stage_name(failure >> 32))),
            Ended::Killed(signal) => {
                RtError::new(format!("{who} was killed by signal {signal}"), gone())
            }
            Ended::Exited(code) => RtError::new(
                format!("{who} ended before it was told to (exit code {code})"),
                gone(),
            ),
            Ended::Panicked => RtError::new(format!("{who} panicked"), gone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_index_their_instants() {
        let plan = Plan {
            start: 1_000,
            period: 100,
            end: 1_500,
        };
        assert_eq!(plan.due(1), 1_100);
        assert_eq!(plan.index_at(999), 0);
        assert_eq!(plan.index_at(1_100), 1);
        assert_eq!(plan.index_at(1_199), 1);
        assert_eq!(plan.index_at(1_200), 2);
    }
}
