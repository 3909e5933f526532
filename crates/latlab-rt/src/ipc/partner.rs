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
//! A forked partner runs only the code in this module and the IPC operations it calls:
//! raw system calls, clock reads, atomics; no allocation, no lock but the one measured,
//! no unwinding (it never returns: it ends with `_exit`). Its failures are written to
//! the control block as a stage and an `errno`, and read back by the measuring side.

use super::{nap_until, now, Acquired, Channel, Errno, Semaphore, MAX_WAIT_NS};
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
const QUIT: usize = 0;
const GO: usize = 1;
const START: usize = 2;
const PERIOD: usize = 3;
const END: usize = 4;
const IDLE_POLL: usize = 5;
const FAILURE: usize = 6;
const WAITING: usize = 7;
const RELEASED: usize = 8;
const STAMP: usize = 9;
const ACQUIRED: usize = 10;
const SLOTS: usize = 11;

/// What a partner was doing when it failed (stored with the errno).
#[derive(Clone, Copy)]
#[repr(u64)]
enum Stage {
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
const FAILED: i32 = 70;

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
        std::thread::sleep(Duration::from_millis(1));
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
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
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

/// Records a failure for the measuring side; returns the exit code.
fn fail(control: &SharedCounters, stage: Stage, e: Errno) -> i32 {
    let word = ((stage as u64) << 32) | (e.0 as u32 as u64);
    let _ = control
        .get(FAILURE)
        .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed);
    FAILED
}

#[inline(always)]
fn word(control: &SharedCounters, slot: usize) -> i64 {
    control.get(slot).load(Ordering::Acquire) as i64
}

#[inline(always)]
fn quitting(control: &SharedCounters) -> bool {
    word(control, QUIT) != 0
}

/// Idles until a new plan is published (`Some`) or the quit word is set (`None`).
fn next_plan(control: &SharedCounters, seen: &mut i64) -> Option<Plan> {
    let poll = word(control, IDLE_POLL).clamp(1, MAX_WAIT_NS);
    loop {
        if quitting(control) {
            return None;
        }
        let go = word(control, GO);
        if go != *seen {
            *seen = go;
            return Some(Plan {
                start: word(control, START),
                period: word(control, PERIOD).max(1),
                end: word(control, END),
            });
        }
        let _ = nap_until(now().saturating_add(poll));
    }
}

/// Sleeps until `deadline` in steps of at most [`MAX_WAIT_NS`]; `Ok(true)` when told
/// to quit meanwhile.
fn nap_or_quit(control: &SharedCounters, deadline: i64) -> Result<bool, Errno> {
    loop {
        if quitting(control) {
            return Ok(true);
        }
        let t = now();
        if t >= deadline {
            return Ok(false);
        }
        nap_until(deadline.min(t.saturating_add(MAX_WAIT_NS)))?;
    }
}

/// Spins until `ready()` holds (true), or for at most `limit_ns` or until told to quit
/// (false). After a short while it yields between looks, so a waited-for task of the
/// same priority (or any task, under a non-real-time policy) on the same CPU can run.
#[inline(always)]
fn spin_until(control: &SharedCounters, limit_ns: i64, ready: impl Fn() -> bool) -> bool {
    const SPIN_NS: i64 = 50_000;
    let begun = now();
    loop {
        if ready() {
            return true;
        }
        let waited = now().saturating_sub(begun);
        if quitting(control) || waited >= limit_ns {
            return false;
        }
        if waited < SPIN_NS {
            std::hint::spin_loop();
        } else {
            // SAFETY: sched_yield takes no arguments.
            unsafe { libc::sched_yield() };
        }
    }
}

/// The sender: one stamped message per instant of each plan.
fn sender_program(control: &SharedCounters, channel: &Arc<Channel>) -> i32 {
    let mut seen = 0;
    while let Some(plan) = next_plan(control, &mut seen) {
        let mut k = 1;
        while plan.due(k) <= plan.end {
            match nap_or_quit(control, plan.due(k)) {
                Ok(false) => {}
                Ok(true) => return 0,
                Err(e) => return fail(control, Stage::Sleep, e),
            }
            let stamp = now();
            match channel.send(stamp) {
                // A full channel: the receiver is far behind; it sees the gap.
                Ok(()) | Err(Errno(libc::EAGAIN)) => {}
                Err(e) => return fail(control, Stage::Send, e),
            }
            // After a late wake, go on with the next instant still ahead.
            k = (k + 1).max(plan.index_at(now()) + 1);
        }
    }
    0
}

/// The holder: see the module documentation.
fn holder_program(
    control: &SharedCounters,
    args: &(Arc<Semaphore>, Option<Arc<SleepWatch>>),
) -> i32 {
    let (semaphore, watch) = (&*args.0, args.1.as_deref());
    let mut seen = 0;
    while let Some(plan) = next_plan(control, &mut seen) {
        let mut holding = false;
        let outcome = hold_through(control, semaphore, watch, &plan, &mut holding);
        if holding {
            // Leave it available between plans.
            if let Err(e) = semaphore.release() {
                return fail(control, Stage::Release, e);
            }
        }
        match outcome {
            Ok(false) => {}
            Ok(true) => return 0,
            Err(code) => return code,
        }
    }
    0
}

/// Acquires, retrying after timeouts; `Ok(false)` when told to quit first.
fn acquire_or_quit(control: &SharedCounters, semaphore: &Semaphore) -> Result<bool, Errno> {
    loop {
        if quitting(control) {
            return Ok(false);
        }
        match semaphore.acquire(MAX_WAIT_NS)? {
            Acquired::Yes => return Ok(true),
            Acquired::TimedOut | Acquired::Interrupted => {}
        }
    }
}

/// One plan of the holder; `Ok(true)` when told to quit.
fn hold_through(
    control: &SharedCounters,
    semaphore: &Semaphore,
    watch: Option<&SleepWatch>,
    plan: &Plan,
    holding: &mut bool,
) -> Result<bool, i32> {
    let failed = |stage, e| fail(control, stage, e);
    match acquire_or_quit(control, semaphore) {
        Ok(true) => *holding = true,
        Ok(false) => return Ok(true),
        Err(e) => return Err(failed(Stage::Acquire, e)),
    }
    // The last instant released for: announcements are instants of this plan, all
    // later than its start (and than any instant of an earlier plan).
    let mut served = plan.start;
    loop {
        let next = plan.due(plan.index_at(served) + 1);
        if next > plan.end {
            return Ok(false);
        }
        match nap_or_quit(control, next) {
            Ok(false) => {}
            Ok(true) => return Ok(true),
            Err(e) => return Err(failed(Stage::Sleep, e)),
        }
        // The measuring thread announces each instant it is about to wait for; one we
        // are late for is still served.
        if !spin_until(control, MAX_WAIT_NS, || word(control, WAITING) > served) {
            if quitting(control) || now() > plan.end.saturating_add(MAX_WAIT_NS) {
                return Ok(quitting(control));
            }
            continue;
        }
        let cycle = word(control, WAITING);
        if word(control, ACQUIRED) >= cycle {
            served = cycle; // it got through without us: nothing to release
            continue;
        }
        // Release only once it is blocked in the acquire (Rhealstone: the waiting
        // task is already waiting).
        if let Some(watch) = watch {
            spin_until(control, MAX_WAIT_NS, || {
                watch.asleep() || word(control, ACQUIRED) >= cycle
            });
        }
        control.get(STAMP).store(now() as u64, Ordering::Release);
        control.get(RELEASED).store(cycle as u64, Ordering::Release);
        *holding = false;
        if let Err(e) = semaphore.release() {
            return Err(failed(Stage::Release, e));
        }
        served = cycle;
        // Take it back only after the measuring thread has had it: else a release
        // followed at once by an acquire could snatch it back first.
        spin_until(control, MAX_WAIT_NS, || word(control, ACQUIRED) >= cycle);
        match acquire_or_quit(control, semaphore) {
            Ok(true) => *holding = true,
            Ok(false) => return Ok(true),
            Err(e) => return Err(failed(Stage::Acquire, e)),
        }
    }
}

/// Reads whether one thread is asleep, from its `/proc/…/stat` (state `S` or `D`),
/// through a descriptor opened by that thread, so any task can read it, a forked
/// child included.
pub struct SleepWatch {
    fd: i32,
}

impl std::fmt::Debug for SleepWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SleepWatch").field("fd", &self.fd).finish()
    }
}

impl SleepWatch {
    /// Watches the calling thread.
    pub fn current_thread() -> Result<SleepWatch, RtError> {
        // SAFETY: opening a constant NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c"/proc/thread-self/stat".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(RtError::last(
                "open /proc/thread-self/stat (is /proc mounted?)",
            ));
        }
        Ok(SleepWatch { fd })
    }

    /// True while the thread sleeps. Async-signal-safe.
    #[inline]
    pub fn asleep(&self) -> bool {
        let mut buf = [0u8; 512];
        // SAFETY: reads at most 512 bytes into the buffer, from offset 0.
        let n = unsafe { libc::pread(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return false;
        }
        let text = &buf[..n as usize];
        // "pid (comm) S …": the state follows the last ')' (comm may hold one).
        match text.iter().rposition(|&b| b == b')') {
            Some(i) => matches!(text.get(i + 2), Some(b'S') | Some(b'D')),
            None => false,
        }
    }
}

impl Drop for SleepWatch {
    fn drop(&mut self) {
        super::close(self.fd);
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

    #[test]
    fn a_sleeping_thread_is_seen_asleep_and_a_running_one_is_not() {
        let watch = SleepWatch::current_thread().unwrap();
        assert!(!watch.asleep(), "the calling thread is running");
        let watch = Arc::new(watch);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let w = watch.clone();
        let seen = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if w.asleep() {
                    let _ = tx.send(());
                    return true;
                }
            }
            false
        });
        // Block here until the other thread has seen us asleep.
        let _ = rx.recv_timeout(Duration::from_secs(3));
        assert!(seen.join().unwrap());
    }
}
