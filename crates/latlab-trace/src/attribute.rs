//! What got in the way of one late wake-up, from the events of its CPU.
//!
//! [`attribute`] replays a CPU's [`Record`]s from a margin before the deadline `D` to
//! the measuring thread's clock read `W`, and gives every nanosecond of `[D, W]` to
//! exactly one [`Part`], the way rtla's timerlat auto-analysis (`timerlat_aa.c`) splits
//! a latency, but from generic events:
//!
//! - **Innermost context wins**: an NMI (from `nmi_handler`: it began `delta_ns`
//!   before its record) over a hard IRQ or vector over a softirq over a thread, so
//!   each contributor's time is net of what nested in it, as osnoise counts it.
//! - **The wake-up's own timer interrupt** is the interrupt context in which the
//!   measuring thread's `sched_waking` (or `sched_wakeup`) fired: the innermost hard
//!   context (`local_timer`, or the arch timer's IRQ on arm64), else a softirq, else
//!   the open `hrtimer_expire_entry`. It is [`Cause::TimerInterrupt`], before and after
//!   the waking.
//! - **Threads**: after the waking, another task current in thread context is
//!   [`Cause::Thread`], the task that kept the CPU included; the idle task with nothing
//!   else recorded is [`Cause::Scheduler`]; the measuring thread itself (switched in,
//!   or seen running) is [`Cause::ReturnToUser`] — unless a stretch of it with no
//!   event lasts 50 µs or more, which is unexplained, as it would be before the
//!   interrupt.
//! - **Delivery** (before the timer interrupt): a task in thread context is not blamed
//!   — the interrupt came late while it ran, which is interrupts off in that task or
//!   the host, and the events cannot tell which — so that time is
//!   [`Cause::Unexplained`] with the task named as `current` — unless the measuring
//!   thread was preempted (switched out runnable) and not back since: then its timer
//!   was not even set, and the task that kept the CPU from it is [`Cause::Thread`].
//!   Idle likewise: the time
//!   from the deadline to a recorded `cpu_idle` exit is unexplained (`current` "idle
//!   (state N)"), because on a virtual machine the host may have descheduled an idle
//!   vCPU and the guest records nothing; only from that exit event to the next event
//!   is [`Cause::IdleExit`]. Without `cpu_idle` events there is no idle-exit part.
//! - **Nothing recorded, nothing blamed**: a span whose current task the events do not
//!   tell (before the first record; or a switch the kernel did not record, as this
//!   6.18 guest does not record switches away from the idle task) is unexplained,
//!   naming the candidates. One such switch is inferred: a task woken onto the idle CPU
//!   (the most urgent, if several) runs once the interrupts that woke it end, when the
//!   next record of a task other than idle is its own. Missing event types (no `irq_vectors` on arm64, no
//!   `cpu_idle`) leave time unexplained, never guessed.
//!
//! Stages: delivery `D` → entry of the timer interrupt; handler → the waking; scheduling
//! → `sched_switch` to the measuring thread; return → `W`. A stage whose closing event
//! was not recorded has no length ([`Stages`] holds `None`); the parts still cover the
//! window.

mod replay;
#[cfg(test)]
mod tests;

use latlab_model::explain::{
    Cause, Coverage, Explanation, Part, Stage, Stages, WindowEvent, MAX_LISTED_EVENTS,
};
use latlab_model::Nanos;

use crate::{softirq_name, Record, Task};
use replay::{Context, Current, Milestones, Span};

/// The longest stretch of the measuring thread's own, after it was woken, with no
/// event in it, that counts as its return to user space: on hardware that takes a few
/// µs. Longer, the CPU did something no event shows (the host, an SMI), and the
/// stretch is unexplained like one before the interrupt.
const LONG_RETURN_NS: u64 = 50_000;

/// Events this long before the deadline are listed with a spike, besides those that
/// set the scene (the entries of contexts open at the deadline, the last switch).
const EVENTS_BEFORE_DUE_NS: u64 = 100_000;

/// Where and when one late wake-up happened, on the trace clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpikeWindow {
    /// The CPU the measuring thread woke on.
    pub cpu: usize,
    /// The measuring thread's thread id.
    pub tid: i32,
    /// When it was due, trace clock ns.
    pub due_ns: u64,
    /// When it read the clock, trace clock ns.
    pub wake_ns: u64,
    /// How much history before the deadline to replay the CPU's state from.
    pub margin_ns: u64,
}

impl SpikeWindow {
    /// A margin long enough to see the task and interrupts current at the deadline on
    /// a busy CPU (a 4 ms tick and a scheduler slice), short enough to stay in a
    /// ring-buffer's reach under load.
    pub const DEFAULT_MARGIN_NS: u64 = 10_000_000;

    /// The first instant replayed: the deadline less the margin.
    pub fn start_ns(&self) -> u64 {
        self.due_ns.saturating_sub(self.margin_ns)
    }

    /// The records of a CPU's time-ordered records [`attribute`] needs: from the
    /// window's start to a margin after the wake (whose events name what was already
    /// running at the start).
    pub fn select<'a>(&self, records: &'a [Record]) -> &'a [Record] {
        let first = records.partition_point(|record| record.ts < self.start_ns());
        let after = self.wake_ns.saturating_add(self.margin_ns);
        let end = records.partition_point(|record| record.ts <= after);
        &records[first..end.max(first)]
    }
}

/// Which spike of a run a window is: the fields of its [`Explanation`] the trace cannot
/// know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpikeOf {
    /// The phase of the stream.
    pub phase: String,
    /// The measuring thread's index.
    pub thread: usize,
    /// When it was due, relative to the start of the stream's measured span.
    pub at_ns: Nanos,
}

/// Explains one late wake-up from `records`, the time-ordered records of the window's
/// CPU covering at least `[start_ns, wake_ns]`. More is fine and helps: the exit of an
/// interrupt that was open before the window's first record, recorded after the
/// wake, names it. `coverage` says whether events of that CPU were lost.
///
/// The parts are in time order, do not overlap, and add up to the latency exactly.
pub fn attribute(
    records: &[Record],
    window: &SpikeWindow,
    coverage: Coverage,
    spike: SpikeOf,
) -> Explanation {
    let due = window.due_ns;
    let wake = window.wake_ns.max(due);
    let replay = replay::replay(records, window.tid, window.start_ns(), due, wake);
    let marks = Marks::new(&replay.milestones, due, wake);
    let labels = Labels {
        marks: &marks,
        tid: window.tid,
        due,
        tasks: &replay.tasks,
    };
    let pieces: Vec<Piece> = replay
        .spans
        .iter()
        .map(|span| {
            let (cause, since) = labels.label(span);
            Piece {
                start: span.start,
                end: span.end,
                cause,
                since,
            }
        })
        .collect();
    let pieces = overlay_nmis(pieces, &replay.nmis);
    let mut events: Vec<usize> = replay.scene.clone();
    let listed_from = window
        .start_ns()
        .max(due.saturating_sub(EVENTS_BEFORE_DUE_NS));
    let mut in_window: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, record)| (listed_from..=wake).contains(&record.ts))
        .map(|(index, _)| index)
        .filter(|index| !events.contains(index))
        .collect();
    let left_out = in_window.len().saturating_sub(MAX_LISTED_EVENTS);
    if left_out > 0 {
        let half = MAX_LISTED_EVENTS / 2;
        in_window.drain(half..in_window.len() - (MAX_LISTED_EVENTS - half));
    }
    events.extend(in_window);
    events.sort_unstable();
    events.dedup();
    Explanation {
        phase: spike.phase,
        thread: spike.thread,
        cpu: Some(window.cpu),
        at_ns: spike.at_ns,
        // The caller knows it on CLOCK_MONOTONIC; the trace clock may differ.
        due_monotonic_ns: None,
        latency_ns: nanos(wake - due),
        coverage,
        stages: marks.stages(due, wake),
        parts: parts(pieces, &marks, due),
        events: events
            .into_iter()
            .map(|index| {
                let record = &records[index];
                WindowEvent {
                    t_ns: Nanos(record.ts as i64 - due as i64),
                    event: record.event_name(),
                    detail: record.detail(),
                }
            })
            .collect(),
        events_left_out: left_out as u64,
    }
}

fn nanos(ns: u64) -> Nanos {
    Nanos(i64::try_from(ns).unwrap_or(i64::MAX))
}

/// The stage boundaries, clamped into `[due, wake]` and in order.
struct Marks {
    /// Entry of the timer interrupt, when recorded.
    timer_entry: Option<u64>,
    /// Where the handler stage starts: the timer's entry, else the waking.
    handler_from: Option<u64>,
    waking: Option<u64>,
    /// The recorded switch to the measuring thread.
    switch_in: Option<u64>,
    /// Where the return stage starts: the switch, else the first sign of the thread
    /// running.
    running_from: Option<u64>,
    /// The replay's id of the timer interrupt's context.
    timer_context: Option<usize>,
}

impl Marks {
    fn new(milestones: &Milestones, due: u64, wake: u64) -> Marks {
        let clamp = |t: u64| t.clamp(due, wake);
        let waking = milestones.waking.map(clamp);
        let timer_entry = match milestones.timer_context {
            // Opened before the first record: before the deadline.
            Some((_, since)) => Some(since.map_or(due, clamp)),
            None => milestones.timer_callback.map(clamp),
        };
        let timer_entry = match (timer_entry, waking) {
            (Some(entry), Some(waking)) => Some(entry.min(waking)),
            (entry, _) => entry,
        };
        let after_waking = |t: u64| clamp(t).max(waking.unwrap_or(due));
        let switch_in = milestones.switch_in.map(after_waking);
        Marks {
            timer_entry,
            handler_from: timer_entry.or(waking),
            waking,
            switch_in,
            running_from: switch_in.or(milestones.seen_running.map(after_waking)),
            timer_context: milestones.timer_context.map(|(id, _)| id),
        }
    }

    fn stage_of(&self, t: u64) -> Stage {
        let reached = |mark: Option<u64>| mark.is_some_and(|mark| mark <= t);
        if reached(self.running_from) {
            Stage::Return
        } else if reached(self.waking) {
            Stage::Scheduling
        } else if reached(self.handler_from) {
            Stage::Handler
        } else {
            Stage::Delivery
        }
    }

    fn stages(&self, due: u64, wake: u64) -> Stages {
        Stages {
            delivery_ns: self.timer_entry.map(|entry| nanos(entry - due)),
            handler_ns: self
                .timer_entry
                .zip(self.waking)
                .map(|(entry, waking)| nanos(waking - entry)),
            scheduling_ns: self
                .waking
                .zip(self.switch_in)
                .map(|(waking, switch)| nanos(switch - waking)),
            return_ns: self.switch_in.map(|switch| nanos(wake - switch)),
        }
    }
}

/// A labelled stretch of the window.
#[derive(Debug, Clone)]
struct Piece {
    start: u64,
    end: u64,
    cause: Cause,
    /// When the cause began, if before the piece.
    since: Option<u64>,
}

struct Labels<'a> {
    marks: &'a Marks,
    tid: i32,
    due: u64,
    tasks: &'a std::collections::HashMap<i32, Task>,
}

impl Labels<'_> {
    /// The cause of a span, and since when it held.
    fn label(&self, span: &Span) -> (Cause, Option<u64>) {
        if let Some(open) = &span.context {
            let cause = if self.marks.timer_context == Some(open.id) {
                Cause::TimerInterrupt
            } else {
                match &open.context {
                    Context::Irq { irq, name } => Cause::Irq {
                        irq: i64::from(*irq),
                        name: name.to_string(),
                    },
                    Context::Vector { name } => Cause::Vector {
                        name: name.to_string(),
                    },
                    Context::Softirq { vec } => Cause::Softirq {
                        name: softirq_name(*vec),
                    },
                }
            };
            return (cause, open.since);
        }
        let marks = self.marks;
        let in_callback = marks.timer_context.is_none()
            && marks.handler_from.is_some_and(|from| from <= span.start)
            && marks.waking.is_some_and(|waking| span.start < waking);
        if in_callback {
            return (Cause::TimerInterrupt, None);
        }
        self.thread_cause(span)
    }

    /// Thread context: who is blamed, if anyone.
    fn thread_cause(&self, span: &Span) -> (Cause, Option<u64>) {
        let reached = |mark: Option<u64>| mark.is_some_and(|mark| mark <= span.start);
        let woken = reached(self.marks.waking) || reached(self.marks.running_from);
        let unexplained = |current: Option<String>| (Cause::Unexplained { current }, None);
        match span.current {
            // A stretch this long with no event is not the return's cost: what the CPU
            // did then is not known, as before the interrupt.
            Current::Known { pid, .. }
                if pid == self.tid && woken && span.end - span.start >= LONG_RETURN_NS =>
            {
                unexplained(Some(self.name(pid)))
            }
            Current::Known { pid, .. } if pid == self.tid && woken => (Cause::ReturnToUser, None),
            Current::Known { pid: 0, .. } if woken => (Cause::Scheduler, None),
            Current::Known { pid: 0, .. } => match span.idle_exit {
                Some((exit, state)) if exit >= self.due && span.idle_state.is_none() => (
                    Cause::IdleExit {
                        state: state.map(i64::from),
                    },
                    None,
                ),
                _ => unexplained(Some(match span.idle_state {
                    Some(state) => format!("idle (state {state})"),
                    None => "idle".to_owned(),
                })),
            },
            Current::Known { pid, since } if woken || span.measuring_preempted => {
                match self.tasks.get(&pid) {
                    Some(task) => (
                        Cause::Thread {
                            comm: task.comm.to_string(),
                            pid: i64::from(task.pid),
                            prio: i64::from(task.prio),
                            function: span.work_function.map(|f| format!("{f:#x}")),
                            irq: None,
                        },
                        since,
                    ),
                    // Ran, but no event named it: reported, not blamed by a made-up name.
                    None => unexplained(Some(self.name(pid))),
                }
            }
            Current::Known { pid, .. } => unexplained(Some(self.name(pid))),
            Current::Changed { from: 0, to } if woken && to == self.tid => (Cause::Scheduler, None),
            Current::Changed { from, to } => {
                unexplained(Some(format!("{} or {}", self.name(from), self.name(to))))
            }
            Current::Unknown => unexplained(None),
        }
    }

    /// `comm:pid`, `idle`, or `pid N` for a task no event named.
    fn name(&self, pid: i32) -> String {
        match self.tasks.get(&pid) {
            _ if pid == 0 => "idle".to_owned(),
            Some(task) => task.to_string(),
            None => format!("pid {pid}"),
        }
    }
}

/// Cuts the NMI handler runs out of the pieces: an NMI is innermost.
fn overlay_nmis(pieces: Vec<Piece>, nmis: &[(u64, u64, u64)]) -> Vec<Piece> {
    if nmis.is_empty() {
        return pieces;
    }
    let mut nmis = nmis.to_vec();
    nmis.sort_unstable();
    let mut out = Vec::with_capacity(pieces.len() + 2 * nmis.len());
    for piece in pieces {
        let mut at = piece.start;
        for &(start, end, handler) in &nmis {
            let (from, to) = (start.max(at), end.min(piece.end));
            if from >= to {
                continue;
            }
            if at < from {
                out.push(Piece {
                    end: from,
                    start: at,
                    ..piece.clone()
                });
            }
            out.push(Piece {
                start: from,
                end: to,
                cause: Cause::Nmi {
                    handler: format!("{handler:#x}"),
                },
                since: Some(start),
            });
            at = to;
        }
        if at < piece.end {
            out.push(Piece { start: at, ..piece });
        }
    }
    out
}

/// Pieces into parts: each given its stage, neighbours of one cause and stage merged.
fn parts(pieces: Vec<Piece>, marks: &Marks, due: u64) -> Vec<Part> {
    let mut merged: Vec<(Piece, Stage)> = Vec::new();
    for piece in pieces {
        let stage = marks.stage_of(piece.start);
        match merged.last_mut() {
            Some((last, last_stage))
                if last.end == piece.start && last.cause == piece.cause && *last_stage == stage =>
            {
                last.end = piece.end;
            }
            _ => merged.push((piece, stage)),
        }
    }
    merged
        .into_iter()
        .map(|(piece, stage)| {
            // A cause already running at the deadline starts before it; the part
            // still counts only from the deadline.
            let began = match piece.since {
                Some(since) if piece.start == due && since < due => since,
                _ => piece.start,
            };
            Part {
                cause: piece.cause,
                stage,
                start_ns: Nanos(began as i64 - due as i64),
                duration_ns: nanos(piece.end - piece.start),
            }
        })
        .collect()
}
