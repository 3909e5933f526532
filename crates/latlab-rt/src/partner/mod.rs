//! Partner tasks: the tasks a measuring thread preempts, switches with, waits for or
//! hears from, each a thread of latlab or a forked process, pinned to a CPU at a
//! policy of its own. Every probe that needs one starts it here, and every partner is
//! held by a [`Partner`] guard that tells it to stop and joins or reaps it when
//! dropped — on success, on error and on unwinding.
//!
//! A forked child of a multi-threaded process may only do async-signal-safe work
//! (another thread may have held the allocator's lock at the fork), so what a child
//! runs is fixed in this crate: a [`PartnerBody`] is one of the sealed loops
//! ([`Spinner`], [`YieldRing`], [`PipeRing`], [`Inversion`], the message sender and
//! semaphore holder of [`crate::ipc`], the signal sender of [`crate::sigwait`]),
//! written with atomics, clock reads and raw system calls only. Their state lives in a
//! [`SharedRegion`] so parent and child see the same words. A child dies with the
//! thread that forked it (`PR_SET_PDEATHSIG`), so a latlab killed outright leaves none
//! behind. Thread-only partners run any closure ([`spawn_thread`]); a single-threaded
//! process may fork any work ([`fork_single_threaded`]).

pub mod futex;
mod inversion;
mod ring;
mod spinner;

pub use crate::shared::SharedRegion;
pub use inversion::Inversion;
pub use ring::{PipeRing, YieldRing, MAX_HOPS, MAX_MEMBERS, NO_SAMPLE};
pub use spinner::Spinner;

use crate::sched::{self, Policy};
use crate::{affinity, RtError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether a partner is a thread of latlab or a process of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// A thread in latlab's process (switches keep the address space).
    Thread,
    /// A forked process (switches change the address space).
    Process,
}

impl TaskKind {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Thread => "thread",
            TaskKind::Process => "process",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<TaskKind> {
        [TaskKind::Thread, TaskKind::Process]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A loop a partner runs, safe to run in a forked child: atomics, clock reads and raw
/// system calls only — no allocation, no lock but the one measured, no I/O through the
/// standard library.
pub trait PartnerBody: sealed::Sealed + Sync + Send + 'static {
    /// Runs member `index` until [`stop`](PartnerBody::stop) is called (or it fails,
    /// which the body records in its own state).
    fn run(&self, index: usize);

    /// Asks every member to end; each sees it within its longest wait.
    fn stop(&self);
}

/// Where a partner runs and at what policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartnerPlace {
    /// The CPU it is pinned to (`None`: wherever the creating thread may run).
    pub cpu: Option<usize>,
    /// Its policy (`None`: the creating thread's). When the kernel refuses it for lack
    /// of privilege, the partner keeps the creating thread's policy, which was then
    /// refused (and reported) for the measuring thread as well.
    pub policy: Option<Policy>,
}

/// How a partner ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It returned (a thread) or exited with this code (a process).
    Exited(i32),
    /// A signal ended the process (latlab's SIGKILL after the grace, or another).
    Killed(i32),
    /// The thread panicked.
    Panicked,
}

/// A running partner: told to stop, then joined (a thread) or reaped (a process) on
/// drop. A process that does not end within [`PROCESS_GRACE`] is killed by its pid.
pub struct Partner {
    task: Task,
    stop: Arc<dyn Fn() + Send + Sync>,
    ended: Option<Ended>,
}

impl std::fmt::Debug for Partner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partner")
            .field("task", &self.task)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum Task {
    Thread(Option<JoinHandle<()>>),
    Process(libc::pid_t),
}

/// How long a stopped partner process may take to end before it is killed.
pub const PROCESS_GRACE: Duration = Duration::from_secs(2);

impl Partner {
    /// The process id of a partner process (`None` for a thread).
    pub fn pid(&self) -> Option<i32> {
        match self.task {
            Task::Thread(_) => None,
            Task::Process(pid) => Some(pid),
        }
    }

    /// How it ended, once it has (a process is then reaped); `None` while it runs.
    pub fn ended(&mut self) -> Option<Ended> {
        if self.ended.is_none() {
            self.ended = match &mut self.task {
                Task::Thread(handle) => handle.take_if(|h| h.is_finished()).map(join),
                Task::Process(pid) => try_reap(*pid),
            };
        }
        self.ended
    }

    /// False once it has ended.
    pub fn alive(&mut self) -> bool {
        self.ended().is_none()
    }

    /// Tells it to stop and waits until it has ended (a process at most
    /// [`PROCESS_GRACE`], then it is killed); how it ended.
    pub fn end(&mut self) -> Ended {
        (self.stop)();
        if let Some(ended) = self.ended() {
            return ended;
        }
        let ended = match &mut self.task {
            Task::Thread(handle) => handle.take().map_or(Ended::Exited(0), join),
            Task::Process(pid) => reap_within(*pid, PROCESS_GRACE),
        };
        *self.ended.insert(ended)
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        self.end();
    }
}

fn join(handle: JoinHandle<()>) -> Ended {
    handle.join().map_or(Ended::Panicked, |()| Ended::Exited(0))
}

/// How a waited-for child ended, from its wait status.
fn ended_by(status: i32) -> Ended {
    if libc::WIFSIGNALED(status) {
        Ended::Killed(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    }
}

/// Reaps child `pid` if it has ended (one that is not ours any more counts as ended).
fn try_reap(pid: libc::pid_t) -> Option<Ended> {
    let mut status = 0;
    // SAFETY: waitpid on our own child, non-blocking, with a valid status pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc == pid {
        Some(ended_by(status))
    } else if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
        Some(Ended::Exited(0))
    } else {
        None
    }
}

/// Waits for child `pid` to end, killing it (by its pid) after `grace`.
fn reap_within(pid: libc::pid_t, grace: Duration) -> Ended {
    let begun = Instant::now();
    while begun.elapsed() < grace {
        if let Some(ended) = try_reap(pid) {
            return ended;
        }
        crate::wake::nap(Duration::from_millis(1));
    }
    // SAFETY: kill by the pid of our own unreaped child (it cannot have been recycled:
    // a child's pid stays taken until it is waited for).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_child(pid).map_or(Ended::Killed(libc::SIGKILL), ended_by)
}

/// Starts member `index` of `body` as a thread or a forked process at `place`; the
/// guard stops every member of `body` when dropped.
///
/// Call it from the measuring thread: the new task begins with that thread's policy,
/// and is moved to `place` before it can run its body (a thread places itself, a
/// process is placed by the parent right after the fork).
pub fn spawn<B: PartnerBody>(
    kind: TaskKind,
    body: &Arc<SharedRegion<B>>,
    index: usize,
    place: PartnerPlace,
) -> Result<Partner, RtError> {
    let stopper = body.clone();
    let stop = Arc::new(move || stopper.stop());
    match kind {
        TaskKind::Thread => {
            let body = body.clone();
            spawn_thread(place, move || body.run(index), stop)
        }
        TaskKind::Process => spawn_process(body, index, place, stop),
    }
}

/// Starts a partner thread at `place` running `work`, which `stop` tells to end;
/// returns once the thread runs at its policy (or with the kernel's reason why it
/// cannot).
pub fn spawn_thread(
    place: PartnerPlace,
    work: impl FnOnce() + Send + 'static,
    stop: Arc<dyn Fn() + Send + Sync>,
) -> Result<Partner, RtError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("latlab-partner".to_string())
        .stack_size(256 * 1024)
        .spawn(move || {
            let placed = place_current_thread(place);
            let ok = placed.is_ok();
            let _ = tx.send(placed);
            if ok {
                crate::memory::prefault_stack::<{ 32 * 1024 }>();
                work();
            }
        })
        .map_err(|e| RtError::new("start a partner thread", e))?;
    let placed = rx.recv().unwrap_or_else(|_| {
        Err(RtError::new(
            "start a partner thread",
            std::io::Error::other("it ended before it was placed"),
        ))
    });
    let partner = Partner {
        task: Task::Thread(Some(handle)),
        stop,
        ended: None,
    };
    placed.map(|()| partner)
}

fn place_current_thread(place: PartnerPlace) -> Result<(), RtError> {
    if let Some(cpu) = place.cpu {
        affinity::pin_current_thread(cpu)
            .map_err(|e| RtError::new(format!("pin a partner to CPU {cpu}"), e.source))?;
    }
    match place.policy.map(sched::set_current_thread) {
        Some(Err(e)) if !e.is_permission() => Err(e),
        _ => Ok(()),
    }
}

/// Pins process `pid` and sets its policy, from outside.
fn place_process(pid: libc::pid_t, place: PartnerPlace) -> Result<(), RtError> {
    if let Some(cpu) = place.cpu {
        affinity::pin_task(pid, cpu)
            .map_err(|e| RtError::new(format!("pin a partner to CPU {cpu}"), e.source))?;
    }
    match place.policy.map(|policy| sched::set_task(pid, policy)) {
        Some(Err(e)) if !e.is_permission() => Err(e),
        _ => Ok(()),
    }
}

fn spawn_process<B: PartnerBody>(
    body: &Arc<SharedRegion<B>>,
    index: usize,
    place: PartnerPlace,
    stop: Arc<dyn Fn() + Send + Sync>,
) -> Result<Partner, RtError> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let state: &B = body;
    // SAFETY: the child runs only async-signal-safe code — raw system calls (prctl,
    // getppid, signal, mlockall, those closing inherited trace files), the sealed
    // body's atomics, clock reads, futexes, pipes, sched_yield and the objects it
    // measures, and _exit — so no lock held by another thread at the fork can be
    // needed, and nothing is allocated. The body's state is in a MAP_SHARED mapping.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(RtError::last("fork a partner process"));
    }
    if pid == 0 {
        // SAFETY: in the child, async-signal-safe calls with plain arguments only. Die
        // with the thread that forked it, unless latlab already went; ignore terminal and
        // group signals (latlab receives them too, and stops the child); lock what the
        // child touches, on fault so none of the parent's pages is copied, as latlab
        // locks its own.
        unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_IGN);
            }
            libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT);
        }
        // Another thread's open trace file must not keep its instance from removal.
        crate::tracefs::close_inherited_trace_files();
        state.run(index);
        // SAFETY: _exit ends the child at once, without the parent's exit handlers.
        unsafe { libc::_exit(0) }
    }
    // From here the guard ends the child on every path, errors included.
    let partner = Partner {
        task: Task::Process(pid),
        stop,
        ended: None,
    };
    place_process(pid, place)?;
    Ok(partner)
}

/// Whether [`fork_single_threaded`] returned in the parent or the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// In the parent, with the child's pid.
    Parent(i32),
    /// In the child.
    Child,
}

/// Forks the calling process, which must have a single thread: checked, so this is
/// safe to call (a process with other threads is refused with EBUSY), and the child
/// may then run any code. It must leave with [`exit_child`].
pub fn fork_single_threaded() -> Result<Forked, RtError> {
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse::<u32>().ok())
        });
    if threads != Some(1) {
        return Err(RtError::new(
            "fork (the process has more than one thread)",
            std::io::Error::from_raw_os_error(libc::EBUSY),
        ));
    }
    // SAFETY: the process has exactly one thread, checked just above, so no lock can
    // be held by a thread that does not exist in the child.
    match unsafe { libc::fork() } {
        -1 => Err(RtError::last("fork")),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Ends a forked child at once, without running the parent's exit handlers twice.
pub fn exit_child(code: i32) -> ! {
    // SAFETY: _exit takes a status and never returns.
    unsafe { libc::_exit(code) }
}

/// Waits for a child (any status); returns its raw wait status.
pub fn wait_child(pid: i32) -> Result<i32, RtError> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(status);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(RtError::new("wait for a child", err));
        }
    }
}

/// Gives up the CPU to the next task of equal priority (`sched_yield`).
#[inline(always)]
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> PartnerPlace {
        PartnerPlace {
            cpu: Some(affinity::allowed_cpus().unwrap()[0]),
            policy: Some(sched::current_thread().unwrap()),
        }
    }

    #[test]
    fn rings_hand_over_and_stamp_in_order() {
        for kind in [TaskKind::Thread, TaskKind::Process] {
            let ring = Arc::new(SharedRegion::new(YieldRing::default()).unwrap());
            let members: Vec<Partner> = (0..2)
                .map(|i| spawn(kind, &ring, i, here()).unwrap())
                .collect();
            let round = ring.start(50);
            assert!(
                ring.wait_done(round, 5_000_000_000),
                "{kind:?}: the burst ended"
            );
            let stamps: Vec<_> = (0..50).map(|k| ring.stamp(k)).collect();
            assert!(
                stamps.windows(2).all(|w| w[0].0 <= w[1].0),
                "{kind:?}: stamps in order"
            );
            assert!(stamps.iter().all(|s| s.1 < 2), "{kind:?}: members 0 and 1");
            assert_eq!(
                stamps.iter().filter(|s| !s.2).count(),
                2,
                "one fresh stamp each"
            );
            ring.stop();
            drop(members);

            let ring = Arc::new(SharedRegion::new(PipeRing::new(3).unwrap()).unwrap());
            let members: Vec<Partner> = (0..3)
                .map(|i| spawn(kind, &ring, i, here()).unwrap())
                .collect();
            let round = ring.start(30).unwrap();
            assert!(
                ring.wait_done(round, 5_000_000_000),
                "{kind:?}: the burst ended"
            );
            assert_eq!(ring.sample(0), NO_SAMPLE, "the start token is no sample");
            assert!(
                (1..30).all(|k| ring.sample(k) >= 0),
                "{kind:?}: samples >= 0"
            );
            ring.stop();
            drop(members);
        }
    }

    #[test]
    fn a_shared_region_is_shared_with_a_child_process() {
        let spinner = Arc::new(SharedRegion::new(Spinner::default()).unwrap());
        let mut child = spawn(TaskKind::Process, &spinner, 0, here()).unwrap();
        let armed = spinner.open_window();
        let begun = Instant::now();
        while spinner.last_stamp() < armed && begun.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            spinner.last_stamp() >= armed,
            "the child's stamps reach the parent"
        );
        spinner.stop();
        let begun = Instant::now();
        while child.alive() && begun.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!child.alive(), "a stopped child ends and is reaped");
        assert_eq!(child.end(), Ended::Exited(0));
    }

    #[test]
    fn a_dropped_guard_ends_its_partner_without_being_told() {
        for kind in [TaskKind::Thread, TaskKind::Process] {
            let spinner = Arc::new(SharedRegion::new(Spinner::default()).unwrap());
            let mut partner = spawn(kind, &spinner, 0, here()).unwrap();
            let pid = partner.pid();
            assert!(partner.alive(), "{kind:?}");
            drop(partner); // as on an error path: nobody called stop
            if let Some(pid) = pid {
                // SAFETY: signal 0 only checks whether the pid exists.
                let gone = unsafe { libc::kill(pid, 0) } == -1;
                assert!(gone, "the reaped child's pid is free");
            }
        }
    }

    #[test]
    fn a_partner_that_cannot_be_placed_is_ended_and_says_where() {
        for kind in [TaskKind::Thread, TaskKind::Process] {
            let spinner = Arc::new(SharedRegion::new(Spinner::default()).unwrap());
            let nowhere = PartnerPlace {
                cpu: Some(libc::CPU_SETSIZE as usize - 1),
                ..here()
            };
            let err = spawn(kind, &spinner, 0, nowhere).unwrap_err().to_string();
            assert!(err.contains("pin a partner to CPU"), "{kind:?}: {err}");
        }
    }

    #[test]
    fn a_partner_forked_while_a_trace_file_is_open_does_not_hold_the_instance() {
        use crate::tracefs::TraceInstance;

        let mut instance = TraceInstance::create_tagged("forked").unwrap();
        let dir = instance.dir().to_path_buf();
        let reader = std::fs::File::open(instance.trace_pipe_raw(0).unwrap()).unwrap();
        let spinner = Arc::new(SharedRegion::new(Spinner::default()).unwrap());
        let anywhere = PartnerPlace {
            cpu: None,
            policy: None,
        };
        let mut child = spawn(TaskKind::Process, &spinner, 0, anywhere).unwrap();
        // A stamp means the child runs its body: past the closing of what it inherited.
        let armed = spinner.open_window();
        let begun = Instant::now();
        while spinner.last_stamp() < armed && begun.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        spinner.close_window();
        assert!(spinner.last_stamp() >= armed, "the child never ran");

        drop(reader);
        let removed = instance.remove();
        assert!(
            child.alive(),
            "the child still runs, with what it inherited"
        );
        spinner.stop();
        drop(child);
        removed.unwrap();
        assert!(!dir.exists());
    }
}
