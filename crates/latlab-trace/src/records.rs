//! Compact, owned records of the events latlab's explanations use, decoded straight
//! from `trace_pipe_raw` pages.
//!
//! An [`Event`](crate::Event) borrows its page and looks its fields up by name, which
//! suits a one-off read. A run's reader keeps seconds of events per CPU in memory and
//! replays them for every spike, so [`RecordDecoder`] resolves each field's offset once
//! and turns a page into [`Record`]s: a timestamp, the CPU, the running task and a
//! typed [`What`]. Events it has no use for are skipped and counted; a record too short
//! for its fields is skipped and counted too, so garbage never panics.

mod decode;

use std::fmt;
use std::sync::Arc;

pub use decode::{PageSummary, RecordDecoder};

/// The softirq vectors by number (`vec` of `irq:softirq_entry`), as the kernel names
/// them in `softirq_to_name` (`kernel/softirq.c`).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq vector `vec` (`NET_RX`), or `vec 12` for one the table lacks.
pub fn softirq_name(vec: u32) -> String {
    usize::try_from(vec)
        .ok()
        .and_then(|index| SOFTIRQ_NAMES.get(index))
        .map_or_else(|| format!("vec {vec}"), |name| (*name).to_owned())
}

/// A task's command name as the kernel stores it: up to 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm([u8; 16]);

impl Comm {
    /// The name from its bytes (cut at the first NUL, at most 16 bytes).
    pub fn new(bytes: &[u8]) -> Comm {
        let mut comm = [0; 16];
        let text = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
        let length = text.len().min(16);
        comm[..length].copy_from_slice(&text[..length]);
        Comm(comm)
    }

    /// The name as text (bytes that are not UTF-8 replaced).
    pub fn as_string(&self) -> String {
        let end = self.0.iter().position(|&byte| byte == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_string())
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_string())
    }
}

/// A task as the scheduler events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Task {
    /// Thread id (0: the CPU's idle task).
    pub pid: i32,
    /// Kernel priority: 0–99 real-time (lower is more urgent), 100–139 normal.
    pub prio: i32,
    /// Command name.
    pub comm: Comm,
}

impl fmt::Display for Task {
    /// `comm:pid`, the way the catalogue names a task.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.comm, self.pid)
    }
}

/// One event, with the kernel's timestamp and the task that was running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Timestamp on the instance's trace clock, ns (CLOCK_MONOTONIC with `mono`).
    pub ts: u64,
    /// The CPU whose buffer held it.
    pub cpu: u32,
    /// The task current on that CPU when it fired (`common_pid`; in an interrupt, the
    /// interrupted task).
    pub pid: i32,
    /// What happened.
    pub what: What,
}

/// The events latlab's explanations use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// `sched:sched_switch`: `prev` leaves the CPU in `prev_state`, `next` runs.
    Switch {
        /// The task switched out.
        prev: Task,
        /// Its state word (`TASK_REPORT` bits; 0 = runnable, preempted).
        prev_state: i64,
        /// The task switched in.
        next: Task,
    },
    /// `sched:sched_waking`: `task` is being woken (in the waker's context).
    Waking {
        /// The task woken.
        task: Task,
        /// The CPU it will run on.
        target_cpu: i32,
    },
    /// `sched:sched_wakeup`: `task` is runnable.
    Wakeup {
        /// The task woken.
        task: Task,
        /// The CPU it will run on.
        target_cpu: i32,
    },
    /// `irq:irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: i32,
        /// The action's name (`virtio0-input.0`).
        name: Arc<str>,
    },
    /// `irq:irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: i32,
        /// Whether the handler handled it (`IRQ_HANDLED` = 1).
        ret: i32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// Vector number, see [`SOFTIRQ_NAMES`].
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// Vector number.
        vec: u32,
    },
    /// `irq:softirq_raise`.
    SoftirqRaise {
        /// Vector number.
        vec: u32,
    },
    /// `irq_vectors:<name>_entry` (x86): an architecture interrupt vector begins.
    VectorEntry {
        /// The vector's name, from the event's name (`local_timer`, `reschedule`).
        name: Arc<str>,
        /// The vector number.
        vector: i32,
    },
    /// `irq_vectors:<name>_exit`.
    VectorExit {
        /// The vector's name.
        name: Arc<str>,
        /// The vector number.
        vector: i32,
    },
    /// `nmi:nmi_handler`, written after an NMI handler ran: it began `delta_ns` earlier.
    Nmi {
        /// The handler's address.
        handler: u64,
        /// How long it ran, ns.
        delta_ns: i64,
    },
    /// `power:cpu_idle` entering idle state `state`.
    IdleEnter {
        /// The idle state's number.
        state: u32,
    },
    /// `power:cpu_idle` with state `4294967295` (`PWR_EVENT_EXIT`): idle left.
    IdleExit,
    /// `timer:hrtimer_start`.
    HrtimerStart {
        /// The timer's address.
        hrtimer: u64,
        /// Its callback's address.
        function: u64,
        /// Its expiry, on the timer's clock, ns.
        expires: i64,
    },
    /// `timer:hrtimer_expire_entry`: the callback of `hrtimer` starts.
    HrtimerExpireEntry {
        /// The timer's address.
        hrtimer: u64,
        /// Its callback's address.
        function: u64,
        /// The time the expiry ran at, on the timer's clock, ns.
        now: i64,
    },
    /// `timer:hrtimer_expire_exit`.
    HrtimerExpireExit {
        /// The timer's address.
        hrtimer: u64,
    },
    /// `workqueue:workqueue_execute_start`: a kworker starts a work item.
    WorkStart {
        /// The work item's address.
        work: u64,
        /// Its function's address.
        function: u64,
    },
    /// `workqueue:workqueue_execute_end`.
    WorkEnd {
        /// The work item's address.
        work: u64,
        /// Its function's address.
        function: u64,
    },
    /// `ftrace:print`: a write to `trace_marker`.
    Print {
        /// The text written.
        text: Box<str>,
    },
    /// `ftrace:kernel_stack`: the stack a `stacktrace` trigger saved, innermost first.
    KernelStack {
        /// Return addresses.
        callers: Box<[u64]>,
    },
}

impl Record {
    /// The event's `system:name` (`sched:sched_switch`).
    pub fn event_name(&self) -> String {
        let name = match &self.what {
            What::Switch { .. } => "sched:sched_switch",
            What::Waking { .. } => "sched:sched_waking",
            What::Wakeup { .. } => "sched:sched_wakeup",
            What::IrqEntry { .. } => "irq:irq_handler_entry",
            What::IrqExit { .. } => "irq:irq_handler_exit",
            What::SoftirqEntry { .. } => "irq:softirq_entry",
            What::SoftirqExit { .. } => "irq:softirq_exit",
            What::SoftirqRaise { .. } => "irq:softirq_raise",
            What::VectorEntry { name, .. } => return format!("irq_vectors:{name}_entry"),
            What::VectorExit { name, .. } => return format!("irq_vectors:{name}_exit"),
            What::Nmi { .. } => "nmi:nmi_handler",
            What::IdleEnter { .. } | What::IdleExit => "power:cpu_idle",
            What::HrtimerStart { .. } => "timer:hrtimer_start",
            What::HrtimerExpireEntry { .. } => "timer:hrtimer_expire_entry",
            What::HrtimerExpireExit { .. } => "timer:hrtimer_expire_exit",
            What::WorkStart { .. } => "workqueue:workqueue_execute_start",
            What::WorkEnd { .. } => "workqueue:workqueue_execute_end",
            What::Print { .. } => "ftrace:print",
            What::KernelStack { .. } => "ftrace:kernel_stack",
        };
        name.to_owned()
    }

    /// The event's fields as text, close to the kernel's own rendering
    /// (`prev=stress:123 prio=120 state=R ==> next=latlab-m0:456 prio=4`).
    pub fn detail(&self) -> String {
        match &self.what {
            What::Switch {
                prev,
                prev_state,
                next,
            } => format!(
                "prev={prev} prio={} state={} ==> next={next} prio={}",
                prev.prio,
                task_state(*prev_state),
                next.prio
            ),
            What::Waking { task, target_cpu } | What::Wakeup { task, target_cpu } => {
                format!("{task} prio={} target_cpu={target_cpu}", task.prio)
            }
            What::IrqEntry { irq, name } => format!("irq={irq} name={name}"),
            What::IrqExit { irq, ret } => {
                let ret = if *ret == 1 { "handled" } else { "unhandled" };
                format!("irq={irq} ret={ret}")
            }
            What::SoftirqEntry { vec } | What::SoftirqExit { vec } | What::SoftirqRaise { vec } => {
                format!("vec={vec} [{}]", softirq_name(*vec))
            }
            What::VectorEntry { vector, .. } | What::VectorExit { vector, .. } => {
                format!("vector={vector}")
            }
            What::Nmi { handler, delta_ns } => {
                format!("handler={handler:#x} delta_ns={delta_ns}")
            }
            What::IdleEnter { state } => format!("state={state}"),
            What::IdleExit => "state=exit".to_owned(),
            What::HrtimerStart {
                hrtimer,
                function,
                expires,
            } => format!("hrtimer={hrtimer:#x} function={function:#x} expires={expires}"),
            What::HrtimerExpireEntry {
                hrtimer,
                function,
                now,
            } => format!("hrtimer={hrtimer:#x} function={function:#x} now={now}"),
            What::HrtimerExpireExit { hrtimer } => format!("hrtimer={hrtimer:#x}"),
            What::WorkStart { work, function } | What::WorkEnd { work, function } => {
                format!("work={work:#x} function={function:#x}")
            }
            What::Print { text } => text.trim_end().to_owned(),
            What::KernelStack { callers } => callers
                .iter()
                .map(|caller| format!("{caller:#x}"))
                .collect::<Vec<_>>()
                .join(" <- "),
        }
    }
}

/// The task states `sched_switch` reports in `prev_state`'s low byte; none is set for
/// a task that left runnable (preempted).
const REPORTED_STATES: i64 = 0xff;

/// Whether a task switched out with `prev_state` was still runnable (preempted), not
/// going to sleep.
pub fn left_runnable(prev_state: i64) -> bool {
    prev_state & REPORTED_STATES == 0
}

/// `prev_state` as the kernel prints it: `R`, `S`, `D|K`…, `+` when preempted
/// (`TASK_REPORT_MAX`, the bit above the reported states).
fn task_state(state: i64) -> String {
    const LETTERS: [(i64, &str); 8] = [
        (0x01, "S"),
        (0x02, "D"),
        (0x04, "T"),
        (0x08, "t"),
        (0x10, "X"),
        (0x20, "Z"),
        (0x40, "P"),
        (0x80, "I"),
    ];
    let reported = state & REPORTED_STATES;
    let mut text = if left_runnable(state) {
        "R".to_owned()
    } else {
        LETTERS
            .iter()
            .filter(|(bit, _)| reported & bit != 0)
            .map(|(_, letter)| *letter)
            .collect::<Vec<_>>()
            .join("|")
    };
    if state & 0x100 != 0 {
        text.push('+');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softirq_names_follow_the_kernels_table() {
        assert_eq!(softirq_name(3), "NET_RX");
        assert_eq!(softirq_name(9), "RCU");
        assert_eq!(softirq_name(10), "vec 10");
    }

    #[test]
    fn task_state_reads_like_the_kernels() {
        assert_eq!(task_state(0), "R");
        assert_eq!(task_state(0x100), "R+");
        assert_eq!(task_state(0x1), "S");
        assert_eq!(task_state(0x2 | 0x80), "D|I");
    }

    #[test]
    fn comm_keeps_sixteen_bytes_up_to_the_nul() {
        assert_eq!(Comm::new(b"latlab-m0\0junk").to_string(), "latlab-m0");
        assert_eq!(
            Comm::new(b"0123456789abcdefXYZ").to_string(),
            "0123456789abcdef"
        );
    }
}
