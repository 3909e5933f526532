//! The partner task: the other end of a message channel or semaphore, as a thread of
//! latlab or as a forked process, pinned and at its own policy.
//!
//! The measuring thread and its partner share a block of control words
//! ([`SharedCounters`], `MAP_SHARED`, so a forked child sees it too). The measuring
//! side publishes a [`Plan`] (a schedule of instants); the partner follows it, then
//! idles until the next plan or the quit word. Two programs exist:
//!
//! * the **sender** (for `msg`): at each instant of the plan (absolute
//!   `clock_nanosleep`), stamp CLOCK_MONOTONIC and send the stamp;
//! * the **holder** (for `sem`): hold the semaphore; at each instant wait until the
//!   measuring thread has announced that it is about to wait for that instant and is
//!   seen asleep (its `/proc` state, [`SleepWatch`]), stamp, release, wait until it has
//!   acquired, take the semaphore back.
//!
//! A forked partner runs only the set-up in this module, the programs in `programs.rs`
//! and the IPC operations they call: raw system calls, clock reads, atomics; no
//! allocation, no lock but the one measured, no unwinding (it never returns: it ends
//! with `_exit`). Its failures are written to the control block as a stage and an
//! `errno`, and read back by the measuring side.

use super::programs::{fail, holder_program, sender_program};
use super::{Channel, Errno, Semaphore, SleepWatch};
use crate::sched::Policy;
use crate::shared::SharedCounters;
use crate::{affinity, sched, RtError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether the partner is a thread or a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// A thread of latlab: shares the address space (no page-table switch).
    Thread,
    /// A process forked from latlab: its own address space.
    Process,
}

impl Task {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Task::Thread => "thread",
            Task::Process => "process",
        }
    }

    /// The task called `name`.
    pub fn from_name(name: &str) -> Option<Task> {
        [Task::Thread, Task::Process]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// Where and how a partner runs.
#[derive(Debug, Clone, Copy)]
pub struct PartnerSpec {
    /// Thread or process.
    pub task: Task,
    /// The CPU it is pinned to (`None`: left where it starts).
    pub cpu: Option<usize>,
    /// Its policy (`None`: the creating thread's). When the kernel refuses it for lack
    /// of privilege, the partner keeps the creating thread's policy, which was then
    /// refused (and reported) for the measuring thread as well.
    pub policy: Option<Policy>,
    /// How often an idle partner looks for a new plan.
    pub idle_poll_ns: i64,
}

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
pub(super) const QUIT: usize = 0;
pub(super) const GO: usize = 1;
pub(super) const START: usize = 2;
pub(super) const PERIOD: usize = 3;
pub(super) const END: usize = 4;
pub(super) const IDLE_POLL: usize = 5;
pub(super) const FAILURE: usize = 6;
pub(super) const WAITING: usize = 7;
pub(super) const RELEASED: usize = 8;
pub(super) const STAMP: usize = 9;
pub(super) const ACQUIRED: usize = 10;
const SLOTS: usize = 11;

/// What a partner was doing when it failed (stored with the errno).
#[derive(Clone, Copy)]
#[repr(u64)]
pub(super) enum Stage {
    Pin = 1,
    Policy = 2,
    Sleep = 3,
    Send = 4,
    Acquire = 5,
    Release = 6,
}

fn stage_name(code: u64) -> &'static str {
    match code {
        1 => "pin itself to its CPU",
        2 => "set its scheduling policy",
        3 => "sleep until its next instant (clock_nanosleep)",
        4 => "send a message",
        5 => "acquire the semaphore",
        6 => "release the semaphore",
        _ => "run",
    }
}

/// Exit code of a partner that failed (the details are in the control block).
pub(super) const FAILED: i32 = 70;

enum Running {
    Thread(JoinHandle<i32>),
    Process(libc::pid_t),
}

/// A running partner. Dropping it stops it and joins or reaps it.
pub struct Partner {
    control: Arc<SharedCounters>,
    task: Task,
    running: Option<Running>,
    /// How it ended: `None` while running, then its exit code (or 128 + signal).
    ended: Option<i32>,
}

impl std::fmt::Debug for Partner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partner")
            .field("task", &self.task)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Partner {
    /// Starts a sender on `channel`.
    pub fn sender(spec: &PartnerSpec, channel: Arc<Channel>) -> Result<Partner, RtError> {
        Partner::spawn(spec, sender_program, channel)
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
    ) -> Result<Partner, RtError> {
        Partner::spawn(spec, holder_program, (semaphore, watch))
    }

    fn spawn<A: Send + 'static>(
        spec: &PartnerSpec,
        program: fn(&SharedCounters, &A) -> i32,
        args: A,
    ) -> Result<Partner, RtError> {
        let control = Arc::new(SharedCounters::new(SLOTS)?);
        control
            .get(IDLE_POLL)
            .store(spec.idle_poll_ns.max(1) as u64, Ordering::Relaxed);
        let running = match spec.task {
            Task::Thread => {
                let (control, spec) = (control.clone(), *spec);
                let handle = std::thread::Builder::new()
                    .name("latlab-partner".to_string())
                    .stack_size(256 * 1024)
                    .spawn(move || match enter(&spec, &control) {
                        Ok(()) => program(&control, &args),
                        Err(code) => code,
                    })
                    .map_err(|e| RtError::new("start the partner thread", e))?;
                Running::Thread(handle)
            }
            Task::Process => {
                // SAFETY: getpid has no preconditions.
                let parent = unsafe { libc::getpid() };
                // SAFETY: the child runs only `child`, which never returns and executes
                // nothing but async-signal-safe work (see the module documentation):
                // the locks other threads may hold at the fork are never touched.
                match unsafe { libc::fork() } {
                    -1 => return Err(RtError::last("fork the partner process")),
                    0 => child(spec, &control, program, &args, parent),
                    pid => Running::Process(pid),
                }
            }
        };
        Ok(Partner {
            control,
            task: spec.task,
            running: Some(running),
            ended: None,
        })
    }

    #[inline(always)]
    fn word(&self, slot: usize) -> i64 {
        self.control.get(slot).load(Ordering::Acquire) as i64
    }

    #[inline(always)]
    fn set(&self, slot: usize, value: i64) {
        self.control
            .get(slot)
            .store(value as u64, Ordering::Release);
    }

    /// Publishes a plan for the partner to follow (replacing any unfinished one).
    pub fn follow(&self, plan: Plan) {
        self.set(START, plan.start);
        self.set(PERIOD, plan.period.max(1));
        self.set(END, plan.end);
        self.control.get(GO).fetch_add(1, Ordering::AcqRel);
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
        let finished = match &self.running {
            Some(Running::Thread(h)) => h.is_finished(),
            Some(Running::Process(pid)) => {
                let pid = *pid;
                let mut status = 0;
                // SAFETY: non-blocking waitpid on our own child, valid status pointer.
                let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if rc == pid {
                    self.running = None;
                    self.ended = Some(exit_code(status));
                }
                rc == pid
            }
            None => true,
        };
        if finished {
            self.reap();
            return Err(self.why_ended());
        }
        Ok(())
    }

    /// Tells the partner to quit, waits for it (a process that does not end within
    /// two seconds is killed, by its pid) and says whether it had failed.
    pub fn stop(&mut self) -> Result<(), RtError> {
        self.set(QUIT, 1);
        self.reap();
        match self.ended {
            Some(0) | None => Ok(()),
            Some(_) => Err(self.why_ended()),
        }
    }

    fn reap(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        self.ended = Some(match running {
            Running::Thread(h) => h.join().unwrap_or(FAILED),
            Running::Process(pid) => reap_process(pid),
        });
    }

    fn why_ended(&self) -> RtError {
        let failure = self.word(FAILURE) as u64;
        let who = format!("the partner {}", self.task.name());
        match self.ended {
            Some(_) if failure != 0 => Errno((failure & 0xffff_ffff) as i32)
                .context(format!("{who} failed to {}", stage_name(failure >> 32))),
            Some(code) if code > 128 => RtError::new(
                format!("{who} was killed by signal {}", code - 128),
                std::io::Error::from_raw_os_error(libc::ECHILD),
            ),
            code => RtError::new(
                format!(
                    "{who} ended before it was told to (exit code {})",
                    code.unwrap_or(FAILED)
                ),
                std::io::Error::from_raw_os_error(libc::ECHILD),
            ),
        }
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        FAILED
    }
}

/// Waits for our child `pid` to end, killing it (by pid) after two seconds.
fn reap_process(pid: libc::pid_t) -> i32 {
    let begun = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            return exit_code(status);
        }
        if rc < 0 && Errno::last() != Errno(libc::EINTR) {
            return FAILED; // not ours any more (already reaped elsewhere)
        }
        if begun.elapsed() > Duration::from_secs(2) {
            // SAFETY: SIGKILL to our own child, which has not been reaped, so the pid
            // cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            loop {
                // SAFETY: as above, blocking.
                let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
                if rc == pid || Errno::last() != Errno(libc::EINTR) {
                    return exit_code(status);
                }
            }
        }
        crate::wake::nap(Duration::from_millis(1));
    }
}

/// The forked child: set itself up and run the program. Never returns.
fn child<A>(
    spec: &PartnerSpec,
    control: &SharedCounters,
    program: fn(&SharedCounters, &A) -> i32,
    args: &A,
    parent: libc::pid_t,
) -> ! {
    // SAFETY: only async-signal-safe calls with plain arguments: the child dies with
    // the thread that forked it, ignores terminal and group signals (latlab, which
    // receives them too, stops it), and locks the pages it touches as latlab does.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::mlockall(
            libc::MCL_CURRENT | libc::MCL_FUTURE | 4, /* MCL_ONFAULT */
        );
    }
    let code = match enter(spec, control) {
        Ok(()) => program(control, args),
        Err(code) => code,
    };
    // SAFETY: _exit ends the child without running the parent's exit handlers.
    unsafe { libc::_exit(code) }
}

/// Pins the partner and sets its policy (a refusal for lack of privilege is not a
/// failure: see [`PartnerSpec::policy`]).
fn enter(spec: &PartnerSpec, control: &SharedCounters) -> Result<(), i32> {
    if let Some(cpu) = spec.cpu {
        affinity::try_pin_current_thread(cpu).map_err(|e| fail(control, Stage::Pin, Errno(e)))?;
    }
    if let Some(policy) = spec.policy {
        match sched::try_set_current_thread(policy) {
            Ok(()) | Err(libc::EPERM) => {}
            Err(e) => return Err(fail(control, Stage::Policy, Errno(e))),
        }
    }
    Ok(())
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
