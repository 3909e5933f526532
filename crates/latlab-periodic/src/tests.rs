//! The boundary from the C side: codes and messages for bad input, a short real run,
//! stopping from another thread, the order of calls.

use super::*;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string valid until the next call.
    unsafe { CStr::from_ptr(latlab_periodic_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn config(period_ns: u64) -> latlab_periodic_config {
    let mut c = latlab_periodic_config::default();
    assert_eq!(latlab_periodic_config_default(&mut c), 0);
    c.period_ns = period_ns;
    c.publish = false;
    c.lock_memory = false;
    c.quiet = true;
    c
}

/// `latlab_periodic_new`'s code and message.
fn refused(c: &latlab_periodic_config) -> (c_int, String) {
    let mut task = null_mut();
    let code = latlab_periodic_new(c, &mut task);
    assert!(task.is_null(), "no task on failure");
    (code, last_error())
}

const SETTING: c_int = latlab_status::LATLAB_ERR_SETTING as c_int;
const NULL: c_int = latlab_status::LATLAB_ERR_NULL as c_int;
const STATE: c_int = latlab_status::LATLAB_ERR_STATE as c_int;

#[test]
fn bad_settings_are_refused_naming_the_field() {
    let cases: Vec<(latlab_periodic_config, &str)> = vec![
        (config(0), "config.period_ns: "),
        (config(999), "config.period_ns: "),
        (
            latlab_periodic_config {
                policy: latlab_policy::LATLAB_POLICY_FIFO as c_int,
                priority: 100,
                ..config(1_000_000)
            },
            "config.priority: ",
        ),
        (
            latlab_periodic_config {
                policy: 7,
                ..config(1_000_000)
            },
            "config.policy: ",
        ),
        (
            latlab_periodic_config {
                method: latlab_method::LATLAB_METHOD_HYBRID as c_int,
                hybrid_margin_ns: 1_000_000,
                ..config(1_000_000)
            },
            "config.hybrid_margin_ns: ",
        ),
        (
            latlab_periodic_config {
                overrun: latlab_overrun::LATLAB_OVERRUN_HANDLER as c_int,
                ..config(1_000_000)
            },
            "config.overrun_handler: ",
        ),
        (
            latlab_periodic_config {
                overrun: latlab_overrun::LATLAB_OVERRUN_CATCH_UP as c_int,
                catch_up_max: 0,
                ..config(1_000_000)
            },
            "config.catch_up_max: ",
        ),
        (
            latlab_periodic_config {
                cpu: -2,
                ..config(1_000_000)
            },
            "config.cpu: ",
        ),
        (
            latlab_periodic_config {
                start: 9,
                ..config(1_000_000)
            },
            "config.start: ",
        ),
    ];
    for (c, field) in cases {
        let (code, message) = refused(&c);
        assert_eq!(code, SETTING, "{field}");
        assert!(message.starts_with(field), "{message:?} names {field}");
    }
}

#[test]
fn null_pointers_are_errors_not_crashes() {
    let mut task = null_mut();
    assert_eq!(latlab_periodic_new(null(), &mut task), NULL);
    assert_eq!(last_error(), "config: is NULL; pass a valid pointer");
    assert_eq!(latlab_periodic_new(&config(1_000_000), null_mut()), NULL);
    assert_eq!(latlab_periodic_config_default(null_mut()), NULL);
    assert_eq!(
        latlab_periodic_run(null_mut(), Some(stop_at_10), null_mut()),
        NULL
    );
    assert_eq!(latlab_periodic_stop(null()), NULL);
    assert_eq!(latlab_periodic_stop_on_signals(null(), 2), NULL);
    assert_eq!(latlab_periodic_stats(null(), null_mut()), NULL);
    assert!(latlab_periodic_warnings(null()).is_null());
    latlab_periodic_free(null_mut());

    assert_eq!(latlab_periodic_new(&config(1_000_000), &mut task), 0);
    assert_eq!(latlab_periodic_run(task, None, null_mut()), NULL);
    assert_eq!(last_error(), "step: is NULL; pass a valid pointer");
    latlab_periodic_free(task);
}

#[test]
fn every_code_has_a_text() {
    for s in latlab_status::ALL {
        // SAFETY: static NUL-terminated strings.
        let text = unsafe { CStr::from_ptr(latlab_periodic_strerror(s as c_int)) };
        assert!(!text.is_empty());
        assert_ne!(text.to_str(), Ok("unknown status"), "{s:?}");
    }
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(latlab_periodic_strerror(-99)) };
    assert_eq!(unknown.to_str(), Ok("unknown status"));
}

extern "C" fn stop_at_10(cycle: *const latlab_cycle, count: *mut c_void) -> c_int {
    // SAFETY: the loop passes a valid cycle; the test passes a u64 counter.
    let (cycle, count) = unsafe { (&*cycle, &mut *(count as *mut u64)) };
    assert_eq!(cycle.index, *count, "cycles come in order");
    *count += 1;
    c_int::from(cycle.index == 9)
}

#[test]
fn a_run_counts_its_cycles_and_runs_once() {
    let mut task = null_mut();
    let c = latlab_periodic_config {
        method: latlab_method::LATLAB_METHOD_HYBRID as c_int,
        hybrid_margin_ns: 100_000,
        ..config(1_000_000)
    };
    assert_eq!(latlab_periodic_new(&c, &mut task), 0);
    let mut stats = latlab_stats::of(&Default::default());
    assert_eq!(latlab_periodic_stats(task, &mut stats), STATE);
    assert!(last_error().starts_with("latlab_periodic_stats: the task's run has not ended"));

    let mut count: u64 = 0;
    let code = latlab_periodic_run(
        task,
        Some(stop_at_10),
        &mut count as *mut u64 as *mut c_void,
    );
    assert_eq!(code, 0, "{}", last_error());
    assert_eq!(latlab_periodic_stats(task, &mut stats), 0);
    assert_eq!(stats.cycles, 10);
    assert_eq!(count, 10);
    assert!(stats.wake_min_ns <= stats.wake_p50_ns);
    assert!(stats.wake_p50_ns <= stats.wake_p99_ns);
    assert!(stats.wake_p99_ns <= stats.wake_p999_ns);
    assert!(stats.wake_min_ns <= stats.wake_max_ns);
    assert!(stats.compute_min_ns <= stats.compute_mean_ns);
    assert!(stats.compute_mean_ns <= stats.compute_max_ns);
    assert_eq!(stats.hybrid_margin_ns, 100_000);
    assert!(!latlab_periodic_warnings(task).is_null());

    let code = latlab_periodic_run(
        task,
        Some(stop_at_10),
        &mut count as *mut u64 as *mut c_void,
    );
    assert_eq!(code, STATE);
    assert_eq!(count, 10, "a second run runs nothing");
    latlab_periodic_free(task);
}

/// Counts its cycles into the `AtomicU64` at `data`, and never stops the run.
extern "C" fn forever(_: *const latlab_cycle, data: *mut c_void) -> c_int {
    // SAFETY: the test passes a pointer to an AtomicU64 that outlives the run.
    let ran = unsafe { &*(data as *const std::sync::atomic::AtomicU64) };
    ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    0
}

#[test]
fn stop_from_another_thread_ends_the_run() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let mut task = null_mut();
    assert_eq!(latlab_periodic_new(&config(1_000_000), &mut task), 0);
    let shared = task as usize;
    let ran = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&ran);
    let stopper = std::thread::spawn(move || {
        // Once the run has cycled: a stop before its first cycle is a run of none.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while seen.load(Ordering::Relaxed) < 5 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        latlab_periodic_stop(shared as *const latlab_periodic)
    });
    let data = Arc::as_ptr(&ran) as *mut c_void;
    assert_eq!(latlab_periodic_run(task, Some(forever), data), 0);
    assert_eq!(stopper.join().unwrap(), 0);
    let mut stats = latlab_stats::of(&Default::default());
    assert_eq!(latlab_periodic_stats(task, &mut stats), 0);
    assert!(stats.cycles > 0);
    assert_eq!(stats.hybrid_margin_ns, LATLAB_UNKNOWN);
    latlab_periodic_free(task);
}

#[test]
fn statistics_without_a_cycle_are_unknown_not_zero() {
    let stats = latlab_stats::of(&Default::default());
    assert_eq!(stats.cycles, 0);
    for v in [
        stats.hybrid_margin_ns,
        stats.wake_min_ns,
        stats.wake_mean_ns,
        stats.wake_p99_ns,
        stats.compute_max_ns,
        stats.compute_p50_ns,
    ] {
        assert_eq!(v, LATLAB_UNKNOWN);
    }
}

#[test]
fn signals_that_cannot_be_handled_are_refused() {
    let signals = [libc::SIGKILL];
    assert_eq!(
        latlab_periodic_stop_on_signals(signals.as_ptr(), 1),
        SETTING
    );
    assert!(last_error().starts_with("signals: 9 cannot be handled"));
}

#[test]
fn a_panic_becomes_the_internal_error_code_and_its_message() {
    let code = status::guard(|| panic!("the step's invariant broke"));
    assert_eq!(code, latlab_status::LATLAB_ERR_INTERNAL as c_int);
    let message = last_error();
    assert!(
        message.contains("the step's invariant broke") && message.contains("please report it"),
        "{message}"
    );
}
