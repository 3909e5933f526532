//! The attribution on synthetic record sequences: one per case of the module's rules,
//! and random well-formed sequences against the invariants.

use std::sync::Arc;

use latlab_model::explain::{Cause, Coverage, Explanation, Stage};
use latlab_model::Nanos;
use proptest::prelude::*;

use super::*;
use crate::{Comm, Record, Task, What};

const US: u64 = 1_000;
const DUE: u64 = 1_000_000_000;
const TID: i32 = 456;
const CPU: u32 = 1;

fn task(comm: &str, pid: i32, prio: i32) -> Task {
    Task {
        pid,
        prio,
        comm: Comm::new(comm.as_bytes()),
    }
}

fn idle() -> Task {
    task("swapper/1", 0, 120)
}

fn me() -> Task {
    task("latlab-m0", TID, 4)
}

fn spinner() -> Task {
    task("spin", 200, 0)
}

fn stress() -> Task {
    task("stress", 123, 120)
}

/// A CPU's records, each stamped relative to the deadline and run by `pid`.
#[derive(Default)]
struct Cpu(Vec<Record>);

impl Cpu {
    fn at(mut self, t: i64, pid: i32, what: What) -> Cpu {
        self.0.push(Record {
            ts: (DUE as i64 + t) as u64,
            cpu: CPU,
            pid,
            what,
        });
        self
    }

    fn switch(self, t: i64, prev: Task, next: Task) -> Cpu {
        let what = What::Switch {
            prev,
            prev_state: 1,
            next,
        };
        self.at(t, prev.pid, what)
    }

    fn waking(self, t: i64, current: i32, woken: Task) -> Cpu {
        let what = What::Waking {
            task: woken,
            target_cpu: CPU as i32,
        };
        self.at(t, current, what)
    }

    fn vector_entry(self, t: i64, current: i32) -> Cpu {
        let what = What::VectorEntry {
            name: Arc::from("local_timer"),
            vector: 236,
        };
        self.at(t, current, what)
    }

    fn vector_exit(self, t: i64, current: i32) -> Cpu {
        let what = What::VectorExit {
            name: Arc::from("local_timer"),
            vector: 236,
        };
        self.at(t, current, what)
    }

    fn irq(self, from: i64, to: i64, current: i32) -> Cpu {
        let entry = What::IrqEntry {
            irq: 24,
            name: Arc::from("virtio0-input.0"),
        };
        let exit = What::IrqExit { irq: 24, ret: 1 };
        self.at(from, current, entry).at(to, current, exit)
    }

    fn softirq(self, from: i64, to: i64, current: i32, vec: u32) -> Cpu {
        self.at(from, current, What::SoftirqEntry { vec }).at(
            to,
            current,
            What::SoftirqExit { vec },
        )
    }

    /// The measuring thread's timer: `local_timer` from `entry` to `exit`, waking it at
    /// `waking`, interrupting `current`.
    fn timer(self, entry: i64, waking: i64, exit: i64, current: i32) -> Cpu {
        self.vector_entry(entry, current)
            .waking(waking, current, me())
            .vector_exit(exit, current)
    }

    fn explain(&self, wake: i64) -> Explanation {
        let window = SpikeWindow {
            cpu: CPU as usize,
            tid: TID,
            due_ns: DUE,
            wake_ns: (DUE as i64 + wake) as u64,
            margin_ns: SpikeWindow::DEFAULT_MARGIN_NS,
        };
        let spike = SpikeOf {
            phase: "main".to_owned(),
            thread: 0,
            at_ns: Nanos(42),
        };
        let explanation = attribute(window.select(&self.0), &window, Coverage::Complete, spike);
        assert_eq!(explanation.parts_total_ns(), explanation.latency_ns);
        explanation
    }
}

fn us(n: i64) -> i64 {
    n * US as i64
}

/// The parts as (cause label, stage, µs), for compact assertions.
fn summary(explanation: &Explanation) -> Vec<(String, Stage, f64)> {
    explanation
        .parts
        .iter()
        .map(|part| {
            let label = match &part.cause {
                Cause::Unexplained { current } => format!("unexplained {current:?}"),
                cause => cause.label(),
            };
            (label, part.stage, part.duration_ns.0 as f64 / 1e3)
        })
        .collect()
}

fn unexplained(current: &str) -> String {
    format!("unexplained {:?}", Some(current))
}

#[test]
fn fifo_spinner_that_kept_the_cpu_is_the_thread_part() {
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .waking(-us(500), 0, spinner())
        .switch(-us(499), idle(), spinner())
        .timer(us(2), us(4), us(6), 200)
        .switch(us(306), spinner(), me());
    let explanation = cpu.explain(us(310));
    assert_eq!(
        summary(&explanation),
        [
            (unexplained("spin:200"), Stage::Delivery, 2.0),
            ("timer interrupt".into(), Stage::Handler, 2.0),
            ("timer interrupt".into(), Stage::Scheduling, 2.0),
            (
                "thread spin:200 (fifo/rr 99)".into(),
                Stage::Scheduling,
                300.0
            ),
            ("return to user".into(), Stage::Return, 4.0),
        ]
    );
    let stages = explanation.stages;
    let as_us = |ns: Option<Nanos>| ns.map(|ns| ns.0 / 1000);
    assert_eq!(
        [
            stages.delivery_ns,
            stages.handler_ns,
            stages.scheduling_ns,
            stages.return_ns
        ]
        .map(as_us),
        [Some(2), Some(2), Some(302), Some(4)]
    );
    // The spinner ran since its switch-in, before the deadline, but the Thread part
    // starts in the window: only the first part may start before the deadline.
    assert_eq!(explanation.parts[3].start_ns, Nanos(us(6)));
    assert_eq!((explanation.cpu, explanation.at_ns), (Some(1), Nanos(42)));
}

#[test]
fn irq_nested_in_a_thread_is_its_own_part_and_the_thread_net_of_it() {
    let cpu = Cpu::default()
        .switch(-us(100), idle(), stress())
        .timer(us(1), us(2), us(3), 123)
        .irq(us(50), us(70), 123)
        .switch(us(100), stress(), me());
    let parts = summary(&cpu.explain(us(101)));
    assert_eq!(
        parts[3..6],
        [
            ("thread stress:123 (nice 0)".into(), Stage::Scheduling, 47.0),
            ("irq 24 virtio0-input.0".into(), Stage::Scheduling, 20.0),
            ("thread stress:123 (nice 0)".into(), Stage::Scheduling, 30.0),
        ]
    );
}

#[test]
fn net_rx_softirq_after_the_timer_is_a_softirq_part() {
    let cpu = Cpu::default()
        .switch(-us(100), idle(), stress())
        .timer(us(1), us(2), us(3), 123)
        .softirq(us(3), us(83), 123, 3)
        .switch(us(90), stress(), me());
    let parts = summary(&cpu.explain(us(91)));
    assert_eq!(parts[3], ("softirq NET_RX".into(), Stage::Scheduling, 80.0));
}

#[test]
fn nmi_takes_its_time_out_of_what_it_interrupted() {
    let cpu = Cpu::default()
        .switch(-us(100), idle(), stress())
        .timer(us(1), us(2), us(3), 123)
        .at(
            us(60),
            123,
            What::Nmi {
                handler: 0xffff_ffff_8100_0000,
                delta_ns: us(40),
            },
        )
        .switch(us(100), stress(), me());
    let explanation = cpu.explain(us(101));
    let parts = summary(&explanation);
    assert_eq!(
        parts[3..6],
        [
            ("thread stress:123 (nice 0)".into(), Stage::Scheduling, 17.0),
            ("nmi 0xffffffff81000000".into(), Stage::Scheduling, 40.0),
            ("thread stress:123 (nice 0)".into(), Stage::Scheduling, 40.0),
        ]
    );
    assert_eq!(explanation.parts[4].start_ns, Nanos(us(20)));
}

#[test]
fn idle_cpu_with_a_late_timer_is_unexplained_not_idle_exit() {
    // No event between the deadline and the timer: the host may have run something
    // else; the guest cannot say, and the switch from idle is not recorded either.
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .timer(us(200), us(202), us(205), 0);
    assert_eq!(
        summary(&cpu.explain(us(230))),
        [
            (unexplained("idle"), Stage::Delivery, 200.0),
            ("timer interrupt".into(), Stage::Handler, 2.0),
            ("timer interrupt".into(), Stage::Scheduling, 3.0),
            ("scheduler".into(), Stage::Scheduling, 25.0),
        ]
    );
}

#[test]
fn idle_exit_counts_only_from_the_recorded_exit() {
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .at(-us(800), 0, What::IdleEnter { state: 2 })
        .at(us(150), 0, What::IdleExit)
        .timer(us(160), us(162), us(165), 0)
        .switch(us(170), idle(), me());
    assert_eq!(
        summary(&cpu.explain(us(172)))[..2],
        [
            (unexplained("idle (state 2)"), Stage::Delivery, 150.0),
            ("idle exit (state 2)".into(), Stage::Delivery, 10.0),
        ]
    );
}

#[test]
fn task_running_while_the_timer_came_late_is_named_not_blamed() {
    let cpu = Cpu::default()
        .switch(-us(50), idle(), stress())
        .timer(us(300), us(302), us(304), 123)
        .switch(us(305), stress(), me());
    let explanation = cpu.explain(us(307));
    assert_eq!(
        summary(&explanation)[0],
        (unexplained("stress:123"), Stage::Delivery, 300.0)
    );
    let blamed = explanation
        .parts
        .iter()
        .filter(|part| matches!(part.cause, Cause::Thread { .. }))
        .map(|part| part.duration_ns.0)
        .sum::<i64>();
    assert_eq!(blamed, us(1), "only after the waking, until the switch");
}

#[test]
fn timer_handler_time_is_the_timer_interrupt_until_the_waking() {
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .timer(us(1), us(41), us(45), 0)
        .switch(us(47), idle(), me());
    let explanation = cpu.explain(us(50));
    assert_eq!(
        summary(&explanation),
        [
            (unexplained("idle"), Stage::Delivery, 1.0),
            ("timer interrupt".into(), Stage::Handler, 40.0),
            ("timer interrupt".into(), Stage::Scheduling, 4.0),
            ("scheduler".into(), Stage::Scheduling, 2.0),
            ("return to user".into(), Stage::Return, 3.0),
        ]
    );
    assert_eq!(explanation.stages.handler_ns, Some(Nanos(us(40))));
}

#[test]
fn without_interrupt_events_the_hrtimer_callback_opens_the_handler() {
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .at(
            us(10),
            0,
            What::HrtimerExpireEntry {
                hrtimer: 1,
                function: 2,
                now: 0,
            },
        )
        .waking(us(15), 0, me())
        .at(us(16), 0, What::HrtimerExpireExit { hrtimer: 1 });
    let explanation = cpu.explain(us(20));
    assert_eq!(
        summary(&explanation)[..2],
        [
            (unexplained("idle"), Stage::Delivery, 10.0),
            ("timer interrupt".into(), Stage::Handler, 5.0),
        ]
    );
    assert_eq!(explanation.stages.delivery_ns, Some(Nanos(us(10))));
}

#[test]
fn return_to_user_runs_from_the_switch_to_the_clock_read() {
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .timer(us(1), us(2), us(3), 0)
        .switch(us(4), idle(), me());
    let explanation = cpu.explain(us(9));
    assert_eq!(
        summary(&explanation).last(),
        Some(&("return to user".into(), Stage::Return, 5.0))
    );
    assert_eq!(explanation.stages.return_ns, Some(Nanos(us(5))));
}

#[test]
fn a_long_stretch_after_the_switch_in_with_no_event_is_unexplained() {
    // 120 µs between the switch to the measuring thread and its clock read, nothing
    // recorded: not what a return to user space costs.
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .timer(us(1), us(2), us(3), 0)
        .switch(us(4), idle(), me());
    let explanation = cpu.explain(us(124));
    assert_eq!(
        summary(&explanation).last(),
        Some(&(unexplained("latlab-m0:456"), Stage::Return, 120.0))
    );
    // The stage is as long as ever: only its cause is not claimed.
    assert_eq!(explanation.stages.return_ns, Some(Nanos(us(120))));
}

#[test]
fn unrecorded_switch_from_idle_to_the_task_woken_there_is_inferred() {
    // The spinner's switch-in from idle is not recorded (this 6.18 guest does not);
    // it was woken onto the idle CPU, and the next record of a task is its own: it ran
    // from the end of the interrupts that woke it.
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .waking(-us(10), 0, spinner())
        .timer(us(20), us(22), us(24), 200)
        .switch(us(100), spinner(), me());
    let parts = summary(&cpu.explain(us(101)));
    assert_eq!(parts[0], (unexplained("spin:200"), Stage::Delivery, 20.0));
    assert_eq!(
        parts[3],
        (
            "thread spin:200 (fifo/rr 99)".into(),
            Stage::Scheduling,
            76.0
        )
    );
}

#[test]
fn an_interrupt_of_idle_after_the_guessed_switch_puts_the_switch_after_it() {
    // The spinner is woken in a timer interrupt of the idle CPU before the deadline;
    // the measuring thread's timer then interrupts the idle task still leaving idle.
    // The spinner runs from the end of that second interrupt, not the first.
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .vector_entry(-us(6), 0)
        .waking(-us(5), 0, spinner())
        .vector_exit(-us(4), 0)
        .timer(us(3), us(4), us(6), 0)
        .switch(us(300), spinner(), me());
    let parts = summary(&cpu.explain(us(301)));
    assert_eq!(parts[0], (unexplained("idle"), Stage::Delivery, 3.0));
    assert_eq!(
        parts[parts.len() - 2],
        (
            "thread spin:200 (fifo/rr 99)".into(),
            Stage::Scheduling,
            294.0
        ),
        "{parts:?}"
    );
}

#[test]
fn a_task_that_preempted_the_measuring_thread_before_its_sleep_is_blamed() {
    // The spinner preempted the measuring thread before it went to sleep again: its
    // timer was set only once it ran again, after the spin.
    let preempted = What::Switch {
        prev: me(),
        prev_state: 0,
        next: spinner(),
    };
    let cpu = Cpu::default()
        .at(-us(60), TID, preempted)
        .switch(us(240), spinner(), me())
        .timer(us(250), us(251), us(253), TID);
    let parts = summary(&cpu.explain(us(254)));
    assert_eq!(
        parts[0],
        (
            "thread spin:200 (fifo/rr 99)".into(),
            Stage::Delivery,
            240.0
        ),
        "{parts:?}"
    );
    assert_eq!(
        parts[1],
        (unexplained("latlab-m0:456"), Stage::Delivery, 10.0)
    );
}

#[test]
fn unrecorded_switch_to_another_task_than_the_woken_one_leaves_the_candidates_named() {
    // The spinner was woken onto the idle CPU, but the next task seen is stress: which
    // ran when is not known, so both are named and neither blamed.
    let cpu = Cpu::default()
        .switch(-us(900), me(), idle())
        .waking(-us(10), 0, spinner())
        .timer(us(20), us(22), us(24), 123)
        .switch(us(100), stress(), me());
    let parts = summary(&cpu.explain(us(101)));
    assert_eq!(
        parts[0],
        (unexplained("idle or stress:123"), Stage::Delivery, 20.0)
    );
}

#[test]
fn interrupt_open_before_the_first_record_is_still_named() {
    let cpu = Cpu::default()
        .at(us(30), 123, What::IrqExit { irq: 24, ret: 1 })
        .timer(us(31), us(32), us(33), 123);
    // The exit has no name, and no entry of IRQ 24 was recorded: the name is unknown.
    let explanation = cpu.explain(us(40));
    let unnamed = Cause::Irq {
        irq: 24,
        name: String::new(),
    };
    assert_eq!(explanation.parts[0].cause, unnamed);
    assert_eq!(explanation.parts[0].duration_ns, Nanos(us(30)));
    // A later entry of the same IRQ names it.
    let explanation = cpu.irq(us(60), us(61), 123).explain(us(40));
    assert_eq!(explanation.parts[0].cause.label(), "irq 24 virtio0-input.0");
}

#[test]
fn window_events_list_the_scene_and_the_window() {
    let cpu = Cpu::default()
        .switch(-us(5000), me(), idle())
        .irq(-us(4000), -us(3990), 0)
        .switch(-us(3000), idle(), stress())
        .timer(us(1), us(2), us(3), 123)
        .switch(us(10), stress(), me());
    let events = cpu.explain(us(12)).events;
    let listed: Vec<(i64, &str)> = events
        .iter()
        .map(|event| (event.t_ns.0 / 1000, event.event.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (-3000, "sched:sched_switch"),
            (1, "irq_vectors:local_timer_entry"),
            (2, "sched:sched_waking"),
            (3, "irq_vectors:local_timer_exit"),
            (10, "sched:sched_switch"),
        ]
    );
    assert_eq!(
        events[0].detail,
        "prev=swapper/1:0 prio=120 state=S ==> next=stress:123 prio=120"
    );
}

#[test]
fn wake_before_the_deadline_has_no_parts() {
    let explanation = Cpu::default().switch(0, me(), idle()).explain(-5);
    assert_eq!(
        (explanation.latency_ns, explanation.parts.len()),
        (Nanos(0), 0)
    );
}

/// What the CPU truly did, as the generator knows it.
#[derive(Debug, Clone, PartialEq)]
enum Truth {
    Thread(i32),
    Context(Context),
    Nmi,
}

/// A random CPU: records and the truth they come from, time-ordered.
#[derive(Debug, Clone)]
struct World {
    records: Vec<Record>,
    truth: Vec<(u64, u64, Truth)>,
    end: u64,
}

fn world(steps: Vec<(u64, u8, u8)>, first_pid: u8) -> World {
    let tasks = [idle(), task("a", 100, 120), task("b", 101, 10), me()];
    let mut current = tasks[usize::from(first_pid) % tasks.len()];
    let mut stack: Vec<Context> = Vec::new();
    let mut records = Vec::new();
    let mut truth = Vec::new();
    let mut now = 1_000_000u64;
    let mut woken = false;
    let record = |records: &mut Vec<Record>, ts, pid, what| {
        records.push(Record {
            ts,
            cpu: CPU,
            pid,
            what,
        })
    };
    for (gap, op, pick) in steps {
        let state = match stack.last() {
            Some(context) => Truth::Context(context.clone()),
            None => Truth::Thread(current.pid),
        };
        let next = now + gap;
        let hard_open = stack
            .iter()
            .any(|context| !matches!(context, Context::Softirq { .. }));
        let pid = current.pid;
        match op % 9 {
            // An NMI at the end of the gap, taking part of it.
            0 => {
                let delta = u64::from(pick) % gap + 1;
                truth.push((now, next - delta, state));
                truth.push((next - delta, next, Truth::Nmi));
                let what = What::Nmi {
                    handler: 7,
                    delta_ns: delta as i64,
                };
                record(&mut records, next, pid, what);
                now = next;
                continue;
            }
            1 if stack.is_empty() => {
                let to = tasks[usize::from(pick) % tasks.len()];
                let what = What::Switch {
                    prev: current,
                    prev_state: 0,
                    next: to,
                };
                record(&mut records, next, pid, what);
                current = to;
            }
            2 if !hard_open => {
                stack.push(Context::Irq {
                    irq: i32::from(pick % 3),
                    name: Arc::from(""),
                });
                let what = What::IrqEntry {
                    irq: i32::from(pick % 3),
                    name: Arc::from(""),
                };
                record(&mut records, next, pid, what);
            }
            3 if !hard_open => {
                let name: Arc<str> = Arc::from(if pick % 2 == 0 {
                    "local_timer"
                } else {
                    "reschedule"
                });
                stack.push(Context::Vector { name: name.clone() });
                record(
                    &mut records,
                    next,
                    pid,
                    What::VectorEntry { name, vector: 1 },
                );
            }
            4 if stack.is_empty() => {
                let vec = u32::from(pick % 10);
                stack.push(Context::Softirq { vec });
                record(&mut records, next, pid, What::SoftirqEntry { vec });
            }
            5 | 6 if !stack.is_empty() => {
                let what = match stack.pop() {
                    Some(Context::Irq { irq, .. }) => What::IrqExit { irq, ret: 1 },
                    Some(Context::Vector { name }) => What::VectorExit { name, vector: 1 },
                    Some(Context::Softirq { vec }) => What::SoftirqExit { vec },
                    None => unreachable!(),
                };
                record(&mut records, next, pid, what);
            }
            7 if !woken && pick % 2 == 0 => {
                woken = true;
                let what = What::Waking {
                    task: me(),
                    target_cpu: 1,
                };
                record(&mut records, next, pid, what);
            }
            8 if pid == 0 && stack.is_empty() => {
                let what = if pick % 2 == 0 {
                    What::IdleEnter { state: 1 }
                } else {
                    What::IdleExit
                };
                record(&mut records, next, pid, what);
            }
            _ => {
                // A waking of another task: an event that changes nothing.
                let what = What::Waking {
                    task: tasks[1],
                    target_cpu: 0,
                };
                record(&mut records, next, pid, what);
            }
        }
        truth.push((now, next, state));
        now = next;
    }
    // Well-formed: every context the sequence opened closes.
    while let Some(context) = stack.last().cloned() {
        truth.push((now, now + 1, Truth::Context(context)));
        now += 1;
        let what = match stack.pop() {
            Some(Context::Irq { irq, .. }) => What::IrqExit { irq, ret: 1 },
            Some(Context::Vector { name }) => What::VectorExit { name, vector: 1 },
            Some(Context::Softirq { vec }) => What::SoftirqExit { vec },
            None => unreachable!(),
        };
        record(&mut records, now, current.pid, what);
    }
    truth.push((now, u64::MAX, Truth::Thread(current.pid)));
    World {
        records,
        truth,
        end: now,
    }
}

/// Whether a part's cause is consistent with what the CPU truly did.
fn consistent(cause: &Cause, truth: &Truth) -> bool {
    match (cause, truth) {
        (Cause::Nmi { .. }, Truth::Nmi) => true,
        (Cause::Irq { irq, .. }, Truth::Context(Context::Irq { irq: true_irq, .. })) => {
            *irq == i64::from(*true_irq)
        }
        (Cause::Vector { name }, Truth::Context(Context::Vector { name: true_name })) => {
            **name == **true_name
        }
        (Cause::Softirq { name }, Truth::Context(Context::Softirq { vec })) => {
            *name == softirq_name(*vec)
        }
        (Cause::TimerInterrupt, Truth::Context(_)) => true,
        (Cause::Thread { pid, .. }, Truth::Thread(true_pid)) => *pid == i64::from(*true_pid),
        (Cause::Scheduler | Cause::IdleExit { .. }, Truth::Thread(0)) => true,
        (Cause::ReturnToUser, Truth::Thread(pid)) => *pid == TID,
        (Cause::Unexplained { .. }, Truth::Thread(_)) => true,
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn parts_tile_the_window_and_blame_only_what_ran(
        steps in proptest::collection::vec((1u64..50_000, any::<u8>(), any::<u8>()), 1..80),
        first_pid in any::<u8>(),
        due_at in 0.0f64..1.0,
        latency in 0u64..400_000,
        margin in 0u64..2_000_000,
    ) {
        let world = world(steps, first_pid);
        let due = 1_000_000 + ((world.end - 1_000_000) as f64 * due_at) as u64;
        let window = SpikeWindow {
            cpu: 1,
            tid: TID,
            due_ns: due,
            wake_ns: due + latency,
            margin_ns: margin,
        };
        let spike = SpikeOf { phase: "p".into(), thread: 0, at_ns: Nanos(0) };
        let explanation = attribute(&world.records, &window, Coverage::Complete, spike);
        prop_assert_eq!(explanation.latency_ns, Nanos(latency as i64));
        prop_assert_eq!(explanation.parts_total_ns(), explanation.latency_ns);
        let mut at = due;
        for (index, part) in explanation.parts.iter().enumerate() {
            prop_assert!(part.duration_ns.0 > 0, "{:?}", part);
            let start = due as i64 + part.start_ns.0;
            prop_assert!(
                start == at as i64 || (index == 0 && start < due as i64),
                "part {} starts at {} not {}", index, start, at
            );
            let end = at + part.duration_ns.0 as u64;
            for (from, to, truth) in &world.truth {
                if *from < end && at < *to {
                    prop_assert!(
                        consistent(&part.cause, truth),
                        "{:?} over {}..{} but the CPU ran {:?} over {}..{}",
                        part.cause, at, end, truth, from, to
                    );
                }
            }
            at = end;
        }
        prop_assert_eq!(at, due + latency);
        let stages = [Stage::Delivery, Stage::Handler, Stage::Scheduling, Stage::Return];
        let order: Vec<usize> = explanation
            .parts
            .iter()
            .map(|part| stages.iter().position(|stage| *stage == part.stage).unwrap())
            .collect();
        prop_assert!(order.windows(2).all(|pair| pair[0] <= pair[1]), "{:?}", order);
        let times: Vec<i64> = explanation.events.iter().map(|event| event.t_ns.0).collect();
        prop_assert!(times.windows(2).all(|pair| pair[0] <= pair[1]));
    }
}

#[test]
fn select_keeps_a_margin_before_the_deadline_and_after_the_wake() {
    let cpu = Cpu::default()
        .switch(-us(12_000), me(), idle())
        .switch(-us(9_000), idle(), stress())
        .switch(us(9_000), stress(), me())
        .switch(us(11_000), me(), idle());
    let window = SpikeWindow {
        cpu: 1,
        tid: TID,
        due_ns: DUE,
        wake_ns: DUE + 500 * US,
        margin_ns: 10_000 * US,
    };
    let kept: Vec<i64> = window
        .select(&cpu.0)
        .iter()
        .map(|record| (record.ts as i64 - DUE as i64) / 1000)
        .collect();
    assert_eq!(kept, [-9_000, 9_000]);
}

#[test]
fn a_window_of_thousands_of_events_lists_those_nearest_its_ends() {
    // 2000 interrupts of another IRQ between the deadline and the wake-up.
    let mut cpu = Cpu::default().switch(-us(5000), me(), stress());
    for k in 0..2_000 {
        cpu = cpu.irq(us(10 + 5 * k), us(11 + 5 * k), 30);
    }
    let explanation = cpu
        .timer(us(10_010), us(10_011), us(10_012), 123)
        .switch(us(10_020), stress(), me())
        .explain(us(10_022));
    let in_window = explanation.events.iter().filter(|e| e.t_ns.0 >= 0).count();
    assert_eq!(in_window, latlab_model::explain::MAX_LISTED_EVENTS);
    assert_eq!(
        in_window as u64 + explanation.events_left_out,
        2 * 2_000 + 4,
        "every event of the window is listed or counted"
    );
    // The ends are kept: the first interrupt and the switch that ends the spike.
    assert_eq!(
        explanation
            .events
            .iter()
            .find(|e| e.t_ns.0 >= 0)
            .unwrap()
            .t_ns,
        Nanos(us(10))
    );
    assert_eq!(
        explanation.events.last().unwrap().event,
        "sched:sched_switch"
    );
    // The parts still add up: listing is not attributing.
    assert_eq!(explanation.parts_total_ns(), explanation.latency_ns);
}
