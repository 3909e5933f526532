//! The loop on a simulated clock: deadlines, overrun policies, starts, waiting
//! methods, stopping; and one real run publishing its page.

use super::*;
use crate::wake::Wake;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;

/// A virtual CLOCK_MONOTONIC: waits jump to the instant asked for plus a lateness the
/// test chooses; the step advances it to take time; with `tick`, every read advances
/// it (so spinning ends).
#[derive(Clone)]
struct Sim {
    now: Rc<Cell<i64>>,
    tick: i64,
    /// Lateness of the n-th wait.
    late: Rc<dyn Fn(u64) -> i64>,
    waits: Rc<Cell<u64>>,
    /// Instants each wait was asked for.
    asked: Rc<RefCell<Vec<i64>>>,
    /// A periodic timer's first deadline and period, once armed (timerfd-like).
    armed: Option<(i64, i64)>,
    reported: u64,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.now.get()).finish()
    }
}

impl Sim {
    fn at(now: i64, late: impl Fn(u64) -> i64 + 'static) -> Sim {
        Sim {
            now: Rc::new(Cell::new(now)),
            tick: 0,
            late: Rc::new(late),
            waits: Rc::new(Cell::new(0)),
            asked: Rc::new(RefCell::new(Vec::new())),
            armed: None,
            reported: 0,
        }
    }

    fn advance(&self, ns: i64) {
        self.now.set(self.now.get() + ns);
    }
}

impl WakeSource for Sim {
    fn now_ns(&self) -> i64 {
        let now = self.now.get() + self.tick;
        self.now.set(now);
        now
    }

    fn arm(&mut self, first: i64, period: i64) -> Result<(), RtError> {
        self.armed = Some((first, period));
        Ok(())
    }

    fn wait(&mut self, expected: i64, _: &AtomicBool) -> Result<Wake, WaitError> {
        let n = self.waits.get();
        self.waits.set(n + 1);
        self.asked.borrow_mut().push(expected);
        let late = (self.late)(n);
        if let Some((first, period)) = self.armed {
            // A periodic kernel timer: returns at once for expirations not read yet,
            // else at the next one (plus the lateness); reports how many expired.
            let now = self.now.get();
            let mut due_count = if now >= first {
                ((now - first) / period + 1) as u64
            } else {
                0
            };
            if due_count <= self.reported {
                let next = first + self.reported as i64 * period;
                self.now.set(next + late);
                due_count = ((next + late - first) / period + 1) as u64;
            }
            let expirations = due_count - self.reported;
            self.reported = due_count;
            return Ok(Wake {
                at_ns: self.now.get(),
                expirations: Some(expirations),
            });
        }
        let at = self.now.get().max(expected) + late;
        self.now.set(at);
        Ok(Wake {
            at_ns: at,
            expirations: None,
        })
    }
}

fn quiet(period_ns: i64) -> Builder {
    Periodic::builder()
        .period(Duration::from_nanos(period_ns as u64))
        .lock_memory(false)
        .publish(false)
        .quiet(true)
}

/// Periods from the first cycle's deadline to the last's, both included.
fn elapsed_periods(c: &shm::CountersCopy, period: i64) -> u64 {
    ((c.last_due_ns - c.first_due_ns) / period + 1) as u64
}

#[test]
fn deadlines_never_drift_over_a_million_cycles() {
    // Late wake-ups of up to 97 µs and a step of 300 µs at 1 ms: every deadline is
    // still first + n·period.
    let sim = Sim::at(5 * MS + 123, |n| ((n * 7919) % 97) as i64 * US);
    let clock = sim.clone();
    let mut task = quiet(MS).build_on(sim).unwrap();
    let mut first = None;
    let mut off_grid = 0u64;
    let summary = task
        .run(|cycle| {
            let first = *first.get_or_insert(cycle.due_ns);
            if cycle.due_ns != first + cycle.index as i64 * MS {
                off_grid += 1;
            }
            clock.advance(300 * US);
            match cycle.index + 1 == 1_000_000 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    assert_eq!(off_grid, 0);
    let c = summary.counters;
    assert_eq!(c.cycles, 1_000_000);
    assert_eq!(c.missed, 0);
    assert_eq!(c.overruns, 0);
    assert_eq!(c.last_due_ns - c.first_due_ns, 999_999 * MS);
    assert_eq!(c.wake_max_ns, Some(96 * US));
    assert_eq!(c.compute_min_ns, Some(300 * US));
    assert_eq!(summary.snapshot.wake_counts.iter().sum::<u64>(), 1_000_000);
}

/// Runs 30 cycles at 1 ms, on time, whose 11th step (index 10) takes 3.5 periods.
fn overrun_run(overrun: Overrun) -> (Summary, Vec<(u64, i64, i64)>) {
    let sim = Sim::at(0, |_| 0);
    let clock = sim.clone();
    let mut task = quiet(MS).overrun(overrun).build_on(sim).unwrap();
    let mut seen = Vec::new();
    let summary = task
        .run(|cycle| {
            seen.push((cycle.index, cycle.due_ns, cycle.latency_ns()));
            clock.advance(if cycle.index == 10 {
                3 * MS + MS / 2
            } else {
                100 * US
            });
            match cycle.index == 29 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    (summary, seen)
}

#[test]
fn skip_goes_on_at_the_next_deadline_ahead_and_counts_the_periods_missed() {
    let (summary, seen) = overrun_run(Overrun::Skip);
    let c = &summary.counters;
    let d10 = seen[10].1;
    // Ended at d10 + 3.5 ms: d10+1, +2 and +3 ms passed; the next cycle is at +4 ms.
    assert_eq!(seen[11].1, d10 + 4 * MS);
    assert_eq!(seen[11].2, 0);
    assert_eq!((c.overruns, c.missed, c.caught_up), (1, 3, 0));
    assert_eq!(c.cycles + c.missed, elapsed_periods(c, MS));
}

#[test]
fn catch_up_runs_the_latest_late_deadlines_at_once() {
    let (summary, seen) = overrun_run(Overrun::CatchUp { max: 2 });
    let c = &summary.counters;
    let d10 = seen[10].1;
    // Three deadlines passed; the two latest run at once, the oldest is missed.
    assert_eq!(seen[11].1, d10 + 2 * MS);
    assert_eq!(seen[12].1, d10 + 3 * MS);
    assert_eq!(seen[13].1, d10 + 4 * MS);
    assert_eq!(seen[11].2, MS + MS / 2);
    assert_eq!(seen[12].2, MS / 2 + 100 * US);
    assert_eq!((c.overruns, c.missed, c.caught_up), (1, 1, 2));
    assert_eq!(c.cycles + c.missed, elapsed_periods(c, MS));
}

#[test]
fn a_handler_is_told_each_overrun_and_decides() {
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = told.clone();
    let handler = move |info: &OverrunInfo| {
        log.lock().unwrap().push(*info);
        OverrunAction::CatchUp(u64::MAX)
    };
    let (summary, seen) = overrun_run(Overrun::Handler(Box::new(handler)));
    let told = told.lock().unwrap();
    assert_eq!(told.len(), 1);
    let d10 = seen[10].1;
    assert_eq!(
        told[0],
        OverrunInfo {
            cycle: 10,
            due_ns: d10,
            ended_ns: d10 + 3 * MS + MS / 2,
            late_periods: 3,
        }
    );
    // All three late deadlines run: nothing is missed.
    assert_eq!(seen[11].1, d10 + MS);
    assert_eq!(summary.counters.missed, 0);
    assert_eq!(summary.counters.caught_up, 3);
}

fn first_due(start: Start, now: i64, period: i64) -> i64 {
    let sim = Sim::at(now, |_| 0);
    let mut task = quiet(period).start(start).build_on(sim).unwrap();
    let mut due = 0;
    task.run(|cycle| {
        due = cycle.due_ns;
        ControlFlow::Break(())
    })
    .unwrap();
    due
}

#[test]
fn the_first_deadline_is_on_the_period_grid_or_the_instant_given() {
    assert_eq!(first_due(Start::Aligned, 12_345_678, MS), 13 * MS);
    assert_eq!(first_due(Start::Aligned, 13 * MS, MS), 14 * MS);
    assert_eq!(
        first_due(Start::At(20 * MS + 7), 12_345_678, MS),
        20 * MS + 7
    );
    assert_eq!(first_due(Start::At(500), 12_345_678, MS), 13 * MS + 500);
    assert_eq!(first_due(Start::Now, 12_345_678, MS), 13_345_678);
}

#[test]
fn a_periodic_timer_woken_late_runs_the_latest_deadline_and_counts_the_others() {
    // The third wake-up is 2.5 periods late: the timer reports three expirations.
    let sim = Sim::at(0, |n| if n == 2 { 2 * MS + MS / 2 } else { 10 * US });
    let mut task = quiet(MS).method(Method::Timerfd).build_on(sim).unwrap();
    let mut dues = Vec::new();
    let summary = task
        .run(|cycle| {
            dues.push(cycle.due_ns);
            match cycle.index == 9 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    let first = dues[0];
    assert_eq!(dues[1], first + MS);
    assert_eq!(dues[2], first + 4 * MS);
    assert_eq!(dues[3], first + 5 * MS);
    let c = &summary.counters;
    assert_eq!(c.missed, 2);
    assert_eq!(c.cycles + c.missed, elapsed_periods(c, MS));
}

#[test]
fn hybrid_sleeps_to_the_margin_and_spins_to_the_deadline() {
    let mut sim = Sim::at(0, |_| 30 * US);
    sim.tick = 50;
    let asked = sim.asked.clone();
    let margin = Duration::from_micros(200);
    let mut task = quiet(MS)
        .method(Method::Hybrid {
            margin: Some(margin),
        })
        .build_on(sim)
        .unwrap();
    let mut dues = Vec::new();
    let summary = task
        .run(|cycle| {
            dues.push(cycle.due_ns);
            assert!(cycle.latency_ns() >= 0 && cycle.latency_ns() <= 50);
            match cycle.index == 99 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    let asked = asked.borrow();
    assert_eq!(asked.len(), 100);
    for (asked, due) in asked.iter().zip(&dues) {
        assert_eq!(*asked, due - 200 * US);
    }
    assert_eq!(summary.counters.margin_ns, Some(200 * US));
}

#[test]
fn a_learned_margin_covers_the_usual_wake_ups_within_a_tenth_of_the_period() {
    // 1 in 50 wake-ups is 40 µs late, the others 10 µs: after a second the margin
    // is the 99th percentile (40 µs) plus a quarter.
    let learned = |rare_every: u64, rare_late: i64| {
        let mut sim = Sim::at(0, move |n| {
            if n % rare_every == 7 % rare_every {
                rare_late
            } else {
                10 * US
            }
        });
        sim.tick = 100;
        let asked = sim.asked.clone();
        let mut task = quiet(MS).hybrid_learned().build_on(sim).unwrap();
        let summary = task
            .run(|cycle| match cycle.index == 2_999 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            })
            .unwrap();
        let margin = summary.counters.margin_ns.expect("a margin learned");
        // From then on, the loop slept to the margin before the deadline.
        let last = *asked.borrow().last().unwrap();
        assert_eq!(last, summary.counters.last_due_ns - margin);
        margin
    };
    let margin = learned(50, 40 * US);
    assert!(
        (50 * US..=50 * US + 50 * US / 1000).contains(&margin),
        "{margin}"
    );
    // Rarer spikes (1 in 500) are not the usual lateness: 10 µs and a quarter.
    let margin = learned(500, 40 * US);
    assert!((12_500..=12_500 + 13).contains(&margin), "{margin}");
    // A machine whose usual lateness is 400 µs spins at most a tenth of the period.
    let margin = learned(2, 400 * US);
    assert_eq!(margin, 100 * US);
}

#[test]
fn a_stopper_ends_the_loop_at_its_next_wake_up() {
    let sim = Sim::at(0, |_| 0);
    let mut task = quiet(MS).build_on(sim).unwrap();
    let stopper = task.stopper();
    let summary = task
        .run(|cycle| {
            if cycle.index == 5 {
                stopper.stop();
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(summary.counters.cycles, 6);
}

#[test]
fn settings_out_of_range_name_the_setting() {
    let field = |b: Builder| match b.build() {
        Err(PeriodicError::Setting { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(Periodic::builder()), "period");
    assert_eq!(field(quiet(MS).fifo(100)), "priority");
    assert_eq!(field(quiet(MS).cpu(100_000)), "cpu");
    assert_eq!(
        field(quiet(MS).method(Method::Hybrid {
            margin: Some(Duration::from_millis(2))
        })),
        "hybrid margin"
    );
    assert_eq!(
        field(quiet(MS).overrun(Overrun::CatchUp { max: 0 })),
        "overrun"
    );
    assert_eq!(
        field(quiet(MS).method(Method::Hybrid {
            margin: Some(Duration::ZERO)
        })),
        "hybrid margin"
    );
    let deadline = sched::Policy::Deadline {
        runtime_ns: 100_000,
        deadline_ns: MS as u64,
        period_ns: MS as u64,
    };
    assert_eq!(field(quiet(MS).policy(deadline).cpu(0)), "cpu");
}

#[test]
fn a_task_runs_once() {
    let sim = Sim::at(0, |_| 0);
    let mut task = quiet(MS).build_on(sim).unwrap();
    let once = |cycle: &Cycle| match cycle.index == 2 {
        true => ControlFlow::Break(()),
        false => ControlFlow::Continue(()),
    };
    assert_eq!(task.run(once).unwrap().counters.cycles, 3);
    assert!(matches!(task.run(once), Err(PeriodicError::RanAlready)));
}

#[test]
fn a_real_task_publishes_its_page_while_it_runs_and_removes_it() {
    let mut task = Periodic::builder()
        .period(Duration::from_micros(500))
        .lock_memory(false)
        .name("published")
        .quiet(true)
        .build()
        .unwrap();
    let path = shm::path_of(std::process::id(), sched::gettid());
    let mut seen = None;
    let summary = task
        .run(|cycle| {
            if cycle.index == 40 {
                let mut reader = shm::Reader::open(&path).unwrap();
                seen = reader.snapshot().ok();
            }
            match cycle.index == 99 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        })
        .unwrap();
    let seen = seen.unwrap();
    assert_eq!(seen.name, "published");
    assert_eq!(seen.period_ns, 500_000);
    assert!(!seen.ended);
    assert_eq!(seen.counters.cycles, 40);
    assert_eq!(seen.wake_counts.iter().sum::<u64>(), 40);
    assert!(!path.exists(), "{} left behind", path.display());
    let c = &summary.counters;
    assert_eq!(c.cycles, 100);
    assert_eq!(c.cycles + c.missed, elapsed_periods(c, 500_000));
    assert!(summary.snapshot.ended);
}

#[test]
fn the_page_says_the_nice_value_the_task_runs_at() {
    // On a thread of its own: the task sets its policy on the thread that runs it.
    let seen = std::thread::spawn(|| {
        let mut task = Periodic::builder()
            .period(Duration::from_micros(500))
            .policy(Policy::Batch { nice: 7 })
            .lock_memory(false)
            .quiet(true)
            .build()
            .unwrap();
        let path = shm::path_of(std::process::id(), sched::gettid());
        let mut seen = None;
        task.run(|cycle| {
            if cycle.index == 5 {
                seen = shm::Reader::open(&path).unwrap().snapshot().ok();
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        seen.unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(seen.policy, libc::SCHED_BATCH as u32);
    assert_eq!(seen.priority as i32, 7);
}

/// [`overrun_run`]'s loop, stopped (not broken) at the end of cycle `stop_at`'s step:
/// the loop ends at its next turn, after what the overrun did.
fn stopped_after(overrun: Overrun, stop_at: u64) -> Summary {
    let sim = Sim::at(0, |_| 0);
    let clock = sim.clone();
    let mut task = quiet(MS).overrun(overrun).build_on(sim).unwrap();
    let stopper = task.stopper();
    task.run(|cycle| {
        clock.advance(if cycle.index == 10 {
            3 * MS + MS / 2
        } else {
            100 * US
        });
        if cycle.index == stop_at {
            stopper.stop();
        }
        ControlFlow::Continue(())
    })
    .unwrap()
}

#[test]
fn a_stop_right_after_an_overrun_still_adds_up() {
    // Skip: the three deadlines the overrun passed are missed, and passed.
    let c = stopped_after(Overrun::Skip, 10).counters;
    assert_eq!((c.cycles, c.missed, c.overruns), (11, 3, 1));
    assert_eq!(c.cycles + c.missed, elapsed_periods(&c, MS));
    // Catch-up: stopped in the first late cycle, only that one was caught up.
    let c = stopped_after(Overrun::CatchUp { max: 2 }, 11).counters;
    assert_eq!((c.cycles, c.missed, c.caught_up), (12, 1, 1));
    assert_eq!(c.cycles + c.missed, elapsed_periods(&c, MS));
}

#[test]
fn a_reader_copies_counters_and_counts_of_one_cycle_while_the_task_writes() {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    // The task runs until the reader has taken enough copies (at most 5 s).
    let enough = Arc::new(AtomicBool::new(false));
    let done = enough.clone();
    let task = std::thread::spawn(move || {
        let mut task = Periodic::builder()
            .period(Duration::from_micros(500))
            .lock_memory(false)
            .quiet(true)
            .build()
            .unwrap();
        tid_tx.send(sched::gettid()).unwrap();
        task.run(
            |cycle| match done.load(Ordering::Relaxed) || cycle.index == 10_000 {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            },
        )
        .unwrap()
    });
    let path = shm::path_of(std::process::id(), tid_rx.recv().unwrap());
    let mut copies = 0;
    while !task.is_finished() {
        let Ok(mut reader) = shm::Reader::open(&path) else {
            std::thread::yield_now();
            continue;
        };
        while let Some(copy) = reader.snapshot().ok().filter(|s| !s.ended) {
            let c = &copy.counters;
            assert_eq!(copy.wake_counts.iter().sum::<u64>(), c.cycles);
            assert_eq!(copy.compute_counts.iter().sum::<u64>(), c.cycles);
            copies += 1;
            if copies == 100 {
                enough.store(true, Ordering::Relaxed);
            }
        }
    }
    assert!(task.join().unwrap().counters.cycles > 0);
    assert!(copies > 0, "no copy taken while the task ran");
}

#[test]
fn a_page_name_gives_its_process_and_thread() {
    let name = shm::path_of(12, 34);
    let name = name.file_name().unwrap().to_str().unwrap();
    assert_eq!(shm::page_ids(name), Some((12, 34)));
    for other in [
        "latlab-12",
        "latlab-x-34",
        "latlab-12-",
        "rtla-12-34",
        "latlab-12-34-5",
    ] {
        assert_eq!(shm::page_ids(other), None, "{other}");
    }
}
