//! latlab's periodic task for C: the loop of [`latlab_rt::periodic`] (absolute
//! deadlines, counted overruns, optional spinning, real-time set-up, statistics
//! published for `latlab attach`) behind a C ABI, so that C and C++ applications get
//! it with `#include <latlab/periodic.h>` and `pkg-config --cflags --libs
//! latlab-periodic`.
//!
//! ```c
//! latlab_periodic_config config;
//! latlab_periodic_config_default(&config);
//! config.period_ns = 1000000;
//! config.policy = LATLAB_POLICY_FIFO;
//! config.priority = 80;
//! latlab_periodic *task;
//! if (latlab_periodic_new(&config, &task) != LATLAB_OK)
//!     fprintf(stderr, "%s\n", latlab_periodic_last_error());
//! latlab_periodic_run(task, step, &state);   /* step returns non-zero to stop */
//! latlab_stats stats;
//! latlab_periodic_stats(task, &stats);
//! latlab_periodic_free(task);
//! ```
//!
//! The boundary's rules: every function returns a [`latlab_status`] (0 or a negative
//! code) and leaves a message naming the setting and its fix for
//! [`latlab_periodic_last_error`]; a NULL pointer is an error, not a crash; no Rust
//! panic crosses into C (each entry point catches it as `LATLAB_ERR_INTERNAL`).
//! The header `include/latlab/periodic.h` is generated from this crate by cbindgen; a
//! test fails when the committed copy differs.

// The entry points take raw pointers from C and are safe functions on purpose: C
// cannot honour Rust's `unsafe`, so each one checks what it can (NULL, the state of the
// task) and leaves the rest to the contract the header states.
#![allow(clippy::not_unsafe_ptr_arg_deref)]
#![deny(missing_docs)]

mod stats;
mod status;

pub use stats::{latlab_stats, LATLAB_UNKNOWN};
pub use status::latlab_status;

use latlab_rt::periodic::{
    self, Method, Overrun, OverrunAction, OverrunInfo, Periodic, Start, Stopper, Summary,
};
use latlab_rt::sched::Policy;
use status::{guard, Failure};
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// Scheduling policies (`latlab_periodic_config.policy`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum latlab_policy {
    /// Keep the calling thread's policy.
    LATLAB_POLICY_INHERIT = 0,
    /// `SCHED_FIFO` at `priority`.
    LATLAB_POLICY_FIFO = 1,
    /// `SCHED_RR` at `priority`.
    LATLAB_POLICY_RR = 2,
    /// `SCHED_DEADLINE` with `deadline_runtime_ns`, `deadline_deadline_ns`,
    /// `deadline_period_ns`.
    LATLAB_POLICY_DEADLINE = 6,
}

/// How the loop waits for a deadline (`latlab_periodic_config.method`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum latlab_method {
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the deadline.
    LATLAB_METHOD_ABS = 0,
    /// A periodic timerfd.
    LATLAB_METHOD_TIMERFD = 1,
    /// Sleep until `hybrid_margin_ns` before the deadline, then spin; a margin of 0
    /// is learned from the wake-ups of the first second.
    LATLAB_METHOD_HYBRID = 2,
}

/// What an overrun does (`latlab_periodic_config.overrun`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum latlab_overrun {
    /// Go on at the next deadline ahead, counting the periods passed as missed.
    LATLAB_OVERRUN_SKIP = 0,
    /// Run the late deadlines at once, at most `catch_up_max` of them.
    LATLAB_OVERRUN_CATCH_UP = 1,
    /// Ask `overrun_handler`.
    LATLAB_OVERRUN_HANDLER = 2,
}

/// Where the first deadline lies (`latlab_periodic_config.start`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum latlab_start {
    /// The next multiple of the period on CLOCK_MONOTONIC, at least a period ahead.
    LATLAB_START_ALIGNED = 0,
    /// The first instant of `start_at_ns + n·period` ahead of now.
    LATLAB_START_AT = 1,
    /// One period from now.
    LATLAB_START_NOW = 2,
}

/// One cycle, as the step sees it.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct latlab_cycle {
    /// 0 for the first.
    pub index: u64,
    /// Its deadline (CLOCK_MONOTONIC ns).
    pub due_ns: i64,
    /// When the loop woke for it (CLOCK_MONOTONIC ns).
    pub woke_ns: i64,
    /// Periods missed so far.
    pub missed: u64,
}

/// An overrun, as an overrun handler sees it.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct latlab_overrun_info {
    /// The cycle that overran (0-based).
    pub cycle: u64,
    /// Its deadline (CLOCK_MONOTONIC ns).
    pub due_ns: i64,
    /// When its step ended.
    pub ended_ns: i64,
    /// Deadlines already passed when it ended (at least 1).
    pub late_periods: u64,
}

/// The step, called once a cycle on the loop's thread: return 0 to go on, non-zero
/// to stop. It must not unwind (a C++ exception must not leave it).
#[allow(non_camel_case_types)]
pub type latlab_step_fn =
    Option<extern "C" fn(cycle: *const latlab_cycle, user_data: *mut c_void) -> c_int>;

/// An overrun handler: returns how many of the late deadlines to run at once (the
/// latest ones; 0 skips them all); those not run are counted as missed.
#[allow(non_camel_case_types)]
pub type latlab_overrun_fn =
    Option<extern "C" fn(info: *const latlab_overrun_info, user_data: *mut c_void) -> u64>;

/// A task's settings. Fill it with `latlab_periodic_config_default`, then change
/// what differs: at least `period_ns`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct latlab_periodic_config {
    /// The period, 1000 (1 µs) … 3600000000000 (1 h). Required.
    pub period_ns: u64,
    /// The CPU to pin the loop to; -1: not pinned (the default).
    pub cpu: c_int,
    /// A `latlab_policy` (default `LATLAB_POLICY_INHERIT`).
    pub policy: c_int,
    /// Priority 1 … 99 for `LATLAB_POLICY_FIFO` and `LATLAB_POLICY_RR`.
    pub priority: c_int,
    /// `SCHED_DEADLINE`'s runtime (ns).
    pub deadline_runtime_ns: u64,
    /// `SCHED_DEADLINE`'s relative deadline (ns).
    pub deadline_deadline_ns: u64,
    /// `SCHED_DEADLINE`'s period (ns).
    pub deadline_period_ns: u64,
    /// A `latlab_method` (default `LATLAB_METHOD_ABS`).
    pub method: c_int,
    /// The hybrid method's spin margin, shorter than the period; 0: learned.
    pub hybrid_margin_ns: i64,
    /// A `latlab_overrun` (default `LATLAB_OVERRUN_SKIP`).
    pub overrun: c_int,
    /// Most late cycles run at once per overrun with `LATLAB_OVERRUN_CATCH_UP` (≥ 1).
    pub catch_up_max: u64,
    /// The handler of `LATLAB_OVERRUN_HANDLER`, called on the loop's thread.
    pub overrun_handler: latlab_overrun_fn,
    /// Passed to `overrun_handler`.
    pub overrun_user_data: *mut c_void,
    /// A `latlab_start` (default `LATLAB_START_ALIGNED`).
    pub start: c_int,
    /// The instant of `LATLAB_START_AT` (CLOCK_MONOTONIC ns).
    pub start_at_ns: i64,
    /// Lock memory (default true).
    pub lock_memory: bool,
    /// Publish the statistics in /dev/shm for `latlab attach` (default true).
    pub publish: bool,
    /// Say nothing on standard error (default false); the warnings stay readable
    /// with `latlab_periodic_warnings`.
    pub quiet: bool,
    /// The task's name as `latlab attach` shows it, UTF-8, copied; NULL: the
    /// thread's name.
    pub name: *const c_char,
}

impl Default for latlab_periodic_config {
    fn default() -> Self {
        latlab_periodic_config {
            period_ns: 0,
            cpu: -1,
            policy: latlab_policy::LATLAB_POLICY_INHERIT as c_int,
            priority: 0,
            deadline_runtime_ns: 0,
            deadline_deadline_ns: 0,
            deadline_period_ns: 0,
            method: latlab_method::LATLAB_METHOD_ABS as c_int,
            hybrid_margin_ns: 0,
            overrun: latlab_overrun::LATLAB_OVERRUN_SKIP as c_int,
            catch_up_max: 1,
            overrun_handler: None,
            overrun_user_data: std::ptr::null_mut(),
            start: latlab_start::LATLAB_START_ALIGNED as c_int,
            start_at_ns: 0,
            lock_memory: true,
            publish: true,
            quiet: false,
            name: std::ptr::null(),
        }
    }
}

/// A periodic task (opaque): made by `latlab_periodic_new`, run once by
/// `latlab_periodic_run`, freed by `latlab_periodic_free`.
#[allow(non_camel_case_types)]
pub struct latlab_periodic {
    /// Read by `latlab_periodic_stop` from any thread or a signal handler.
    stopper: Stopper,
    /// [`READY`], [`RUNNING`], [`ENDED`] or [`BROKEN`].
    state: AtomicU8,
    /// Touched only by the thread that owns the state: the runner while
    /// [`RUNNING`]; any caller (once) while [`READY`] or [`ENDED`].
    inner: UnsafeCell<Inner>,
}

struct Inner {
    task: Periodic,
    summary: Option<Summary>,
    /// The set-up's warnings, one per line; empty before the run.
    warnings: CString,
}

const READY: u8 = 0;
const RUNNING: u8 = 1;
const ENDED: u8 = 2;
const BROKEN: u8 = 3;

/// Fills `config` with the defaults: not pinned, the thread's policy, abs, skip on
/// overrun, aligned start, memory locked, published, not quiet, no period.
#[no_mangle]
pub extern "C" fn latlab_periodic_config_default(config: *mut latlab_periodic_config) -> c_int {
    guard(|| {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and the caller gives a pointer to a config it owns;
        // `write` does not read the (possibly uninitialised) old value.
        unsafe { config.write(latlab_periodic_config::default()) };
        Ok(())
    })
}

/// Checks `config` and makes a task of it in `*task`; `*task` is NULL on failure.
#[no_mangle]
pub extern "C" fn latlab_periodic_new(
    config: *const latlab_periodic_config,
    task: *mut *mut latlab_periodic,
) -> c_int {
    guard(|| {
        if task.is_null() {
            return Err(Failure::null("task"));
        }
        // SAFETY: non-NULL; the caller gives a place for the task pointer.
        unsafe { task.write(std::ptr::null_mut()) };
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and points to a config the caller filled (copied here).
        let config = unsafe { config.read() };
        let periodic = builder_of(&config)?.build().map_err(|e| match e {
            periodic::PeriodicError::Setting { field, why } => {
                Failure::setting(&format!("config.{}", c_field(field)), why)
            }
            other => Failure::system(other.to_string()),
        })?;
        let made = Box::new(latlab_periodic {
            stopper: periodic.stopper(),
            state: AtomicU8::new(READY),
            inner: UnsafeCell::new(Inner {
                task: periodic,
                summary: None,
                warnings: CString::default(),
            }),
        });
        // SAFETY: checked non-NULL above.
        unsafe { task.write(Box::into_raw(made)) };
        Ok(())
    })
}

/// The C name of a setting latlab_rt names.
fn c_field(field: &str) -> &str {
    match field {
        "period" => "period_ns",
        "hybrid margin" => "hybrid_margin_ns",
        "overrun" => "catch_up_max",
        other => other,
    }
}

/// The Rust builder of a C config, its enumerations and pointers checked.
fn builder_of(c: &latlab_periodic_config) -> Result<periodic::Builder, Failure> {
    let mut b = Periodic::builder()
        .period(Duration::from_nanos(c.period_ns))
        .lock_memory(c.lock_memory)
        .publish(c.publish)
        .quiet(c.quiet);
    match c.cpu {
        -1 => {}
        cpu if cpu >= 0 => b = b.cpu(cpu as usize),
        _ => {
            return Err(Failure::setting(
                "config.cpu",
                "give a CPU number, or -1 for not pinned",
            ))
        }
    }
    b = match c.policy {
        p if p == latlab_policy::LATLAB_POLICY_INHERIT as c_int => b,
        p if p == latlab_policy::LATLAB_POLICY_FIFO as c_int => b.fifo(c.priority),
        p if p == latlab_policy::LATLAB_POLICY_RR as c_int => b.rr(c.priority),
        p if p == latlab_policy::LATLAB_POLICY_DEADLINE as c_int => b.policy(Policy::Deadline {
            runtime_ns: c.deadline_runtime_ns,
            deadline_ns: c.deadline_deadline_ns,
            period_ns: c.deadline_period_ns,
        }),
        _ => {
            return Err(Failure::setting(
                "config.policy",
                "use LATLAB_POLICY_INHERIT, _FIFO, _RR or _DEADLINE",
            ))
        }
    };
    b = match c.method {
        m if m == latlab_method::LATLAB_METHOD_ABS as c_int => b.method(Method::Abs),
        m if m == latlab_method::LATLAB_METHOD_TIMERFD as c_int => b.method(Method::Timerfd),
        m if m == latlab_method::LATLAB_METHOD_HYBRID as c_int => match c.hybrid_margin_ns {
            0 => b.hybrid_learned(),
            margin if margin > 0 => b.method(Method::Hybrid {
                margin: Some(Duration::from_nanos(margin as u64)),
            }),
            _ => {
                return Err(Failure::setting(
                    "config.hybrid_margin_ns",
                    "give a margin above 0, or 0 to learn it",
                ))
            }
        },
        _ => {
            return Err(Failure::setting(
                "config.method",
                "use LATLAB_METHOD_ABS, _TIMERFD or _HYBRID",
            ))
        }
    };
    b = match c.overrun {
        o if o == latlab_overrun::LATLAB_OVERRUN_SKIP as c_int => b.overrun(Overrun::Skip),
        o if o == latlab_overrun::LATLAB_OVERRUN_CATCH_UP as c_int => b.overrun(Overrun::CatchUp {
            max: c.catch_up_max,
        }),
        o if o == latlab_overrun::LATLAB_OVERRUN_HANDLER as c_int => {
            let Some(handler) = c.overrun_handler else {
                return Err(Failure::setting(
                    "config.overrun_handler",
                    "is NULL; give a handler with LATLAB_OVERRUN_HANDLER",
                ));
            };
            let user_data = UserData(c.overrun_user_data);
            b.overrun(Overrun::Handler(Box::new(move |info: &OverrunInfo| {
                let info = latlab_overrun_info {
                    cycle: info.cycle,
                    due_ns: info.due_ns,
                    ended_ns: info.ended_ns,
                    late_periods: info.late_periods,
                };
                match handler(&info, user_data.get()) {
                    0 => OverrunAction::Skip,
                    run => OverrunAction::CatchUp(run),
                }
            })))
        }
        _ => {
            return Err(Failure::setting(
                "config.overrun",
                "use LATLAB_OVERRUN_SKIP, _CATCH_UP or _HANDLER",
            ))
        }
    };
    b = match c.start {
        s if s == latlab_start::LATLAB_START_ALIGNED as c_int => b.start(Start::Aligned),
        s if s == latlab_start::LATLAB_START_AT as c_int => b.start(Start::At(c.start_at_ns)),
        s if s == latlab_start::LATLAB_START_NOW as c_int => b.start(Start::Now),
        _ => {
            return Err(Failure::setting(
                "config.start",
                "use LATLAB_START_ALIGNED, _AT or _NOW",
            ))
        }
    };
    if !c.name.is_null() {
        // SAFETY: non-NULL, and the caller gives a NUL-terminated string (copied here).
        let name = unsafe { CStr::from_ptr(c.name) };
        let Ok(name) = name.to_str() else {
            return Err(Failure::setting("config.name", "is not UTF-8"));
        };
        b = b.name(name);
    }
    Ok(b)
}

/// The caller's user data, handed back to its own functions on the loop's thread.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);

// SAFETY: the library never reads through the pointer; it only hands it back to the
// caller's functions, which the caller wrote for the thread that runs the loop.
unsafe impl Send for UserData {}

impl UserData {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    fn get(self) -> *mut c_void {
        self.0
    }
}

/// Runs the task on the calling thread until `step` returns non-zero,
/// `latlab_periodic_stop` or a signal (`latlab_periodic_stop_on_signals`) stops it.
/// The set-up (pinning, policy, locked memory) applies to this thread for the run
/// and is undone after it. A task runs once.
///
/// When the task publishes (the default), the pages in /dev/shm of latlab tasks whose
/// thread is gone (killed) are removed before it starts.
#[no_mangle]
pub extern "C" fn latlab_periodic_run(
    task: *mut latlab_periodic,
    step: latlab_step_fn,
    user_data: *mut c_void,
) -> c_int {
    guard(|| {
        if task.is_null() {
            return Err(Failure::null("task"));
        }
        let Some(step) = step else {
            return Err(Failure::null("step"));
        };
        // SAFETY: non-NULL, made by latlab_periodic_new and not freed (the caller's
        // part); shared, as `latlab_periodic_stop` may read it at the same time.
        let task = unsafe { &*task };
        if task
            .state
            .compare_exchange(READY, RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(Failure::state(
                "latlab_periodic_run: this task has run already (or runs now); make a new one",
            ));
        }
        // SAFETY: the state went from READY to RUNNING here, so this thread alone
        // touches `inner` until it stores another state.
        let inner = unsafe { &mut *task.inner.get() };
        let user_data = UserData(user_data);
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inner.task.run(|cycle| {
                let cycle = latlab_cycle {
                    index: cycle.index,
                    due_ns: cycle.due_ns,
                    woke_ns: cycle.woke_ns,
                    missed: cycle.missed,
                };
                match step(&cycle, user_data.get()) {
                    0 => ControlFlow::Continue(()),
                    _ => ControlFlow::Break(()),
                }
            })
        }));
        let summary = match ran {
            Ok(Ok(summary)) => summary,
            Ok(Err(e)) => {
                task.state.store(BROKEN, Ordering::Release);
                return Err(Failure::system(format!("latlab_periodic_run: {e}")));
            }
            Err(panic) => {
                task.state.store(BROKEN, Ordering::Release);
                std::panic::resume_unwind(panic);
            }
        };
        inner.warnings =
            CString::new(summary.warnings.join("\n").replace('\0', " ")).unwrap_or_default();
        inner.summary = Some(summary);
        task.state.store(ENDED, Ordering::Release);
        Ok(())
    })
}

/// Asks the task's loop to end at its next wake-up. Async-signal-safe and
/// thread-safe: it only stores a flag (no lock, no allocation, no last-error
/// message), so a signal handler or another thread may call it while the loop runs.
/// Returns `LATLAB_ERR_NULL` for a NULL task, `LATLAB_OK` otherwise.
#[no_mangle]
pub extern "C" fn latlab_periodic_stop(task: *const latlab_periodic) -> c_int {
    if task.is_null() {
        return latlab_status::LATLAB_ERR_NULL as c_int;
    }
    // SAFETY: non-NULL, made by latlab_periodic_new and not freed (the caller's part);
    // `stopper` is never written after creation, and `Stopper::stop` is one atomic
    // store, so this neither panics nor races with the loop.
    unsafe { (*task).stopper.stop() };
    latlab_status::LATLAB_OK as c_int
}

/// Ends every task of the process at its next wake-up when one of the `count`
/// `signals` arrives (typically SIGINT, SIGTERM and SIGHUP, so that a closed terminal
/// ends the task cleanly too). It installs a handler that only stores a flag, without
/// SA_RESTART, so a sleep it interrupts ends at once. Each signal is handled once: the
/// same signal again has its default effect, so a second Ctrl-C still ends an
/// application whose step hangs. Calling it again arms it anew for the tasks run after.
#[no_mangle]
pub extern "C" fn latlab_periodic_stop_on_signals(signals: *const c_int, count: usize) -> c_int {
    guard(|| {
        if signals.is_null() {
            return Err(Failure::null("signals"));
        }
        // SAFETY: non-NULL, and the caller gives `count` signal numbers there.
        let signals = unsafe { std::slice::from_raw_parts(signals, count) };
        if let Some(bad) = signals
            .iter()
            .find(|&&s| s <= 0 || s == libc::SIGKILL || s == libc::SIGSTOP || s > libc::SIGRTMAX())
        {
            return Err(Failure::setting(
                "signals",
                format!("{bad} cannot be handled; give signals such as SIGINT and SIGTERM"),
            ));
        }
        periodic::stop_on_signals(signals)
            .map_err(|e| Failure::system(format!("latlab_periodic_stop_on_signals: {e}")))
    })
}

/// Copies the statistics of the task's finished run to `*stats`.
/// `LATLAB_ERR_STATE` before the run has ended.
#[no_mangle]
pub extern "C" fn latlab_periodic_stats(
    task: *const latlab_periodic,
    stats: *mut latlab_stats,
) -> c_int {
    guard(|| {
        let inner = ended(task, "latlab_periodic_stats")?;
        if stats.is_null() {
            return Err(Failure::null("stats"));
        }
        let summary = inner
            .summary
            .as_ref()
            .ok_or_else(|| Failure::state("latlab_periodic_stats: the run kept no statistics"))?;
        // SAFETY: non-NULL; the caller gives a place for the statistics.
        unsafe { stats.write(latlab_stats::of(&summary.snapshot)) };
        Ok(())
    })
}

/// The set-up's warnings of the finished run (what the system refused and how to fix
/// it), one per line, "" when none; owned by the task, valid until it is freed.
/// NULL, with the last error set, for a NULL task or before the run has ended.
#[no_mangle]
pub extern "C" fn latlab_periodic_warnings(task: *const latlab_periodic) -> *const c_char {
    let mut text = std::ptr::null();
    guard(|| {
        text = ended(task, "latlab_periodic_warnings")?.warnings.as_ptr();
        Ok(())
    });
    text
}

/// The inner state of a task whose run has ended.
fn ended<'a>(task: *const latlab_periodic, function: &str) -> Result<&'a Inner, Failure> {
    if task.is_null() {
        return Err(Failure::null("task"));
    }
    // SAFETY: non-NULL, made by latlab_periodic_new and not freed (the caller's part).
    let task = unsafe { &*task };
    if task.state.load(Ordering::Acquire) != ENDED {
        return Err(Failure::state(format!(
            "{function}: the task's run has not ended; call it after latlab_periodic_run returns LATLAB_OK"
        )));
    }
    // SAFETY: ENDED is stored (with release) after the last write of `inner`, which
    // nothing writes again: shared reads only.
    Ok(unsafe { &*task.inner.get() })
}

/// Frees a task that is not running (NULL is ignored, like `free`): its statistics
/// and warnings go with it.
#[no_mangle]
pub extern "C" fn latlab_periodic_free(task: *mut latlab_periodic) {
    guard(|| {
        if task.is_null() {
            return Ok(());
        }
        // SAFETY: non-NULL, made by latlab_periodic_new (Box::into_raw) and freed
        // once (the caller's part).
        let owned = unsafe { &*task };
        if owned.state.load(Ordering::Acquire) == RUNNING {
            return Err(Failure::state(
                "latlab_periodic_free: the task is running; stop it and free it after latlab_periodic_run returns",
            ));
        }
        // SAFETY: as above; not running, so nothing else holds a reference.
        drop(unsafe { Box::from_raw(task) });
        Ok(())
    });
}

/// What a status code means (a static string; "unknown status" for a code this
/// library does not return).
#[no_mangle]
pub extern "C" fn latlab_periodic_strerror(code: c_int) -> *const c_char {
    latlab_status::ALL
        .iter()
        .find(|s| **s as c_int == code)
        .map_or(c"unknown status".as_ptr(), |s| s.text().as_ptr())
}

/// What the last failed call of this thread failed on, naming the setting and the
/// fix; "" when none failed. Valid until the next call into the library on this
/// thread.
#[no_mangle]
pub extern "C" fn latlab_periodic_last_error() -> *const c_char {
    status::last_error()
}

#[cfg(test)]
mod tests;
