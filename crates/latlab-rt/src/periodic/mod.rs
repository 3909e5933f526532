//! A precise periodic task for applications: the loop `latlab run` measures, given to
//! the application, measuring itself.
//!
//! ```no_run
//! use latlab_rt::periodic::Periodic;
//! use std::ops::ControlFlow;
//! use std::time::Duration;
//!
//! let mut task = Periodic::builder()
//!     .period(Duration::from_millis(1))
//!     .cpu(1)
//!     .fifo(80)
//!     .build()?;
//! let summary = task.run(|cycle| {
//!     // the control step
//!     if cycle.index == 9_999 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
//! })?;
//! println!("{} cycles, {} periods missed", summary.counters.cycles, summary.counters.missed);
//! # Ok::<(), latlab_rt::periodic::PeriodicError>(())
//! ```
//!
//! - **Deadlines** are absolute on CLOCK_MONOTONIC: deadline *n* is `first + n·period`,
//!   whatever the wake-ups did, so the loop never drifts.
//! - **Waiting** ([`Method`]): `abs` sleeps with `clock_nanosleep(TIMER_ABSTIME)`;
//!   `timerfd` reads a periodic timerfd (the kernel's expiration count says which
//!   deadline it is); `hybrid` sleeps until a margin before the deadline and spins the
//!   rest, the margin given or learned from the wake-ups measured in the first second.
//! - **Overruns**: a step that ends after the next deadline is an overrun. The default
//!   [`Overrun::Skip`] goes on at the next deadline still ahead and counts the periods
//!   passed as missed, so cycles + missed = periods elapsed; [`Overrun::CatchUp`] runs
//!   the late deadlines at once (up to a bound); [`Overrun::Handler`] asks a function.
//! - **Set-up**, on the thread that calls [`Periodic::run`]: pinning, the policy
//!   (fifo, rr, deadline), locked memory, a prefaulted stack and a 1 ns timer slack.
//!   What the system refuses degrades the task instead of failing it, loudly: a line on
//!   standard error and in [`Summary::warnings`], with the fix.
//! - **Start** at a period boundary of CLOCK_MONOTONIC (the default), at a given
//!   instant's grid, or now.
//! - **Stop** from the step ([`ControlFlow::Break`]), another thread ([`Stopper`]) or
//!   a signal ([`stop_on_signals`]); the loop ends at its next wake-up.
//! - **Self-measurement**, every cycle: the wake-up latency (the system's part) and
//!   the compute time, wake-up to the end of the step (the application's part), into
//!   histograms of latlab's own layout with the largest samples, published in shared
//!   memory ([`shm`]) for `latlab attach PID`. Per cycle it costs one clock read and a
//!   few stores; the loop allocates, locks and calls nothing else.

pub mod hdr;
pub mod shm;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;

use crate::affinity;
use crate::clock::Clock;
use crate::memory::{LockReach, LockRoom, LockScope, MemoryLock};
use crate::sched::{self, Policy, PolicyGuard};
use crate::slack::TimerSlackGuard;
use crate::wake::{Method as SleepMethod, Sleeper, WaitError, WakeSource};
use crate::RtError;
use shm::{Identity, Publisher, Snapshot, TopEntry};
use std::ops::ControlFlow;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the loop waits for a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the deadline.
    Abs,
    /// A periodic timerfd on CLOCK_MONOTONIC, armed at the first deadline.
    Timerfd,
    /// Sleep until `margin` before the deadline, then spin; `None`: the margin is
    /// learned (see [`Builder::hybrid_learned`]).
    Hybrid {
        /// The spin margin.
        margin: Option<Duration>,
    },
}

impl Method {
    /// The name latlab uses (`abs`, `timerfd`, `hybrid`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Abs => "abs",
            Method::Timerfd => "timerfd",
            Method::Hybrid { .. } => "hybrid",
        }
    }

    fn code(self) -> u32 {
        match self {
            Method::Abs => 0,
            Method::Timerfd => 1,
            Method::Hybrid { .. } => 2,
        }
    }
}

/// What an overrun handler decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrunAction {
    /// Go on at the next deadline ahead; the deadlines passed are missed.
    Skip,
    /// Run up to this many of the deadlines passed at once, the latest ones; the
    /// others are missed.
    CatchUp(u64),
}

/// An overrun, as a handler sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverrunInfo {
    /// The cycle that overran (0-based).
    pub cycle: u64,
    /// Its deadline (CLOCK_MONOTONIC ns).
    pub due_ns: i64,
    /// When its step ended.
    pub ended_ns: i64,
    /// Deadlines already passed when it ended (≥ 1).
    pub late_periods: u64,
}

/// A function deciding each overrun.
pub type OverrunHandler = Box<dyn FnMut(&OverrunInfo) -> OverrunAction + Send>;

/// What the loop does when a step ends after the next deadline.
///
/// With [`Method::Timerfd`], deadlines the kernel's timer passed before it woke the
/// loop (a wake-up more than a period late) are skipped whatever the policy: the cycle
/// is the latest deadline's, and the others count as missed and as one overrun.
pub enum Overrun {
    /// Skip to the next deadline ahead, counting the periods passed as missed (the
    /// default).
    Skip,
    /// Run the deadlines passed at once, at most `max` of them (the latest); the
    /// others are missed.
    CatchUp {
        /// Most late cycles run per overrun.
        max: u64,
    },
    /// Ask a function, each time.
    Handler(OverrunHandler),
}

impl std::fmt::Debug for Overrun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Overrun::Skip => f.write_str("Skip"),
            Overrun::CatchUp { max } => write!(f, "CatchUp {{ max: {max} }}"),
            Overrun::Handler(_) => f.write_str("Handler"),
        }
    }
}

impl Overrun {
    fn code(&self) -> u32 {
        match self {
            Overrun::Skip => 0,
            Overrun::CatchUp { .. } => 1,
            Overrun::Handler(_) => 2,
        }
    }
}

/// Where the first deadline lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The next multiple of the period on CLOCK_MONOTONIC after now (the default):
    /// tasks with related periods start in phase.
    Aligned,
    /// The first instant of `at + n·period` (CLOCK_MONOTONIC ns) ahead of now.
    At(i64),
    /// One period from now.
    Now,
}

/// One cycle, as the step sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// 0 for the first.
    pub index: u64,
    /// Its deadline (CLOCK_MONOTONIC ns).
    pub due_ns: i64,
    /// When the loop woke for it.
    pub woke_ns: i64,
    /// Periods missed so far.
    pub missed: u64,
}

impl Cycle {
    /// The wake-up latency: how late the loop woke (ns).
    pub fn latency_ns(&self) -> i64 {
        self.woke_ns - self.due_ns
    }
}

/// Why a task cannot be built or run.
#[derive(Debug, thiserror::Error)]
pub enum PeriodicError {
    /// A setting is out of range.
    #[error("{field}: {why}")]
    Setting {
        /// The setting (`period`, `cpu`, ...).
        field: &'static str,
        /// What is accepted.
        why: String,
    },
    /// The wait failed (a timerfd that cannot be created or read).
    #[error(transparent)]
    Wait(#[from] RtError),
    /// [`Periodic::run`] was called again: a task runs once.
    #[error("this task has run already: build a new one to run again")]
    RanAlready,
}

/// How a task ended.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The task's statistics at its end (exact).
    pub snapshot: Snapshot,
    /// What the set-up could not do, each with its fix.
    pub warnings: Vec<String>,
    /// The counters (a shortcut into the snapshot).
    pub counters: shm::CountersCopy,
}

/// Sets a periodic task up.
#[derive(Debug)]
pub struct Builder {
    period_ns: i64,
    method: Method,
    cpu: Option<usize>,
    policy: Option<Policy>,
    lock_memory: bool,
    start: Start,
    overrun: Overrun,
    publish: bool,
    name: String,
    quiet: bool,
}

/// Stack bytes touched before the loop starts.
const PREFAULT_STACK: usize = 256 * 1024;
/// How long a learned hybrid margin is measured.
const LEARN_NS: i64 = 1_000_000_000;
/// Fewest cycles a learned hybrid margin is measured over.
const LEARN_MIN_CYCLES: u64 = 100;

impl Builder {
    /// The period (required; 1 µs … 1 h).
    pub fn period(mut self, period: Duration) -> Builder {
        self.period_ns = i64::try_from(period.as_nanos()).unwrap_or(i64::MAX);
        self
    }

    /// How to wait (default [`Method::Abs`]).
    pub fn method(mut self, method: Method) -> Builder {
        self.method = method;
        self
    }

    /// Hybrid waiting with the spin margin learned: the first second (at least 100
    /// cycles) sleeps to the deadline, and the margin is then the 99th percentile of
    /// those wake-ups plus a quarter, at most a tenth of the period: spinning covers
    /// the kernel's usual lateness, not the rare spikes it cannot shorten anyway, and
    /// costs at most a tenth of a CPU.
    pub fn hybrid_learned(self) -> Builder {
        self.method(Method::Hybrid { margin: None })
    }

    /// Pins the loop to `cpu`.
    pub fn cpu(mut self, cpu: usize) -> Builder {
        self.cpu = Some(cpu);
        self
    }

    /// `SCHED_FIFO` at `priority` (1 … 99).
    pub fn fifo(self, priority: i32) -> Builder {
        self.policy(Policy::Fifo { priority })
    }

    /// `SCHED_RR` at `priority` (1 … 99).
    pub fn rr(self, priority: i32) -> Builder {
        self.policy(Policy::RoundRobin { priority })
    }

    /// Any policy, `SCHED_DEADLINE` included (default: the thread's own).
    pub fn policy(mut self, policy: Policy) -> Builder {
        self.policy = Some(policy);
        self
    }

    /// Locks memory (default true).
    pub fn lock_memory(mut self, lock: bool) -> Builder {
        self.lock_memory = lock;
        self
    }

    /// Where the first deadline lies (default [`Start::Aligned`]).
    pub fn start(mut self, start: Start) -> Builder {
        self.start = start;
        self
    }

    /// What an overrun does (default [`Overrun::Skip`]).
    pub fn overrun(mut self, overrun: Overrun) -> Builder {
        self.overrun = overrun;
        self
    }

    /// Publishes the statistics in shared memory for `latlab attach` (default true).
    pub fn publish(mut self, publish: bool) -> Builder {
        self.publish = publish;
        self
    }

    /// The task's name, as `latlab attach` shows it (default the thread's name).
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = name.into();
        self
    }

    /// Says nothing on standard error (the warnings are still in the summary and the
    /// shared memory).
    pub fn quiet(mut self, quiet: bool) -> Builder {
        self.quiet = quiet;
        self
    }

    /// Checks the settings.
    pub fn build(self) -> Result<Periodic, PeriodicError> {
        let sleeper = match self.method {
            Method::Timerfd => Sleeper::new(SleepMethod::Timerfd, Clock::Monotonic, 0),
            Method::Abs | Method::Hybrid { .. } => Sleeper::Abs(Clock::Monotonic),
        };
        self.build_on(sleeper)
    }

    /// The task on a wake source of the caller's: a simulated clock in tests.
    #[doc(hidden)]
    pub fn build_on<S: WakeSource>(self, source: S) -> Result<Periodic<S>, PeriodicError> {
        let setting = |field, why: &str| PeriodicError::Setting {
            field,
            why: why.to_string(),
        };
        if !(1_000..=3_600_000_000_000).contains(&self.period_ns) {
            return Err(setting(
                "period",
                "give a period from 1 µs to 1 h (it was not set, or out of range)",
            ));
        }
        if let Method::Hybrid {
            margin: Some(margin),
        } = self.method
        {
            if margin.as_nanos() >= self.period_ns as u128 {
                return Err(setting(
                    "hybrid margin",
                    "the spin margin must be shorter than the period",
                ));
            }
            if margin.is_zero() {
                return Err(setting(
                    "hybrid margin",
                    "give a margin above 0, or none to learn it",
                ));
            }
        }
        if let Some(cpu) = self.cpu {
            let allowed = affinity::allowed_cpus().unwrap_or_default();
            if !allowed.is_empty() && !allowed.contains(&cpu) {
                return Err(setting(
                    "cpu",
                    &format!("CPU {cpu} is not one this process may run on ({allowed:?})"),
                ));
            }
        }
        if self.cpu.is_some() && matches!(self.policy, Some(Policy::Deadline { .. })) {
            // The kernel refuses SCHED_DEADLINE to a thread whose affinity does not
            // span its root domain, so a pinned deadline task would always degrade.
            return Err(setting(
                "cpu",
                "a deadline task cannot be pinned to one CPU: leave the CPU unset, or use \
                 fifo to pin it",
            ));
        }
        match self.policy {
            Some(Policy::Fifo { priority } | Policy::RoundRobin { priority })
                if !(1..=99).contains(&priority) =>
            {
                return Err(setting(
                    "priority",
                    "fifo and rr take a priority from 1 to 99",
                ));
            }
            _ => {}
        }
        if matches!(self.overrun, Overrun::CatchUp { max: 0 }) {
            return Err(setting(
                "overrun",
                "catch up at least 1 late cycle, or skip",
            ));
        }
        Ok(Periodic {
            builder: self,
            source,
            stop: Arc::new(AtomicBool::new(false)),
            ran: false,
        })
    }
}

/// A periodic task: [`Periodic::run`] runs it on the calling thread.
#[derive(Debug)]
pub struct Periodic<S: WakeSource = Sleeper> {
    builder: Builder,
    source: S,
    stop: Arc<AtomicBool>,
    /// Whether it has run (a timer armed, a stop taken: a task runs once).
    ran: bool,
}

/// Stops a task from another thread (or a signal handler: [`Stopper::stop`] only
/// stores a flag). The loop ends at its next wake-up.
#[derive(Debug, Clone)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Asks the loop to end.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Set by the handler [`stop_on_signals`] installs.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::Relaxed);
}

/// What a set-up warning of a periodic task (published on its page) is about, for a
/// reader that files it under the code a measuring run gives the same condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetUpWarning {
    /// The policy asked for was refused: the loop runs at another.
    PolicyRefused,
    /// Memory could not be locked.
    MemoryNotLocked,
    /// Memory was locked only as mapped then.
    MemoryLockLimited,
    /// Anything else (not pinned, not published).
    Other,
}

/// The words that follow the refused policy in its warning.
const POLICY_REFUSED: &str = " refused ";
/// How the two memory warnings begin.
const MEMORY_NOT_LOCKED: &str = "memory not locked";
const MEMORY_LOCKED_NOW: &str = "memory locked only as mapped now";

impl SetUpWarning {
    /// What `text`, a warning the set-up of a periodic task wrote, is about.
    pub fn of(text: &str) -> SetUpWarning {
        if text.starts_with(MEMORY_NOT_LOCKED) {
            SetUpWarning::MemoryNotLocked
        } else if text.starts_with(MEMORY_LOCKED_NOW) {
            SetUpWarning::MemoryLockLimited
        } else if text.contains(POLICY_REFUSED) && text.contains("the loop runs at") {
            SetUpWarning::PolicyRefused
        } else {
            SetUpWarning::Other
        }
    }
}

/// Ends every task of this process at its next wake-up when one of `signals`
/// arrives (SIGINT, SIGTERM and SIGHUP, typically). The handler only stores a flag, and
/// a sleep it interrupts ends at once. It handles each signal once: the same signal
/// again has its default effect, so a second Ctrl-C still ends an application whose
/// step hangs. Calling it again arms it anew, for the tasks run after.
pub fn stop_on_signals(signals: &[i32]) -> Result<(), RtError> {
    SIGNALLED.store(false, Ordering::Relaxed);
    for &signal in signals {
        // SAFETY: a zeroed sigaction is valid; the handler only stores an atomic,
        // which is async-signal-safe; no SA_RESTART, so a sleep returns EINTR;
        // SA_RESETHAND restores the default once the handler has run.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(RtError::last(format!("handle signal {signal}")));
        }
    }
    Ok(())
}

impl Periodic {
    /// A builder with the defaults: no period yet, abs, not pinned, the thread's
    /// policy, memory locked, aligned start, skip on overrun, published.
    pub fn builder() -> Builder {
        Builder {
            period_ns: 0,
            method: Method::Abs,
            cpu: None,
            policy: None,
            lock_memory: true,
            start: Start::Aligned,
            overrun: Overrun::Skip,
            publish: true,
            name: String::new(),
            quiet: false,
        }
    }
}

/// What the set-up holds while the loop runs (restored when dropped).
struct SetUp {
    _policy: Option<PolicyGuard>,
    _slack: Option<TimerSlackGuard>,
    _memory: Option<MemoryLock>,
    cpu: Option<usize>,
    policy: Policy,
    memory_locked: bool,
    warnings: Vec<String>,
}

impl<S: WakeSource> Periodic<S> {
    /// A handle that stops the loop from elsewhere.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    fn set_up(&self) -> SetUp {
        let b = &self.builder;
        let mut warnings = Vec::new();
        let mut cpu = None;
        if let Some(want) = b.cpu {
            match affinity::pin_current_thread(want) {
                Ok(()) => cpu = Some(want),
                Err(e) => warnings.push(format!(
                    "not pinned to CPU {want} ({e}): the loop may migrate between CPUs"
                )),
            }
        }
        let mut policy_guard = None;
        if let Some(policy) = b.policy {
            match PolicyGuard::apply(policy) {
                Ok(guard) => policy_guard = Some(guard),
                Err(e) => warnings.push(format!(
                    "{}{POLICY_REFUSED}({}): the loop runs at {}",
                    policy,
                    sched::explain_refusal(&policy, &e),
                    sched::current_thread()
                        .map(|p| p.to_string())
                        .unwrap_or_else(|_| "the thread's own policy".into())
                )),
            }
        }
        let policy = sched::current_thread().unwrap_or(Policy::Other { nice: 0 });
        let slack = if policy.is_realtime() {
            None // the kernel gives real-time threads no slack
        } else {
            TimerSlackGuard::set(1).ok()
        };
        let mut memory = None;
        if b.lock_memory {
            // Room for the thread stacks and buffers the application maps later.
            let reach = LockRoom::of_this_process().reach(64 << 20);
            match reach.map(|reach| MemoryLock::lock(LockScope::All, reach)) {
                Some(Ok(lock)) => {
                    if lock.reach == LockReach::Current {
                        warnings.push(format!(
                            "{MEMORY_LOCKED_NOW}: RLIMIT_MEMLOCK leaves no room for later \
                                 mappings (this task's page, thread stacks, buffers), which \
                                 can fault; raise it (ulimit -l unlimited) or grant \
                                 CAP_IPC_LOCK"
                        ));
                    }
                    memory = Some(lock);
                }
                Some(Err(e)) => warnings.push(format!(
                    "{MEMORY_NOT_LOCKED} ({e}): a page fault can delay the loop; raise the \
                     limit (ulimit -l unlimited) or grant CAP_IPC_LOCK"
                )),
                None => warnings.push(format!(
                    "{MEMORY_NOT_LOCKED}: RLIMIT_MEMLOCK is smaller than what the process \
                         maps; raise it (ulimit -l unlimited) or grant CAP_IPC_LOCK"
                )),
            }
        }
        crate::memory::prefault_stack::<PREFAULT_STACK>();
        SetUp {
            _policy: policy_guard,
            _slack: slack,
            // Locked as mapped now only, the loop's later mappings are not.
            memory_locked: memory
                .as_ref()
                .is_some_and(|m| m.reach == LockReach::CurrentAndFuture),
            _memory: memory,
            cpu,
            policy,
            warnings,
        }
    }

    /// Runs the loop on the calling thread until the step breaks, a [`Stopper`] or a
    /// signal ([`stop_on_signals`]) stops it; returns its statistics.
    pub fn run<F>(&mut self, mut step: F) -> Result<Summary, PeriodicError>
    where
        F: FnMut(&Cycle) -> ControlFlow<()>,
    {
        if std::mem::replace(&mut self.ran, true) {
            return Err(PeriodicError::RanAlready);
        }
        // The pages killed tasks left go first, whoever starts next, and before the
        // set-up: under a real-time policy and locked memory, the sweep would map and
        // lock each page it looks at.
        if self.builder.publish {
            shm::sweep();
        }
        let set_up = self.set_up();
        let mut warnings = set_up.warnings.clone();
        let (policy, priority) = policy_code(set_up.policy);
        let mut identity = Identity {
            tid: sched::gettid(),
            period_ns: self.builder.period_ns as u64,
            cpu: set_up.cpu,
            policy: (policy, priority),
            method: self.builder.method.code(),
            overrun_policy: self.builder.overrun.code(),
            memory_locked: set_up.memory_locked,
            name: match self.builder.name.is_empty() {
                true => std::thread::current().name().unwrap_or("main").to_string(),
                false => self.builder.name.clone(),
            },
            warnings: Vec::new(),
        };
        let publisher = if self.builder.publish {
            identity.warnings = warnings.clone();
            match Publisher::create(&identity) {
                Ok(p) => p,
                Err(e) => {
                    warnings.push(format!(
                        "statistics not published ({e}): latlab attach cannot see this task; \
                         /dev/shm must be writable"
                    ));
                    identity.warnings = warnings.clone();
                    Publisher::private(&identity)?
                }
            }
        } else {
            Publisher::private(&identity)?
        };
        if !self.builder.quiet {
            for w in &warnings {
                eprintln!("latlab periodic: DEGRADED: {w}");
            }
        }
        let first = self.first_deadline();
        if self.builder.method == Method::Timerfd {
            self.source.arm(first, self.builder.period_ns)?;
        }
        self.cycle_loop(first, &mut Recorder::new(&publisher), &mut step)?;
        publisher.end();
        let snapshot = publisher.snapshot();
        drop(publisher);
        drop(set_up);
        Ok(Summary {
            counters: snapshot.counters.clone(),
            snapshot,
            warnings,
        })
    }

    fn first_deadline(&self) -> i64 {
        let p = self.builder.period_ns;
        let now = self.source.now_ns();
        match self.builder.start {
            Start::Aligned => (now / p + 1) * p,
            Start::At(at) if at > now => at,
            Start::At(at) => at + ((now - at) / p + 1) * p,
            Start::Now => now + p,
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || SIGNALLED.load(Ordering::Relaxed)
    }

    /// Waits for `due`; `None` when interrupted (the caller looks at the stop flags).
    #[inline]
    fn wait(&mut self, due: i64, margin: i64) -> Result<Option<i64>, PeriodicError> {
        let stop = &*self.stop;
        let result = if margin > 0 {
            match self.source.wait(due - margin, stop) {
                // The wake-up's own clock read is the spin's first.
                Ok(woke) => {
                    let mut now = woke.at_ns;
                    loop {
                        if now >= due {
                            break Ok(crate::wake::Wake {
                                at_ns: now,
                                expirations: None,
                            });
                        }
                        if stop.load(Ordering::Relaxed) {
                            break Err(WaitError::Interrupted);
                        }
                        std::hint::spin_loop();
                        now = self.source.now_ns();
                    }
                }
                Err(e) => Err(e),
            }
        } else {
            self.source.wait(due, stop)
        };
        match result {
            Ok(wake) => Ok(Some(wake.at_ns)),
            Err(WaitError::Interrupted) => Ok(None),
            Err(WaitError::Failed(e)) => Err(e.into()),
        }
    }

    fn cycle_loop<F>(
        &mut self,
        first: i64,
        recorder: &mut Recorder<'_>,
        step: &mut F,
    ) -> Result<(), PeriodicError>
    where
        F: FnMut(&Cycle) -> ControlFlow<()>,
    {
        let p = self.builder.period_ns;
        let timerfd = self.builder.method == Method::Timerfd;
        let (mut margin, learning) = match self.builder.method {
            Method::Hybrid {
                margin: Some(margin),
            } => (margin.as_nanos() as i64, false),
            Method::Hybrid { margin: None } => (0, true),
            _ => (0, false),
        };
        recorder.start(first);
        recorder.margin(margin);
        let mut due = first;
        // Deadlines the timerfd has reported so far (its expirations, summed).
        let mut expired: u64 = 0;
        // Late cycles still to run at once after an overrun.
        let mut catch_up: u64 = 0;
        let mut index: u64 = 0;
        let mut missed: u64 = 0;
        loop {
            if self.stopped() {
                return Ok(());
            }
            let woke = if catch_up > 0 {
                catch_up -= 1;
                recorder.caught_up();
                self.source.now_ns()
            } else if timerfd {
                let Some(woke) =
                    self.wait_timerfd(&mut expired, &mut due, &mut missed, first, recorder)?
                else {
                    continue;
                };
                woke
            } else {
                match self.wait(due, margin)? {
                    Some(woke) => woke,
                    None => continue,
                }
            };
            let cycle = Cycle {
                index,
                due_ns: due,
                woke_ns: woke,
                missed,
            };
            let flow = step(&cycle);
            let end = self.source.now_ns();
            recorder.record(&cycle, end);
            index += 1;
            if flow.is_break() {
                return Ok(());
            }
            if learning && margin == 0 && index >= LEARN_MIN_CYCLES && due - first >= LEARN_NS {
                margin = recorder.learned_margin(p);
                recorder.margin(margin);
            }
            due += p;
            // Cycles run late to catch up end after their next deadline by design.
            if catch_up == 0 && end >= due {
                let late = ((end - due) / p + 1) as u64;
                let info = OverrunInfo {
                    cycle: cycle.index,
                    due_ns: cycle.due_ns,
                    ended_ns: end,
                    late_periods: late,
                };
                let action = match &mut self.builder.overrun {
                    Overrun::Skip => OverrunAction::Skip,
                    Overrun::CatchUp { max } => OverrunAction::CatchUp(*max),
                    Overrun::Handler(handler) => handler(&info),
                };
                let run = match action {
                    OverrunAction::Skip => 0,
                    OverrunAction::CatchUp(max) => late.min(max),
                };
                let skipped = late - run;
                missed += skipped;
                due += skipped as i64 * p;
                catch_up = run;
                recorder.overrun(skipped, due - p);
            }
        }
    }

    /// Reads the timerfd until it reports `due` or a later deadline; a later one
    /// means the deadlines between were missed.
    #[inline]
    fn wait_timerfd(
        &mut self,
        expired: &mut u64,
        due: &mut i64,
        missed: &mut u64,
        first: i64,
        recorder: &mut Recorder<'_>,
    ) -> Result<Option<i64>, PeriodicError> {
        let p = self.builder.period_ns;
        loop {
            let wake = match self.source.wait(*due, &self.stop) {
                Ok(wake) => wake,
                Err(WaitError::Interrupted) => return Ok(None),
                Err(WaitError::Failed(e)) => return Err(e.into()),
            };
            *expired += wake.expirations.unwrap_or(1);
            let reported = first + (*expired as i64 - 1) * p;
            if reported < *due {
                // Expirations of deadlines the loop ran late already (catching up).
                continue;
            }
            if reported > *due {
                let skipped = ((reported - *due) / p) as u64;
                *missed += skipped;
                // Woken more than a period late: the cycle is the latest deadline's.
                *due = reported;
                recorder.overrun(skipped, *due - p);
            }
            return Ok(Some(wake.at_ns));
        }
    }
}

fn policy_code(policy: Policy) -> (u32, u32) {
    match policy {
        Policy::Fifo { priority } => (libc::SCHED_FIFO as u32, priority as u32),
        Policy::RoundRobin { priority } => (libc::SCHED_RR as u32, priority as u32),
        Policy::Deadline { .. } => (6, 0),
        // The nice value, as the two's complement bits of an i32.
        Policy::Batch { nice } => (libc::SCHED_BATCH as u32, nice as u32),
        Policy::Idle => (libc::SCHED_IDLE as u32, 0),
        Policy::Other { nice } => (libc::SCHED_OTHER as u32, nice as u32),
    }
}

/// Writes each cycle into the published page: counts, extremes, the largest samples.
struct Recorder<'a> {
    publisher: &'a Publisher,
    seq: u64,
    wake_floor: i64,
    compute_floor: i64,
}

impl<'a> Recorder<'a> {
    fn new(publisher: &'a Publisher) -> Recorder<'a> {
        Recorder {
            publisher,
            seq: publisher.header().seq.load(Ordering::Relaxed),
            wake_floor: i64::MIN,
            compute_floor: i64::MIN,
        }
    }

    #[inline(always)]
    fn begin(&mut self) {
        self.seq += 1;
        self.publisher
            .header()
            .seq
            .store(self.seq, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    #[inline(always)]
    fn end(&mut self) {
        self.seq += 1;
        self.publisher
            .header()
            .seq
            .store(self.seq, Ordering::Release);
    }

    #[inline(always)]
    fn record(&mut self, cycle: &Cycle, end: i64) {
        let r = Ordering::Relaxed;
        let wake = cycle.woke_ns - cycle.due_ns;
        let compute = end - cycle.woke_ns;
        self.begin();
        let c = &self.publisher.header().counters;
        c.cycles.store(c.cycles.load(r) + 1, r);
        c.last_due_ns.store(cycle.due_ns, r);
        c.last_end_ns.store(end, r);
        extremes(&c.wake_min_ns, &c.wake_max_ns, &c.wake_sum_ns, wake);
        extremes(
            &c.compute_min_ns,
            &c.compute_max_ns,
            &c.compute_sum_ns,
            compute,
        );
        count(self.publisher.wake_counts(), &c.wake_clamped, wake);
        count(self.publisher.compute_counts(), &c.compute_clamped, compute);
        if wake > self.wake_floor {
            self.wake_floor = keep_top(&c.wake_top, wake, cycle);
        }
        if compute > self.compute_floor {
            self.compute_floor = keep_top(&c.compute_top, compute, cycle);
        }
        self.end();
    }

    /// An overrun: `skipped` deadlines pass without a cycle, the last of the
    /// deadlines passed is now `passed_due` (so that cycles + missed counts the periods
    /// up to it, also before the next cycle).
    fn overrun(&mut self, skipped: u64, passed_due: i64) {
        let r = Ordering::Relaxed;
        self.begin();
        let c = &self.publisher.header().counters;
        c.overruns.store(c.overruns.load(r) + 1, r);
        c.missed.store(c.missed.load(r) + skipped, r);
        c.last_due_ns.store(passed_due, r);
        self.end();
    }

    /// A cycle run late, at once, to catch up after an overrun.
    #[cold]
    fn caught_up(&mut self) {
        let r = Ordering::Relaxed;
        self.begin();
        let c = &self.publisher.header().counters;
        c.caught_up.store(c.caught_up.load(r) + 1, r);
        self.end();
    }

    /// The loop starts: the first deadline, from which periods count (a first
    /// wake-up periods late counts those as missed).
    fn start(&mut self, first: i64) {
        self.begin();
        let c = &self.publisher.header().counters;
        c.first_due_ns.store(first, Ordering::Relaxed);
        c.last_due_ns.store(first, Ordering::Relaxed);
        self.end();
    }

    fn margin(&mut self, margin: i64) {
        self.begin();
        self.publisher
            .header()
            .counters
            .margin_ns
            .store(margin, Ordering::Relaxed);
        self.end();
    }

    /// The hybrid margin from the wake-ups so far: their 99th percentile plus a
    /// quarter, at least 1 µs, at most a tenth of the period (a bench on a noisy VM
    /// saw the 99.9th percentile, bounded by half a period, spin 40–50 % of a CPU for
    /// no gain in the tail).
    fn learned_margin(&self, period_ns: i64) -> i64 {
        let counts = self.publisher.wake_counts().iter();
        let p99 = hdr::quantile_of(counts.map(|c| c.load(Ordering::Relaxed)), 0.99).unwrap_or(0);
        (p99 + p99 / 4).max(1_000).min(period_ns / 10)
    }
}

#[inline(always)]
fn extremes(
    min: &std::sync::atomic::AtomicI64,
    max: &std::sync::atomic::AtomicI64,
    sum: &std::sync::atomic::AtomicI64,
    v: i64,
) {
    let r = Ordering::Relaxed;
    if v < min.load(r) {
        min.store(v, r);
    }
    if v > max.load(r) {
        max.store(v, r);
    }
    sum.store(sum.load(r).wrapping_add(v), r);
}

#[inline(always)]
fn count(counts: &[std::sync::atomic::AtomicU64], clamped: &std::sync::atomic::AtomicU64, v: i64) {
    let r = Ordering::Relaxed;
    let (value, over) = hdr::clamp(v);
    if over {
        clamped.store(clamped.load(r) + 1, r);
    }
    let slot = &counts[hdr::index_of(value)];
    slot.store(slot.load(r) + 1, r);
}

/// Puts `v` in place of the least of `top`; returns the new least.
#[cold]
#[inline(never)]
fn keep_top(top: &[TopEntry], v: i64, cycle: &Cycle) -> i64 {
    let r = Ordering::Relaxed;
    let least = top
        .iter()
        .enumerate()
        .min_by_key(|(_, t)| t.value_ns.load(r))
        .map(|(i, _)| i)
        .unwrap_or(0);
    top[least].value_ns.store(v, r);
    top[least].cycle.store(cycle.index, r);
    top[least].due_ns.store(cycle.due_ns, r);
    top.iter()
        .map(|t| t.value_ns.load(r))
        .min()
        .unwrap_or(i64::MIN)
}
