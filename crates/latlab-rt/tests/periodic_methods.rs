//! A real 2 s run of the periodic task per waiting method, at 1 kHz: invariants only
//! (this machine's latencies are its own).

use latlab_rt::periodic::{shm, Method, Periodic};
use std::ops::ControlFlow;
use std::time::Duration;

const PERIOD: i64 = 1_000_000;

fn two_seconds(method: Method) {
    let mut task = Periodic::builder()
        .period(Duration::from_nanos(PERIOD as u64))
        .method(method)
        .lock_memory(false)
        .quiet(true)
        .build()
        .unwrap();
    let page = shm::path_of(std::process::id(), latlab_rt::sched::gettid());
    let (mut first, mut last_due, mut off_grid, mut early, mut steps) = (None, 0, 0, 0, 0u64);
    let mut page_seen = false;
    let summary = task
        .run(|cycle| {
            let first = *first.get_or_insert(cycle.due_ns);
            if (cycle.due_ns - first) % PERIOD != 0 || cycle.due_ns <= last_due {
                off_grid += 1;
            }
            if cycle.latency_ns() < 0 {
                early += 1;
            }
            last_due = cycle.due_ns;
            steps += 1;
            page_seen |= cycle.index == 100 && page.exists();
            match cycle.due_ns - first >= 2_000 * PERIOD {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    let c = &summary.counters;
    assert_eq!(
        off_grid, 0,
        "deadlines off the period grid or not increasing"
    );
    assert_eq!(early, 0, "a wake-up before its deadline");
    assert_eq!(c.cycles, steps);
    assert_eq!(
        c.cycles + c.missed,
        ((c.last_due_ns - c.first_due_ns) / PERIOD + 1) as u64
    );
    assert_eq!(summary.snapshot.wake_counts.iter().sum::<u64>(), steps);
    assert_eq!(summary.snapshot.compute_counts.iter().sum::<u64>(), steps);
    assert!(c.compute_min_ns.unwrap() >= 0);
    assert!(c.wake_min_ns.unwrap() >= 0);
    // A margin given is in use; one to learn is learned within the first second; the
    // other methods have none.
    match method {
        Method::Hybrid {
            margin: Some(given),
        } => assert_eq!(c.margin_ns, Some(given.as_nanos() as i64)),
        Method::Hybrid { margin: None } => {
            // Its bounds are the learning's own (unit tests check them).
            c.margin_ns.expect("a margin learned in 2 s");
        }
        _ => assert_eq!(c.margin_ns, None),
    }
    assert!(page_seen, "the page was not published while the task ran");
    assert!(!page.exists(), "{} left behind", page.display());
}

#[test]
fn abs_runs_two_seconds_on_its_grid() {
    two_seconds(Method::Abs);
}

#[test]
fn timerfd_runs_two_seconds_on_its_grid() {
    two_seconds(Method::Timerfd);
}

#[test]
fn hybrid_runs_two_seconds_on_its_grid() {
    two_seconds(Method::Hybrid {
        margin: Some(Duration::from_micros(100)),
    });
}

#[test]
fn hybrid_learning_its_margin_runs_two_seconds_on_its_grid() {
    two_seconds(Method::Hybrid { margin: None });
}
