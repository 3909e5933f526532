//! `stop_on_signals` in a test binary of its own (its flag is the process's): a signal
//! ends a task at its next wake-up, the same signal again has its default effect, and
//! arming again lets the next task run.

use latlab_rt::periodic::{stop_on_signals, Periodic};
use std::ops::ControlFlow;
use std::time::Duration;

/// The handler of `signal` now: whether it is the default one.
fn is_default(signal: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid place for the kernel to write the current
    // action into; a NULL new action changes nothing.
    let handler = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut current), 0);
        current.sa_sigaction
    };
    handler == libc::SIG_DFL
}

/// A 1 ms task run for at most `cycles` cycles, raising `signal` at cycle `raise_at`;
/// returns the cycles it ran.
fn run(cycles: u64, raise: Option<(u64, i32)>) -> u64 {
    let mut task = Periodic::builder()
        .period(Duration::from_millis(1))
        .lock_memory(false)
        .publish(false)
        .quiet(true)
        .build()
        .unwrap();
    let summary = task
        .run(|cycle| {
            if let Some((at, signal)) = raise {
                if cycle.index == at {
                    // SAFETY: raise sends a signal to this thread; its handler only
                    // stores a flag.
                    unsafe { libc::raise(signal) };
                }
            }
            match cycle.index + 1 == cycles {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    summary.counters.cycles
}

#[test]
fn a_signal_stops_the_task_once_and_the_next_one_is_the_default() {
    let signal = libc::SIGUSR2;
    stop_on_signals(&[signal]).unwrap();
    assert!(!is_default(signal));
    // Raised in cycle 5's step: the loop ends before cycle 6.
    assert_eq!(run(1_000, Some((5, signal))), 6);
    assert!(is_default(signal), "handled once, then the default");
    // Every task after it ends at once, until armed anew.
    assert_eq!(run(1_000, None), 0);
    stop_on_signals(&[signal]).unwrap();
    assert_eq!(run(20, None), 20);
}
