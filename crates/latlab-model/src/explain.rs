//! What got in the way: the explanation of late samples from kernel trace events.
//!
//! With `latlab run --explain`, every sample above the spike threshold is explained
//! from the events the kernel recorded on its CPU between its deadline (less a margin)
//! and the moment the measuring thread read the clock. The window is cut into the
//! parts of a wake-up, as rtla's timerlat analysis cuts it:
//!
//! 1. **delivery** — deadline → the timer interrupt (idle exit, an interrupt already
//!    running, interrupts off, or time the guest never saw);
//! 2. **handler** — the timer interrupt until it woke the measuring thread;
//! 3. **scheduling** — wake → the measuring thread switched in (nested interrupts,
//!    softirqs, NMIs, other threads, the task that kept the CPU);
//! 4. **return** — switched in → the clock read.
//!
//! Every nanosecond of the window belongs to exactly one [`Part`]: a named cause, or the
//! **unexplained** remainder when no event shows what the CPU did (on a virtual machine
//! mostly the host running something else). So the parts of an explanation always add
//! up to its sample, and nothing is blamed on a task or interrupt that no event placed
//! in the window.
//!
//! The catalogue ([`Explain::catalogue`]) sums the parts of every explained spike by
//! cause, per phase and CPU: how many spikes a cause contributed to, its total and
//! largest contribution and its share of the spike time.

use crate::Nanos;
use serde::{Deserialize, Serialize};

/// How much tracing `--explain` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExplainMode {
    /// The cheap set that can stay on for hours: scheduler switches and wake-ups of
    /// the measuring threads, interrupts, softirqs, NMIs, idle.
    Default,
    /// The default set plus hrtimer events, every wake-up, workqueue functions and a
    /// stack of the interrupted code at each wake of a measuring thread.
    Deep,
}

impl ExplainMode {
    /// The name users type (`--explain=deep`).
    pub fn name(self) -> &'static str {
        match self {
            ExplainMode::Default => "default",
            ExplainMode::Deep => "deep",
        }
    }

    /// Parses `default` or `deep`.
    pub fn parse(text: &str) -> Option<ExplainMode> {
        match text {
            "default" | "" => Some(ExplainMode::Default),
            "deep" => Some(ExplainMode::Deep),
            _ => None,
        }
    }
}

/// Everything `--explain` recorded about a run.
///
/// When tracing was unavailable nothing was traced or counted: the file then holds only
/// `mode` and `unavailable`, never counts of 0 that were not measured (see the
/// `Serialize` impl); reading such a file gives the empty figures back.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Explain {
    /// The event set asked for.
    pub mode: ExplainMode,
    /// Why there is no explanation at all (no tracefs, no permission, ...), with the
    /// fix; `null` when tracing ran.
    pub unavailable: Option<String>,
    /// The events traced, `system:name`.
    #[serde(default)]
    pub events: Vec<String>,
    /// The trace clock used (`mono`, or `local` aligned by marker brackets).
    #[serde(default)]
    pub clock: Option<String>,
    /// What this kernel cannot attribute (an event the set wanted that it lacks, and
    /// what goes unexplained without it), said once for the run.
    #[serde(default)]
    pub limits: Vec<String>,
    /// Per-CPU ring-buffer size asked for, KiB.
    #[serde(default)]
    pub buffer_kb: Option<u64>,
    /// How the reader kept up.
    #[serde(default)]
    pub reader: ReaderStats,
    /// The cost of tracing, measured at the start of the run.
    #[serde(default)]
    pub observer: Option<ObserverEffect>,
    /// Spikes handed to the explainer (samples above the threshold).
    #[serde(default)]
    pub spikes_seen: u64,
    /// Spikes explained from a complete event window.
    #[serde(default)]
    pub spikes_explained: u64,
    /// Spikes explained from a window with events missing (ring-buffer overrun or a
    /// lost page): their unexplained part may hide a cause.
    #[serde(default)]
    pub spikes_incomplete: u64,
    /// Spikes that could not be explained: their thread was not pinned (SCHED_DEADLINE)
    /// or its id unknown, their events were no longer held or could not be decoded, or
    /// the spike came while its thread's queue was full.
    #[serde(default)]
    pub spikes_unexplained: u64,
    /// Causes summed over every explained spike, largest total first.
    #[serde(default)]
    pub catalogue: Vec<CauseTotal>,
    /// Spike time per phase and CPU, the base of the catalogue's shares.
    #[serde(default)]
    pub spike_time: Vec<SpikeTime>,
    /// The explanations kept in full: the largest spikes, largest first (bounded).
    #[serde(default)]
    pub spikes: Vec<Explanation>,
}

impl Serialize for Explain {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = serializer.serialize_struct("Explain", 15)?;
        st.serialize_field("mode", &self.mode)?;
        st.serialize_field("unavailable", &self.unavailable)?;
        // Without tracing, the figures below were never measured: left out, not 0.
        if self.unavailable.is_none() {
            st.serialize_field("events", &self.events)?;
            st.serialize_field("clock", &self.clock)?;
            st.serialize_field("limits", &self.limits)?;
            st.serialize_field("buffer_kb", &self.buffer_kb)?;
            st.serialize_field("reader", &self.reader)?;
            st.serialize_field("observer", &self.observer)?;
            st.serialize_field("spikes_seen", &self.spikes_seen)?;
            st.serialize_field("spikes_explained", &self.spikes_explained)?;
            st.serialize_field("spikes_incomplete", &self.spikes_incomplete)?;
            st.serialize_field("spikes_unexplained", &self.spikes_unexplained)?;
            st.serialize_field("catalogue", &self.catalogue)?;
            st.serialize_field("spike_time", &self.spike_time)?;
            st.serialize_field("spikes", &self.spikes)?;
        } else {
            st.skip_field("events")?;
            st.skip_field("clock")?;
            st.skip_field("limits")?;
            st.skip_field("buffer_kb")?;
            st.skip_field("reader")?;
            st.skip_field("observer")?;
            st.skip_field("spikes_seen")?;
            st.skip_field("spikes_explained")?;
            st.skip_field("spikes_incomplete")?;
            st.skip_field("spikes_unexplained")?;
            st.skip_field("catalogue")?;
            st.skip_field("spike_time")?;
            st.skip_field("spikes")?;
        }
        st.end()
    }
}

/// How well the reader thread drained the kernel's buffers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReaderStats {
    /// The CPU the reader ran on (`null`: not pinned).
    pub cpu: Option<usize>,
    /// Sub-buffers (pages) read.
    pub pages: u64,
    /// Events read.
    pub events: u64,
    /// Events the kernel overwrote before they were read (`per_cpu/cpuN/stats`
    /// `overrun`), summed over the traced CPUs.
    pub overrun: u64,
    /// Pages that said events were missing before them.
    pub pages_with_missing_events: u64,
    /// Largest delay between an event being written and being read, when known.
    pub max_lag_ns: Option<Nanos>,
    /// Bytes of events held in memory at most.
    pub held_bytes_max: u64,
}

/// The A/B of tracing's cost: the same measurement with the event set off and on, in
/// short alternating spans at the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserverEffect {
    /// Samples and statistics without tracing.
    pub off: AbSide,
    /// Samples and statistics with the event set on.
    pub on: AbSide,
}

/// One side of the observer-effect A/B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSide {
    /// Samples measured.
    pub samples: u64,
    /// Smallest sample (`null` without samples).
    pub min_ns: Option<Nanos>,
    /// Median (`null` without samples).
    pub p50_ns: Option<Nanos>,
    /// 99th percentile (`null` without samples).
    pub p99_ns: Option<Nanos>,
}

/// What a part of a late wake-up was spent on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Cause {
    /// A device interrupt handler (`irq:irq_handler_entry/exit`).
    Irq {
        /// IRQ number.
        irq: i64,
        /// Its action's name (`virtio0-input.0`).
        name: String,
    },
    /// An architecture interrupt vector other than the wake-up's own timer interrupt
    /// (`irq_vectors:*`: reschedule, call_function, irq_work, ...).
    Vector {
        /// The vector's name, as the event names it (`reschedule`).
        name: String,
    },
    /// A softirq (`NET_RX`, `TIMER`, `RCU`, ...).
    Softirq {
        /// The vector's name.
        name: String,
    },
    /// An NMI handler.
    Nmi {
        /// The handler's address or symbol.
        handler: String,
    },
    /// Another thread that ran on the CPU while the measuring thread waited, or kept
    /// it (the blocking task).
    Thread {
        /// Its command name.
        comm: String,
        /// Its thread id.
        pid: i64,
        /// Its kernel priority as the scheduler events give it (`prio`: 0–99 real-time,
        /// lower is more urgent; 100–139 normal).
        prio: i64,
        /// The workqueue function it was running, when known (kworkers, deep mode).
        function: Option<String>,
        /// The interrupt it handles, when it is a threaded interrupt handler
        /// (`irq/25-virtio0-`: PREEMPT_RT, or `threadirqs`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        irq: Option<ThreadedIrq>,
    },
    /// The CPU was idle at the deadline and had to leave its idle state.
    IdleExit {
        /// The idle state it was in (`cpu_idle` state number), when known.
        state: Option<i64>,
    },
    /// The wake-up's own timer interrupt: from its entry until the measuring thread
    /// was woken, and the rest of it.
    TimerInterrupt,
    /// The kernel's own path: the measuring thread woken, and waiting for the
    /// scheduler, with nothing else recorded on the CPU.
    Scheduler,
    /// From the switch to the measuring thread until it read the clock.
    ReturnToUser,
    /// No event shows what the CPU did: on a virtual machine the host running
    /// something else, otherwise an SMI or code with interrupts off.
    Unexplained {
        /// Which task was current (when known), for a reader to judge: it is not
        /// blamed.
        current: Option<String>,
    },
}

/// The interrupt a threaded handler serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ThreadedIrq {
    /// Its number.
    pub irq: i64,
    /// Its action's name (`virtio0-requests`), as `/proc/irq/N/` lists it; empty when
    /// not known.
    pub name: String,
}

impl ThreadedIrq {
    /// The IRQ number a threaded handler's name gives: `irq/25-virtio0-` (the kernel
    /// names them `irq/N-ACTION`, cut to 15 characters).
    pub fn number_of(comm: &str) -> Option<i64> {
        let rest = comm.strip_prefix("irq/")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        match rest[digits.len()..].starts_with('-') || digits.len() == rest.len() {
            true => digits.parse().ok(),
            false => None,
        }
    }
}

impl Cause {
    /// The cause as people read it: `irq 24 virtio0-input.0`, `softirq NET_RX`,
    /// `thread spin:1234 (fifo/rr 99)`.
    pub fn label(&self) -> String {
        match self {
            Cause::Irq { irq, name } if name.is_empty() => format!("irq {irq}"),
            Cause::Irq { irq, name } => format!("irq {irq} {name}"),
            Cause::Vector { name } => format!("vector {name}"),
            Cause::Softirq { name } => format!("softirq {name}"),
            Cause::Nmi { handler } => format!("nmi {handler}"),
            Cause::Thread {
                comm,
                pid,
                prio,
                function,
                irq,
            } => {
                let mut label = match function {
                    Some(f) => format!("thread {comm}:{pid} ({}, {f})", priority_words(*prio)),
                    None => format!("thread {comm}:{pid} ({})", priority_words(*prio)),
                };
                match irq {
                    Some(ThreadedIrq { irq, name }) if name.is_empty() => {
                        label.push_str(&format!(", handling irq {irq}"))
                    }
                    Some(ThreadedIrq { irq, name }) => {
                        label.push_str(&format!(", handling irq {irq} {name}"))
                    }
                    None => {}
                }
                label
            }
            Cause::IdleExit { state: Some(s) } => format!("idle exit (state {s})"),
            Cause::IdleExit { state: None } => "idle exit".to_string(),
            Cause::TimerInterrupt => "timer interrupt".to_string(),
            Cause::Scheduler => "scheduler".to_string(),
            Cause::ReturnToUser => "return to user".to_string(),
            Cause::Unexplained { current: None } => "unexplained (no guest event)".to_string(),
            Cause::Unexplained { current: Some(c) } => format!("unexplained, {c} current"),
        }
    }

    /// The kind of cause, as the Run's JSON names it (`irq`, `softirq`, `thread`,
    /// `idle-exit`, `unexplained`, ...): what exports label a cause's series with.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Cause::Irq { .. } => "irq",
            Cause::Vector { .. } => "vector",
            Cause::Softirq { .. } => "softirq",
            Cause::Nmi { .. } => "nmi",
            Cause::Thread { .. } => "thread",
            Cause::IdleExit { .. } => "idle-exit",
            Cause::TimerInterrupt => "timer-interrupt",
            Cause::Scheduler => "scheduler",
            Cause::ReturnToUser => "return-to-user",
            Cause::Unexplained { .. } => "unexplained",
        }
    }

    /// Whether the cause is the kernel's own wake-up path (timer interrupt, scheduler,
    /// return to user) rather than something that got in the way.
    pub fn is_own_path(&self) -> bool {
        matches!(
            self,
            Cause::TimerInterrupt | Cause::Scheduler | Cause::ReturnToUser
        )
    }

    /// The key the catalogue sums by: the cause without the details that differ from
    /// spike to spike (the thread ids of the task current in an unexplained gap: what
    /// ran then is kept by name — interrupts off in it, or the host, cannot be told
    /// apart, but where the gaps fall is worth knowing).
    pub fn catalogue_key(&self) -> Cause {
        match self {
            Cause::Unexplained { current } => Cause::Unexplained {
                current: current.as_deref().map(without_pids),
            },
            other => other.clone(),
        }
    }
}

/// `spin:200 or idle` as `spin or idle`: task names without their thread ids.
fn without_pids(current: &str) -> String {
    current
        .split(" or ")
        .map(|task| match task.rsplit_once(':') {
            Some((comm, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => comm,
            _ => task,
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A kernel priority as `chrt` and `nice` speak of it: `prio` 0–99 is real-time
/// priority 99–1 (`fifo/rr 99`), 100–139 is nice −20…19, −1 is SCHED_DEADLINE.
pub fn priority_words(prio: i64) -> String {
    match prio {
        p if p < 0 => "deadline".to_string(),
        p if p < 100 => format!("fifo/rr {}", 99 - p),
        p => format!("nice {}", p - 120),
    }
}

/// The stage of a wake-up a part fell in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Deadline → the timer interrupt.
    Delivery,
    /// The timer interrupt until the measuring thread is woken.
    Handler,
    /// Woken → switched in.
    Scheduling,
    /// Switched in → the clock read.
    Return,
}

/// One part of a late wake-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// What the time went to.
    pub cause: Cause,
    /// Which stage of the wake-up it fell in.
    pub stage: Stage,
    /// Start, relative to the deadline (negative: before it, for a cause already
    /// running at the deadline; the part itself counts only from the deadline).
    pub start_ns: Nanos,
    /// Time of the window it took, ns, net of what nested in it.
    pub duration_ns: Nanos,
}

/// How complete the events of a spike's window were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Coverage {
    /// Every event of the window was read.
    Complete,
    /// Events of the window's CPU were lost (overrun or a page marked missing
    /// events): the unexplained part may hide a cause.
    EventsLost,
}

/// The explanation of one spike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The phase of the stream the spike belongs to.
    pub phase: String,
    /// The measuring thread's index.
    pub thread: usize,
    /// The CPU it woke on.
    pub cpu: Option<usize>,
    /// When it was due, relative to the start of the stream's measured span (as the
    /// stream's spikes give it).
    pub at_ns: Nanos,
    /// When it was due on CLOCK_MONOTONIC (ns since boot, suspend excluded), to line
    /// it up with other traces and logs of the machine (`null`: not known).
    #[serde(default)]
    pub due_monotonic_ns: Option<Nanos>,
    /// The sample.
    pub latency_ns: Nanos,
    /// Whether the window's events were complete.
    pub coverage: Coverage,
    /// Each stage's length (`null` when the event that ends it was not seen).
    pub stages: Stages,
    /// The parts, in time order; with `unexplained`, they add up to the sample.
    pub parts: Vec<Part>,
    /// The events of the window, in time order, for `latlab explain --spike N`: those
    /// nearest the deadline and nearest the wake-up when the window held more than a
    /// kept explanation lists.
    pub events: Vec<WindowEvent>,
    /// Events of the window between those listed that were left out (a long spike on a
    /// busy CPU has thousands); 0 when every one is listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events_left_out: u64,
}

/// For `skip_serializing_if`: a zero count is left out (the run module has its own: the
/// two modules may not depend on each other both ways).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most events of its window an explanation lists: half nearest the deadline, half
/// nearest the wake-up (the scene before the window is always listed). A 10 ms spike on
/// a busy CPU holds thousands; kept whole, the 200 largest made a 20-minute run's Run
/// 100 MB.
pub const MAX_LISTED_EVENTS: usize = 256;

impl Explanation {
    /// The unexplained time: the sum of the unexplained parts.
    pub fn unexplained_ns(&self) -> Nanos {
        Nanos(
            self.parts
                .iter()
                .filter(|p| matches!(p.cause, Cause::Unexplained { .. }))
                .map(|p| p.duration_ns.0)
                .sum(),
        )
    }

    /// The sum of all parts (equals `latency_ns`).
    pub fn parts_total_ns(&self) -> Nanos {
        Nanos(self.parts.iter().map(|p| p.duration_ns.0).sum())
    }
}

/// The length of each stage of a wake-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stages {
    /// Deadline → timer interrupt entry.
    pub delivery_ns: Option<Nanos>,
    /// Timer interrupt entry → the measuring thread woken.
    pub handler_ns: Option<Nanos>,
    /// Woken → switched in.
    pub scheduling_ns: Option<Nanos>,
    /// Switched in → the clock read.
    pub return_ns: Option<Nanos>,
}

/// One kernel event of a spike's window, as `latlab explain --spike N` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowEvent {
    /// Time relative to the deadline.
    pub t_ns: Nanos,
    /// The event, `system:name`.
    pub event: String,
    /// Its fields as text (`irq=24 name=virtio0-input.0`).
    pub detail: String,
}

/// A cause summed over the explained spikes of one phase and CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseTotal {
    /// The cause.
    pub cause: Cause,
    /// The phase.
    pub phase: String,
    /// The CPU (`null`: the thread was not pinned).
    pub cpu: Option<usize>,
    /// Explained spikes it contributed to.
    pub spikes: u64,
    /// Its total contribution.
    pub total_ns: Nanos,
    /// Its largest contribution to one spike.
    pub max_ns: Nanos,
}

/// The total latency of the explained spikes of one phase and CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeTime {
    /// The phase.
    pub phase: String,
    /// The CPU.
    pub cpu: Option<usize>,
    /// Explained spikes.
    pub spikes: u64,
    /// Their summed latency.
    pub total_ns: Nanos,
}

impl Explain {
    /// The explanation of a run in `mode` before any spike: nothing traced, counted or
    /// kept yet.
    pub fn empty(mode: ExplainMode) -> Explain {
        Explain {
            mode,
            unavailable: None,
            events: Vec::new(),
            clock: None,
            limits: Vec::new(),
            buffer_kb: None,
            reader: ReaderStats::default(),
            observer: None,
            spikes_seen: 0,
            spikes_explained: 0,
            spikes_incomplete: 0,
            spikes_unexplained: 0,
            catalogue: Vec::new(),
            spike_time: Vec::new(),
            spikes: Vec::new(),
        }
    }

    /// The share of its phase's and CPU's spike time a catalogue entry stands for, in
    /// `[0, 1]` (`None` when that time is unknown or zero).
    pub fn share(&self, entry: &CauseTotal) -> Option<f64> {
        let base = self
            .spike_time
            .iter()
            .find(|t| t.phase == entry.phase && t.cpu == entry.cpu)?;
        (base.total_ns.0 > 0).then(|| entry.total_ns.0 as f64 / base.total_ns.0 as f64)
    }

    /// Adds one explanation to the catalogue and the spike time (the explanation
    /// itself is kept by the caller, if at all).
    pub fn add_to_catalogue(&mut self, e: &Explanation) {
        match self
            .spike_time
            .iter_mut()
            .find(|t| t.phase == e.phase && t.cpu == e.cpu)
        {
            Some(t) => {
                t.spikes += 1;
                t.total_ns = Nanos(t.total_ns.0 + e.latency_ns.0);
            }
            None => self.spike_time.push(SpikeTime {
                phase: e.phase.clone(),
                cpu: e.cpu,
                spikes: 1,
                total_ns: e.latency_ns,
            }),
        }
        // One contribution per cause per spike: a cause seen twice in a window adds up.
        let mut per_cause: Vec<(Cause, i64)> = Vec::new();
        for part in &e.parts {
            let key = part.cause.catalogue_key();
            match per_cause.iter_mut().find(|(c, _)| *c == key) {
                Some((_, d)) => *d += part.duration_ns.0,
                None => per_cause.push((key, part.duration_ns.0)),
            }
        }
        for (cause, d) in per_cause {
            match self
                .catalogue
                .iter_mut()
                .find(|c| c.cause == cause && c.phase == e.phase && c.cpu == e.cpu)
            {
                Some(c) => {
                    c.spikes += 1;
                    c.total_ns = Nanos(c.total_ns.0 + d);
                    c.max_ns = Nanos(c.max_ns.0.max(d));
                }
                None => self.catalogue.push(CauseTotal {
                    cause,
                    phase: e.phase.clone(),
                    cpu: e.cpu,
                    spikes: 1,
                    total_ns: Nanos(d),
                    max_ns: Nanos(d),
                }),
            }
        }
    }

    /// Orders the catalogue: largest total first.
    pub fn sort_catalogue(&mut self) {
        self.catalogue
            .sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.cause.cmp(&b.cause)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_causes_kind_name_is_its_json_tag() {
        let causes = [
            Cause::Irq {
                irq: 24,
                name: "virtio0-input.0".into(),
            },
            Cause::Vector {
                name: "reschedule".into(),
            },
            Cause::Softirq {
                name: "NET_RX".into(),
            },
            Cause::Nmi {
                handler: "perf_event_nmi_handler".into(),
            },
            Cause::Thread {
                comm: "spin".into(),
                pid: 7,
                prio: 0,
                function: None,
                irq: None,
            },
            Cause::IdleExit { state: Some(1) },
            Cause::TimerInterrupt,
            Cause::Scheduler,
            Cause::ReturnToUser,
            Cause::Unexplained { current: None },
        ];
        for cause in causes {
            let json = serde_json::to_value(&cause).unwrap();
            assert_eq!(json["kind"], cause.kind_name(), "{cause:?}");
        }
    }

    #[test]
    fn a_threaded_handler_is_labelled_with_the_interrupt_it_serves() {
        assert_eq!(ThreadedIrq::number_of("irq/25-virtio0-"), Some(25));
        assert_eq!(ThreadedIrq::number_of("irq/9"), Some(9));
        assert_eq!(ThreadedIrq::number_of("irq_work/1"), None);
        assert_eq!(ThreadedIrq::number_of("irq/x-y"), None);
        let handler = Cause::Thread {
            comm: "irq/25-virtio0-".into(),
            pid: 124,
            prio: 49,
            function: None,
            irq: Some(ThreadedIrq {
                irq: 25,
                name: "virtio0-requests".into(),
            }),
        };
        assert_eq!(
            handler.label(),
            "thread irq/25-virtio0-:124 (fifo/rr 50), handling irq 25 virtio0-requests"
        );
    }

    #[test]
    fn priorities_read_as_chrt_and_nice_say_them() {
        assert_eq!(priority_words(0), "fifo/rr 99");
        assert_eq!(priority_words(4), "fifo/rr 95");
        assert_eq!(priority_words(120), "nice 0");
        assert_eq!(priority_words(100), "nice -20");
        assert_eq!(priority_words(-1), "deadline");
    }

    #[test]
    fn the_catalogue_counts_a_cause_once_per_spike_and_shares_add_up() {
        let part = |cause: Cause, d: i64| Part {
            cause,
            stage: Stage::Scheduling,
            start_ns: Nanos(0),
            duration_ns: Nanos(d),
        };
        let spin = Cause::Thread {
            comm: "spin".into(),
            pid: 7,
            prio: 0,
            function: None,
            irq: None,
        };
        let spike = |parts: Vec<Part>| Explanation {
            phase: "main".into(),
            thread: 0,
            cpu: Some(1),
            at_ns: Nanos(1),
            due_monotonic_ns: None,
            latency_ns: Nanos(parts.iter().map(|p| p.duration_ns.0).sum()),
            coverage: Coverage::Complete,
            stages: Stages::default(),
            parts,
            events: Vec::new(),
            events_left_out: 0,
        };
        let mut explain = Explain {
            mode: ExplainMode::Default,
            unavailable: None,
            events: Vec::new(),
            clock: None,
            limits: Vec::new(),
            buffer_kb: None,
            reader: ReaderStats::default(),
            observer: None,
            spikes_seen: 2,
            spikes_explained: 2,
            spikes_incomplete: 0,
            spikes_unexplained: 0,
            catalogue: Vec::new(),
            spike_time: Vec::new(),
            spikes: Vec::new(),
        };
        let gap = |who: &str| Cause::Unexplained {
            current: Some(who.into()),
        };
        explain.add_to_catalogue(&spike(vec![
            part(gap("idle"), 10),
            part(spin.clone(), 100),
            part(spin.clone(), 50),
        ]));
        explain.add_to_catalogue(&spike(vec![
            part(gap("spin:7"), 40),
            part(spin.clone(), 200),
        ]));
        explain.sort_catalogue();
        let spin_total = &explain.catalogue[0];
        assert_eq!(spin_total.cause, spin);
        assert_eq!(
            (spin_total.spikes, spin_total.total_ns, spin_total.max_ns),
            (2, Nanos(350), Nanos(200))
        );
        // Unexplained gaps are summed by the task current in them, without its id.
        let gaps: Vec<_> = explain.catalogue[1..]
            .iter()
            .map(|c| (c.cause.label(), c.spikes, c.total_ns))
            .collect();
        assert_eq!(
            gaps,
            [
                ("unexplained, spin current".to_string(), 1, Nanos(40)),
                ("unexplained, idle current".to_string(), 1, Nanos(10)),
            ]
        );
        assert_eq!(
            without_pids("idle or kworker/1:2:77"),
            "idle or kworker/1:2"
        );
        let shares: f64 = explain
            .catalogue
            .iter()
            .map(|c| explain.share(c).unwrap())
            .sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
    }

    #[test]
    fn an_unavailable_explanation_holds_no_figures_it_never_measured() {
        let mut explain = Explain::empty(ExplainMode::Default);
        explain.unavailable = Some("not permitted".into());
        let json = serde_json::to_value(&explain).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["mode", "unavailable"]);
        let back: Explain = serde_json::from_value(json).unwrap();
        assert_eq!(back, explain);
        // A traced run keeps its counts, zeros included: those were measured.
        let traced = serde_json::to_value(Explain::empty(ExplainMode::Deep)).unwrap();
        assert_eq!(traced["spikes_seen"], 0);
        assert_eq!(traced["reader"]["overrun"], 0);
    }
}
