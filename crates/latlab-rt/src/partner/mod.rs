//! Partner tasks of the scheduling probes: the tasks a measuring thread preempts,
//! switches with or waits for, each pinned to a CPU at a policy of its own.
//!
//! A partner is a thread of latlab or a forked process. A forked child of a
//! multi-threaded process may only do async-signal-safe work (another thread may have
//! held the allocator's lock at the fork), so what a child runs is fixed here, in this
//! crate: a [`PartnerBody`] is one of the loops below ([`Spinner`], [`YieldRing`],
//! [`PipeRing`], [`Inversion`]), written with atomics, clock reads and raw system calls
//! only. Their state lives in a [`SharedRegion`] (an anonymous `MAP_SHARED` mapping) so parent and
//! child see the same words. Thread-only partners run any closure ([`spawn_thread`]).

pub mod futex;
mod inversion;
mod ring;
mod spinner;

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

/// A value in an anonymous shared mapping: a forked child sees (and changes) the same
/// memory as its parent. Dropped and unmapped with the last owner in the parent.
///
/// `T` must keep all its state inline (atomics, arrays, plain numbers): memory it
/// points to elsewhere is not shared with a child.
#[derive(Debug)]
pub struct SharedRegion<T> {
    ptr: *mut T,
    bytes: usize,
}

// SAFETY: the region only hands out `&T`, so sharing or sending it across threads is
// as safe as sharing a `&T`, which `T: Sync` allows.
unsafe impl<T: Sync> Send for SharedRegion<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SharedRegion<T> {}

impl<T> SharedRegion<T> {
    /// Maps a region and moves `value` into it.
    pub fn new(value: T) -> Result<SharedRegion<T>, RtError> {
        let bytes = std::mem::size_of::<T>().max(1);
        // SAFETY: an anonymous shared read-write mapping; MAP_FAILED is checked. Its
        // page alignment satisfies any alignment of T.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RtError::last("map memory shared with partner processes"));
        }
        let ptr = ptr as *mut T;
        // SAFETY: `ptr` is valid for writes of one T, aligned, and not yet initialised.
        unsafe { ptr.write(value) };
        Ok(SharedRegion { ptr, bytes })
    }
}

impl<T> std::ops::Deref for SharedRegion<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: initialised in `new`, mapped until drop, and only shared as `&T`.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for SharedRegion<T> {
    fn drop(&mut self) {
        // SAFETY: the value was initialised in `new` and is dropped once, here; then
        // exactly the mapping made in `new` is unmapped.
        unsafe {
            std::ptr::drop_in_place(self.ptr);
            libc::munmap(self.ptr as *mut libc::c_void, self.bytes);
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A loop a partner runs, safe to run in a forked child: atomics, clock reads and raw
/// system calls only — no allocation, no lock (but the process-shared mutex an
/// [`Inversion`] is about), no I/O through the standard library.
pub trait PartnerBody: sealed::Sealed + Sync + Send + 'static {
    /// Runs member `index` until the body's own stop request.
    fn run(&self, index: usize);
}

/// The policy for a partner, and where it runs.
#[derive(Debug, Clone, Copy)]
pub struct PartnerPlace {
    /// The CPU it is pinned to.
    pub cpu: usize,
    /// Its scheduling policy.
    pub policy: Policy,
}

/// A running partner: a thread joined, or a process reaped, on drop. Tell it to stop
/// (through its body's state) before dropping it; a process that does not end within
/// a second is killed by its pid.
#[derive(Debug)]
pub struct Partner {
    task: Task,
}

#[derive(Debug)]
enum Task {
    Thread(Option<JoinHandle<()>>),
    Process { pid: i32, reaped: bool },
}

/// How long a stopped partner process may take to end before it is killed.
const PROCESS_GRACE: Duration = Duration::from_secs(1);

impl Partner {
    /// False once a partner process has ended (it is then reaped); threads of latlab
    /// cannot end on their own before they are told to.
    pub fn alive(&mut self) -> bool {
        match &mut self.task {
            Task::Thread(handle) => handle.as_ref().is_some_and(|h| !h.is_finished()),
            Task::Process { pid, reaped } => {
                if !*reaped && try_reap(*pid) {
                    *reaped = true;
                }
                !*reaped
            }
        }
    }
}

impl Drop for Partner {
    fn drop(&mut self) {
        match &mut self.task {
            Task::Thread(handle) => {
                if let Some(h) = handle.take() {
                    let _ = h.join();
                }
            }
            Task::Process { pid, reaped } => {
                if *reaped {
                    return;
                }
                let begun = Instant::now();
                while begun.elapsed() < PROCESS_GRACE {
                    if try_reap(*pid) {
                        return;
                    }
                    crate::wake::nap(Duration::from_millis(2));
                }
                // SAFETY: kill by the pid of our own unreaped child (it cannot have been
                // recycled: a child's pid stays taken until it is waited for).
                unsafe { libc::kill(*pid, libc::SIGKILL) };
                let _ = crate::shared::wait_child(*pid);
            }
        }
    }
}

/// Reaps child `pid` if it has ended.
fn try_reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on our own child, non-blocking, with a valid status pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    rc == pid || (rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Starts member `index` of `body` as a thread or a forked process at `place`.
///
/// Call it from the measuring thread: the new task begins with that thread's policy,
/// and is moved to `place` before it can run its body (a thread sets its own, a
/// process has it set by the parent right after the fork).
pub fn spawn<B: PartnerBody>(
    kind: TaskKind,
    body: &Arc<SharedRegion<B>>,
    index: usize,
    place: PartnerPlace,
) -> Result<Partner, RtError> {
    match kind {
        TaskKind::Thread => {
            let body = body.clone();
            spawn_thread(place, move || body.run(index))
        }
        TaskKind::Process => spawn_process(body, index, place),
    }
}

/// Starts a partner thread at `place` running `work`; returns once the thread runs at
/// its policy (or with the kernel's reason why it cannot).
pub fn spawn_thread(
    place: PartnerPlace,
    work: impl FnOnce() + Send + 'static,
) -> Result<Partner, RtError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("latlab-partner".to_string())
        .stack_size(128 * 1024)
        .spawn(move || {
            let placed = affinity::pin_current_thread(place.cpu)
                .and_then(|()| sched::set_current_thread(place.policy));
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
    };
    placed.map(|()| partner)
}

fn spawn_process<B: PartnerBody>(
    body: &Arc<SharedRegion<B>>,
    index: usize,
    place: PartnerPlace,
) -> Result<Partner, RtError> {
    let parent = std::process::id() as i32;
    let state: &B = body;
    // SAFETY: the child runs only async-signal-safe code — raw system calls (prctl,
    // getppid, mlockall, the sealed body's atomics, clock reads, futexes, pipes,
    // sched_yield, and the process-shared mutex in the body's state) and _exit — so no lock held by another thread at the fork can be
    // needed, and nothing is allocated. The body's state is in a MAP_SHARED mapping.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return Err(RtError::last("fork a partner process"));
    }
    if pid == 0 {
        // SAFETY (child, async-signal-safe calls only): die with latlab (a SIGKILL
        // when the forking thread ends), unless latlab already went; ignore terminal
        // and group signals (latlab receives them too, and stops the child); lock what
        // the child touches; run the body; leave without running the parent's handlers.
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
            libc::mlockall(
                libc::MCL_CURRENT | libc::MCL_FUTURE | 4, /* MCL_ONFAULT */
            );
        }
        state.run(index);
        // SAFETY: _exit ends the child at once.
        unsafe { libc::_exit(0) }
    }
    let mut partner = Partner {
        task: Task::Process { pid, reaped: false },
    };
    place_process(pid, place).inspect_err(|_| {
        // SAFETY: kill our own unreaped child by pid; the drop below reaps it.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let _ = partner.alive();
    })?;
    Ok(partner)
}

/// Pins process `pid` and sets its policy, from outside.
fn place_process(pid: i32, place: PartnerPlace) -> Result<(), RtError> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays within it (checked);
    // sched_setaffinity reads exactly its size.
    let rc = unsafe {
        if place.cpu >= libc::CPU_SETSIZE as usize {
            return Err(RtError::new(
                format!("pin a partner to CPU {}", place.cpu),
                std::io::Error::from_raw_os_error(libc::EINVAL),
            ));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(place.cpu, &mut set);
        libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(RtError::last(format!("pin a partner to CPU {}", place.cpu)));
    }
    sched::set_task(pid, place.policy)
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
            cpu: affinity::allowed_cpus().unwrap()[0],
            policy: sched::current_thread().unwrap(),
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
        let cpu = affinity::allowed_cpus().unwrap()[0];
        let policy = sched::current_thread().unwrap();
        let spinner = Arc::new(SharedRegion::new(Spinner::default()).unwrap());
        let mut child =
            spawn(TaskKind::Process, &spinner, 0, PartnerPlace { cpu, policy }).unwrap();
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
        drop(child);
    }
}
