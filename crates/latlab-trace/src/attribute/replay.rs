//! Replays one CPU's records into spans of constant state: which interrupt context was
//! innermost, which task was current, whether the CPU was in an idle state. Also notes
//! the instants a wake-up's stages turn on (the measuring thread woken, switched in).

use std::collections::HashMap;
use std::sync::Arc;

use crate::{Record, Task, What};

/// A waking stamped this much before the deadline still counts as the spike's: the
/// trace's `mono` clock is the kernel's fast read of the clock latlab reads.
const WAKING_SLOP_NS: u64 = 2_000;

/// An interrupt context, as the entry and exit events open and close it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Context {
    Irq { irq: i32, name: Arc<str> },
    Vector { name: Arc<str> },
    Softirq { vec: u32 },
}

impl Context {
    fn of_entry(what: &What) -> Option<Context> {
        Some(match what {
            What::IrqEntry { irq, name } => Context::Irq {
                irq: *irq,
                name: name.clone(),
            },
            What::VectorEntry { name, .. } => Context::Vector { name: name.clone() },
            What::SoftirqEntry { vec } => Context::Softirq { vec: *vec },
            _ => return None,
        })
    }

    /// The context an exit event closes (the IRQ's name is not in its exit event, so
    /// contexts match by number).
    fn of_exit(what: &What) -> Option<Context> {
        Some(match what {
            What::IrqExit { irq, .. } => Context::Irq {
                irq: *irq,
                name: Arc::from(""),
            },
            What::VectorExit { name, .. } => Context::Vector { name: name.clone() },
            What::SoftirqExit { vec } => Context::Softirq { vec: *vec },
            _ => return None,
        })
    }

    fn closes(&self, exit: &Context) -> bool {
        match (self, exit) {
            (Context::Irq { irq, .. }, Context::Irq { irq: other, .. }) => irq == other,
            (Context::Vector { name }, Context::Vector { name: other }) => name == other,
            (Context::Softirq { vec }, Context::Softirq { vec: other }) => vec == other,
            _ => false,
        }
    }

    /// Hard interrupt contexts (IRQ handlers, vectors) run with interrupts masked.
    fn is_hard(&self) -> bool {
        !matches!(self, Context::Softirq { .. })
    }
}

/// An open interrupt context.
#[derive(Debug, Clone)]
pub(super) struct Open {
    /// Unique within one replay.
    pub id: usize,
    pub context: Context,
    /// Its entry, when recorded (`None`: open before the first record).
    pub since: Option<u64>,
    /// The index of its entry record.
    pub entry: Option<usize>,
}

/// Which task was current in a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Current {
    /// This task, since its recorded switch-in (when known).
    Known { pid: i32, since: Option<u64> },
    /// A switch from `from` to `to` happened in the span without a `sched_switch`
    /// record (a kernel that does not record the switch away from idle): which of the
    /// two ran when is unknown.
    Changed { from: i32, to: i32 },
    /// No record yet said.
    Unknown,
}

/// A stretch of time in which no recorded state changed.
#[derive(Debug, Clone)]
pub(super) struct Span {
    pub start: u64,
    pub end: u64,
    /// The innermost open interrupt context.
    pub context: Option<Open>,
    pub current: Current,
    /// The idle state the CPU entered and has not left (`power:cpu_idle`).
    pub idle_state: Option<u32>,
    /// The last recorded exit from idle, and the state it left.
    pub idle_exit: Option<(u64, Option<u32>)>,
    /// The workqueue function the current kworker runs.
    pub work_function: Option<u64>,
    /// The measuring thread was switched out runnable (preempted) and not back since:
    /// it could not go to sleep, so its timer was not even set.
    pub measuring_preempted: bool,
}

/// The instants a wake-up's stages turn on, as the records show them.
#[derive(Debug, Clone, Default)]
pub(super) struct Milestones {
    /// The measuring thread's `sched_waking` (or `sched_wakeup`) on this CPU.
    pub waking: Option<u64>,
    /// The interrupt context the waking happened in: the wake-up's own timer
    /// interrupt (its id and entry).
    pub timer_context: Option<(usize, Option<u64>)>,
    /// The `hrtimer_expire_entry` open at the waking, when no interrupt context was.
    pub timer_callback: Option<u64>,
    /// `sched_switch` to the measuring thread.
    pub switch_in: Option<u64>,
    /// The first record after the waking that ran in the measuring thread: proof it
    /// runs, where the switch to it was not recorded.
    pub seen_running: Option<u64>,
}

/// The replay of one window.
pub(super) struct Replay {
    pub spans: Vec<Span>,
    pub milestones: Milestones,
    /// Index of the records that set the scene at the deadline: the entries of the
    /// contexts open then and the switch that made its task current.
    pub scene: Vec<usize>,
    /// Every task an event named, by pid.
    pub tasks: HashMap<i32, Task>,
    /// NMI handler runs: start, end and the handler's address.
    pub nmis: Vec<(u64, u64, u64)>,
}

struct State {
    stack: Vec<Open>,
    next_id: usize,
    current: Current,
    switch_index: Option<usize>,
    idle_state: Option<u32>,
    idle_exit: Option<(u64, Option<u32>)>,
    work_function: Option<u64>,
    hrtimer_callback: Option<u64>,
    /// The most urgent task woken onto this CPU while it was idle (not the measuring
    /// thread): the one the scheduler switches to once the interrupts end.
    woken_on_idle: Option<Task>,
    measuring_preempted: bool,
}

impl State {
    fn open(&mut self, context: Context, since: Option<u64>, entry: Option<usize>) {
        self.stack.push(Open {
            id: self.next_id,
            context,
            since,
            entry,
        });
        self.next_id += 1;
    }
}

/// Closes the innermost open context `exit` matches, and any left open inside it (their
/// exits were lost). Returns whether one matched.
fn close(stack: &mut Vec<Open>, exit: &Context) -> bool {
    match stack.iter().rposition(|open| open.context.closes(exit)) {
        Some(at) => {
            stack.truncate(at);
            true
        }
        None => false,
    }
}

/// The contexts open before the first record: exits whose entries came earlier, found
/// when nothing recorded is open, innermost first.
fn open_before(records: &[(usize, &Record)]) -> Vec<Context> {
    let mut stack = Vec::new();
    let mut before = Vec::new();
    for &(index, record) in records {
        if let Some(context) = Context::of_entry(&record.what) {
            stack.push(Open {
                id: index,
                context,
                since: None,
                entry: None,
            });
        } else if let Some(exit) = Context::of_exit(&record.what) {
            if !close(&mut stack, &exit) && stack.is_empty() {
                before.push(exit);
            }
        }
    }
    before
}

/// Replays `records` (one CPU, time order) from `start` to `wake`, keeping spans that
/// fall in `[due, wake]`.
pub(super) fn replay(records: &[Record], tid: i32, start: u64, due: u64, wake: u64) -> Replay {
    let tasks = tasks_named(records, wake);
    let nmis = records
        .iter()
        .filter_map(|record| match record.what {
            What::Nmi { handler, delta_ns } if delta_ns > 0 => {
                let begin = record.ts.checked_sub(delta_ns as u64)?;
                Some((begin, record.ts, handler))
            }
            _ => None,
        })
        .collect();
    // Records after the wake still tell which contexts were open before the start.
    let from_start: Vec<(usize, &Record)> = records
        .iter()
        .enumerate()
        .filter(|(_, record)| record.ts >= start)
        .collect();
    let window: Vec<(usize, &Record)> = from_start
        .iter()
        .copied()
        .filter(|(_, record)| record.ts <= wake)
        .collect();
    let mut state = State {
        stack: Vec::new(),
        next_id: 0,
        current: Current::Unknown,
        switch_index: None,
        idle_state: None,
        idle_exit: None,
        work_function: None,
        hrtimer_callback: None,
        woken_on_idle: None,
        measuring_preempted: false,
    };
    // Outermost first. An IRQ's exit lacks its name: another entry of it has it.
    for context in open_before(&from_start).into_iter().rev() {
        let context = match context {
            Context::Irq { irq, .. } => Context::Irq {
                irq,
                name: irq_name(records, irq).unwrap_or_else(|| Arc::from("")),
            },
            other => other,
        };
        state.open(context, None, None);
    }
    let mut replay = Replay {
        spans: Vec::new(),
        milestones: Milestones::default(),
        scene: Vec::new(),
        tasks,
        nmis,
    };
    let mut at = start;
    let mut scene_taken = false;
    for &(index, record) in &window {
        let ts = record.ts.max(at);
        if !scene_taken && ts >= due {
            replay.scene = scene(&state);
            scene_taken = true;
        }
        let current = match state.current {
            Current::Known { pid, .. } if pid != record.pid => Current::Changed {
                from: pid,
                to: record.pid,
            },
            other => other,
        };
        push_span(&mut replay.spans, &state, current, at, ts, due, wake);
        apply(
            &mut state,
            &mut replay.milestones,
            index,
            record,
            ts,
            tid,
            due,
        );
        infer_switch_from_idle(&mut state, &from_start, index, ts);
        at = ts;
    }
    if !scene_taken {
        replay.scene = scene(&state);
    }
    push_span(
        &mut replay.spans,
        &state,
        state.current,
        at,
        wake,
        due,
        wake,
    );
    replay
}

/// The switch away from the idle task that this kernel does not record: when the
/// interrupts that woke a task onto the idle CPU have ended, the most urgent task woken
/// runs — if the next record is that task's, which proves it. A next record of the idle
/// task (an interrupt that came while the CPU was still leaving idle, or its exit from
/// idle) shows the switch comes later: the guess waits until that record's interrupts
/// have ended too.
fn infer_switch_from_idle(state: &mut State, records: &[(usize, &Record)], index: usize, ts: u64) {
    let Some(woken) = state.woken_on_idle else {
        return;
    };
    if !matches!(state.current, Current::Known { pid: 0, .. }) {
        state.woken_on_idle = None;
        return;
    }
    if !state.stack.is_empty() {
        return;
    }
    let next = records
        .iter()
        .find(|(i, _)| *i > index)
        .map(|(_, record)| record.pid);
    match next {
        Some(0) => {}
        Some(pid) if pid == woken.pid => {
            state.current = Current::Known {
                pid,
                since: Some(ts),
            };
            state.work_function = None;
            state.woken_on_idle = None;
        }
        _ => state.woken_on_idle = None,
    }
}

fn scene(state: &State) -> Vec<usize> {
    let mut scene: Vec<usize> = state.stack.iter().filter_map(|open| open.entry).collect();
    scene.extend(state.switch_index);
    scene
}

fn push_span(
    spans: &mut Vec<Span>,
    state: &State,
    current: Current,
    start: u64,
    end: u64,
    due: u64,
    wake: u64,
) {
    let (start, end) = (start.max(due), end.min(wake));
    if start >= end {
        return;
    }
    spans.push(Span {
        start,
        end,
        context: state.stack.last().cloned(),
        current,
        idle_state: state.idle_state,
        idle_exit: state.idle_exit,
        work_function: state.work_function,
        measuring_preempted: state.measuring_preempted,
    });
}

fn apply(
    state: &mut State,
    milestones: &mut Milestones,
    index: usize,
    record: &Record,
    ts: u64,
    tid: i32,
    due: u64,
) {
    // Every record runs in the current task (in an interrupt, the interrupted one).
    match state.current {
        Current::Known { pid, .. } if pid == record.pid => {}
        _ => {
            state.current = Current::Known {
                pid: record.pid,
                since: None,
            };
            state.work_function = None;
        }
    }
    if record.pid == tid && milestones.seen_running.is_none() {
        if let Some(waking) = milestones.waking {
            if ts >= waking {
                milestones.seen_running = Some(ts);
            }
        }
    }
    match &record.what {
        What::Switch {
            prev,
            prev_state,
            next,
        } => {
            state.woken_on_idle = None;
            if prev.pid == tid {
                state.measuring_preempted = crate::records::left_runnable(*prev_state);
            }
            if next.pid == tid {
                state.measuring_preempted = false;
            }
            state.current = Current::Known {
                pid: next.pid,
                since: Some(ts),
            };
            state.switch_index = Some(index);
            state.idle_state = None;
            state.work_function = None;
            let after = milestones.waking.unwrap_or(due);
            if next.pid == tid && milestones.switch_in.is_none() && ts >= after {
                milestones.switch_in = Some(ts);
            }
        }
        What::Waking { task, .. } | What::Wakeup { task, .. }
            if task.pid == tid
                && milestones.waking.is_none()
                && ts.saturating_add(WAKING_SLOP_NS) >= due =>
        {
            milestones.waking = Some(ts.max(due));
            let hard = state.stack.iter().rev().find(|open| open.context.is_hard());
            let innermost = hard.or(state.stack.last());
            milestones.timer_context = innermost.map(|open| (open.id, open.since));
            if innermost.is_none() {
                milestones.timer_callback = state.hrtimer_callback;
            }
        }
        What::Waking { task, target_cpu } | What::Wakeup { task, target_cpu }
            if task.pid != tid
                && *target_cpu == record.cpu as i32
                && matches!(state.current, Current::Known { pid: 0, .. }) =>
        {
            // The more urgent (lower kernel prio) of the tasks woken runs first.
            if state.woken_on_idle.is_none_or(|w| task.prio < w.prio) {
                state.woken_on_idle = Some(*task);
            }
        }
        What::IdleEnter { state: idle } => state.idle_state = Some(*idle),
        What::IdleExit => {
            state.idle_exit = Some((ts, state.idle_state.take()));
        }
        What::HrtimerExpireEntry { .. } => state.hrtimer_callback = Some(ts),
        What::HrtimerExpireExit { .. } => state.hrtimer_callback = None,
        What::WorkStart { function, .. } => state.work_function = Some(*function),
        What::WorkEnd { .. } => state.work_function = None,
        what => {
            if let Some(context) = Context::of_entry(what) {
                state.open(context, Some(ts), Some(index));
            } else if let Some(exit) = Context::of_exit(what) {
                close(&mut state.stack, &exit);
            }
        }
    }
}

/// The name an entry of IRQ `irq` gives it.
fn irq_name(records: &[Record], irq: i32) -> Option<Arc<str>> {
    records.iter().find_map(|record| match &record.what {
        What::IrqEntry { irq: other, name } if *other == irq => Some(name.clone()),
        _ => None,
    })
}

/// Every task a scheduler event named, as of the wake (later events fill in the
/// tasks only named after it).
fn tasks_named(records: &[Record], wake: u64) -> HashMap<i32, Task> {
    let mut tasks = HashMap::new();
    for record in records {
        let named: &[&Task] = match &record.what {
            What::Switch { prev, next, .. } => &[prev, next],
            What::Waking { task, .. } | What::Wakeup { task, .. } => &[task],
            _ => &[],
        };
        for task in named {
            if record.ts <= wake || !tasks.contains_key(&task.pid) {
                tasks.insert(task.pid, **task);
            }
        }
    }
    tasks
}
