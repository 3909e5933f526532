//! [`RecordDecoder`]: each enabled event's field offsets resolved once, then pages
//! read into [`Record`]s without a lookup by name.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Comm, Record, Task, What};
use crate::{decode_page, EventFormat, Field, FieldKind, PageLayout, TraceError};

/// What a page held, besides its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageSummary {
    /// Records decoded (appended to the caller's vector).
    pub records: usize,
    /// Events lost before this page (ring-buffer overwrite).
    pub missed_events: bool,
    /// How many, when the kernel stored the count.
    pub missed_count: Option<u64>,
    /// Records of events the decoder was not given a use for, skipped.
    pub unknown: usize,
    /// Records too short for their event's fields, skipped.
    pub malformed: usize,
}

/// Where each field this decoder reads sits in a record.
#[derive(Debug, Clone)]
enum Layout {
    Switch {
        prev: TaskFields,
        prev_state: Slot,
        next: TaskFields,
    },
    Waking(TaskFields, Slot),
    Wakeup(TaskFields, Slot),
    IrqEntry(Slot, Slot),
    IrqExit(Slot, Slot),
    Softirq(SoftirqEdge, Slot),
    Vector {
        entry: bool,
        name: Arc<str>,
        vector: Slot,
    },
    Nmi(Slot, Slot),
    CpuIdle(Slot),
    HrtimerStart(Slot, Slot, Slot),
    HrtimerExpireEntry(Slot, Slot, Slot),
    HrtimerExpireExit(Slot),
    Work {
        start: bool,
        work: Slot,
        function: Slot,
    },
    Print {
        text_offset: usize,
    },
    KernelStack {
        size: Slot,
        callers_offset: usize,
    },
}

#[derive(Debug, Clone, Copy)]
enum SoftirqEdge {
    Entry,
    Exit,
    Raise,
}

#[derive(Debug, Clone, Copy)]
struct TaskFields {
    comm: Slot,
    pid: Slot,
    prio: Slot,
}

/// A field's place: offset, size and how to read it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    offset: usize,
    size: usize,
    kind: FieldKind,
}

impl Slot {
    fn bytes<'a>(&self, payload: &'a [u8]) -> Option<&'a [u8]> {
        let own = payload.get(self.offset..self.offset.checked_add(self.size)?)?;
        if !matches!(self.kind, FieldKind::DataLoc | FieldKind::RelLoc) {
            return Some(own);
        }
        let location = u32::from_ne_bytes(own.try_into().ok()?);
        let mut offset = (location & 0xffff) as usize;
        if self.kind == FieldKind::RelLoc {
            offset += self.offset + self.size;
        }
        payload.get(offset..offset + (location >> 16) as usize)
    }

    /// An integer field, sign-extended when the kernel declares it signed.
    fn int(&self, payload: &[u8]) -> Option<i64> {
        let bytes = self.bytes(payload)?;
        let signed = matches!(self.kind, FieldKind::Integer { signed: true });
        Some(match bytes.len() {
            1 if signed => i64::from(bytes[0] as i8),
            1 => i64::from(bytes[0]),
            2 if signed => i64::from(i16::from_ne_bytes(bytes.try_into().ok()?)),
            2 => i64::from(u16::from_ne_bytes(bytes.try_into().ok()?)),
            4 if signed => i64::from(i32::from_ne_bytes(bytes.try_into().ok()?)),
            4 => i64::from(u32::from_ne_bytes(bytes.try_into().ok()?)),
            8 => i64::from_ne_bytes(bytes.try_into().ok()?),
            _ => return None,
        })
    }

    fn i32(&self, payload: &[u8]) -> Option<i32> {
        // Truncation is the kernel's own: these fields are `int`/`pid_t`.
        self.int(payload).map(|value| value as i32)
    }

    fn u32(&self, payload: &[u8]) -> Option<u32> {
        self.int(payload).map(|value| value as u32)
    }

    fn u64(&self, payload: &[u8]) -> Option<u64> {
        self.int(payload).map(|value| value as u64)
    }

    fn text(&self, payload: &[u8]) -> Option<Arc<str>> {
        let bytes = self.bytes(payload)?;
        let text = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
        Some(Arc::from(String::from_utf8_lossy(text).as_ref()))
    }
}

impl TaskFields {
    fn read(&self, payload: &[u8]) -> Option<Task> {
        Some(Task {
            pid: self.pid.i32(payload)?,
            prio: self.prio.i32(payload)?,
            comm: Comm::new(self.comm.bytes(payload)?),
        })
    }
}

/// Turns `trace_pipe_raw` pages into [`Record`]s, knowing where each field of the
/// enabled events sits.
#[derive(Debug, Clone)]
pub struct RecordDecoder {
    page: PageLayout,
    pid: Slot,
    events: HashMap<u16, Layout>,
}

impl RecordDecoder {
    /// A decoder for pages of `page` layout holding the events of `formats` (pass the
    /// formats of every enabled event; those it has no use for are counted as unknown).
    ///
    /// Fails when an event it uses lacks a field it reads, naming both: that kernel's
    /// layout differs from the one latlab knows.
    pub fn new(
        page: PageLayout,
        formats: impl IntoIterator<Item = EventFormat>,
    ) -> Result<RecordDecoder, TraceError> {
        let mut pid = None;
        let mut events = HashMap::new();
        for format in formats {
            if let Some(layout) = layout_of(&format)? {
                pid = Some(slot(&format, "common_pid")?);
                events.insert(format.id, layout);
            }
        }
        // Without any known event the pid slot is never read; the common layout is
        // the same for every event.
        let pid = pid.unwrap_or(Slot {
            offset: 4,
            size: 4,
            kind: FieldKind::Integer { signed: true },
        });
        Ok(RecordDecoder { page, pid, events })
    }

    /// The page layout pages are read with.
    pub fn page_layout(&self) -> &PageLayout {
        &self.page
    }

    /// Decodes one page of `cpu`'s `trace_pipe_raw`, appending its records (oldest
    /// first) to `into`. A page whose header or record lengths do not fit is an error
    /// and appends nothing.
    pub fn decode_page(
        &self,
        cpu: u32,
        page: &[u8],
        into: &mut Vec<Record>,
    ) -> Result<PageSummary, TraceError> {
        let decoded = decode_page(&self.page, page)?;
        let mut summary = PageSummary {
            missed_events: decoded.missed_events,
            missed_count: decoded.missed_count,
            ..PageSummary::default()
        };
        for raw in &decoded.records {
            let payload = raw.payload;
            let Some(id) = payload.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])) else {
                summary.malformed += 1;
                continue;
            };
            let Some(layout) = self.events.get(&id) else {
                summary.unknown += 1;
                continue;
            };
            let record = self.pid.i32(payload).and_then(|pid| {
                Some(Record {
                    ts: raw.timestamp,
                    cpu,
                    pid,
                    what: read(layout, payload)?,
                })
            });
            match record {
                Some(record) => {
                    into.push(record);
                    summary.records += 1;
                }
                None => summary.malformed += 1,
            }
        }
        Ok(summary)
    }
}

fn read(layout: &Layout, payload: &[u8]) -> Option<What> {
    Some(match layout {
        Layout::Switch {
            prev,
            prev_state,
            next,
        } => What::Switch {
            prev: prev.read(payload)?,
            prev_state: prev_state.int(payload)?,
            next: next.read(payload)?,
        },
        Layout::Waking(task, cpu) => What::Waking {
            task: task.read(payload)?,
            target_cpu: cpu.i32(payload)?,
        },
        Layout::Wakeup(task, cpu) => What::Wakeup {
            task: task.read(payload)?,
            target_cpu: cpu.i32(payload)?,
        },
        Layout::IrqEntry(irq, name) => What::IrqEntry {
            irq: irq.i32(payload)?,
            name: name.text(payload)?,
        },
        Layout::IrqExit(irq, ret) => What::IrqExit {
            irq: irq.i32(payload)?,
            ret: ret.i32(payload)?,
        },
        Layout::Softirq(edge, vec) => {
            let vec = vec.u32(payload)?;
            match edge {
                SoftirqEdge::Entry => What::SoftirqEntry { vec },
                SoftirqEdge::Exit => What::SoftirqExit { vec },
                SoftirqEdge::Raise => What::SoftirqRaise { vec },
            }
        }
        Layout::Vector {
            entry,
            name,
            vector,
        } => {
            let (name, vector) = (name.clone(), vector.i32(payload)?);
            if *entry {
                What::VectorEntry { name, vector }
            } else {
                What::VectorExit { name, vector }
            }
        }
        Layout::Nmi(handler, delta) => What::Nmi {
            handler: handler.u64(payload)?,
            delta_ns: delta.int(payload)?,
        },
        Layout::CpuIdle(state) => match state.u32(payload)? {
            u32::MAX => What::IdleExit,
            state => What::IdleEnter { state },
        },
        Layout::HrtimerStart(hrtimer, function, expires) => What::HrtimerStart {
            hrtimer: hrtimer.u64(payload)?,
            function: function.u64(payload)?,
            expires: expires.int(payload)?,
        },
        Layout::HrtimerExpireEntry(hrtimer, function, now) => What::HrtimerExpireEntry {
            hrtimer: hrtimer.u64(payload)?,
            function: function.u64(payload)?,
            now: now.int(payload)?,
        },
        Layout::HrtimerExpireExit(hrtimer) => What::HrtimerExpireExit {
            hrtimer: hrtimer.u64(payload)?,
        },
        Layout::Work {
            start,
            work,
            function,
        } => {
            let (work, function) = (work.u64(payload)?, function.u64(payload)?);
            if *start {
                What::WorkStart { work, function }
            } else {
                What::WorkEnd { work, function }
            }
        }
        Layout::Print { text_offset } => {
            // `char buf[]`: the text runs to the record's end (rounded up with NULs).
            let bytes = payload.get(*text_offset..)?;
            let text = bytes.split(|&byte| byte == 0).next().unwrap_or_default();
            What::Print {
                text: String::from_utf8_lossy(text).into(),
            }
        }
        Layout::KernelStack {
            size,
            callers_offset,
        } => {
            // `caller[8]` is declared, but the kernel stores `size` entries
            // (`__ftrace_trace_stack`), as many as the record holds.
            let entries = usize::try_from(size.int(payload)?).ok()?;
            let stored = payload.get(*callers_offset..)?;
            let callers = stored[..entries.saturating_mul(8).min(stored.len())]
                .chunks_exact(8)
                .map(|word| u64::from_ne_bytes(word.try_into().unwrap_or_default()))
                .take_while(|&caller| caller != u64::MAX && caller != 0)
                .collect();
            What::KernelStack { callers }
        }
    })
}

fn slot(format: &EventFormat, name: &str) -> Result<Slot, TraceError> {
    let field: &Field = format.field(name).ok_or_else(|| TraceError::Description {
        file: format!("format of {}", format.name),
        problem: format!("no field {name:?}, which latlab reads"),
    })?;
    Ok(Slot {
        offset: field.offset,
        size: field.size,
        kind: field.kind,
    })
}

fn task_fields(format: &EventFormat, prefix: &str) -> Result<TaskFields, TraceError> {
    Ok(TaskFields {
        comm: slot(format, &format!("{prefix}comm"))?,
        pid: slot(format, &format!("{prefix}pid"))?,
        prio: slot(format, &format!("{prefix}prio"))?,
    })
}

/// Where the fields of `format` sit, or `None` for an event the decoder has no use for.
fn layout_of(format: &EventFormat) -> Result<Option<Layout>, TraceError> {
    let field = |name| slot(format, name);
    Ok(Some(match format.name.as_str() {
        "sched_switch" => Layout::Switch {
            prev: task_fields(format, "prev_")?,
            prev_state: field("prev_state")?,
            next: task_fields(format, "next_")?,
        },
        "sched_waking" => Layout::Waking(task_fields(format, "")?, field("target_cpu")?),
        "sched_wakeup" => Layout::Wakeup(task_fields(format, "")?, field("target_cpu")?),
        "irq_handler_entry" => Layout::IrqEntry(field("irq")?, field("name")?),
        "irq_handler_exit" => Layout::IrqExit(field("irq")?, field("ret")?),
        "softirq_entry" => Layout::Softirq(SoftirqEdge::Entry, field("vec")?),
        "softirq_exit" => Layout::Softirq(SoftirqEdge::Exit, field("vec")?),
        "softirq_raise" => Layout::Softirq(SoftirqEdge::Raise, field("vec")?),
        "nmi_handler" => Layout::Nmi(field("handler")?, field("delta_ns")?),
        "cpu_idle" => Layout::CpuIdle(field("state")?),
        "hrtimer_start" => {
            Layout::HrtimerStart(field("hrtimer")?, field("function")?, field("expires")?)
        }
        "hrtimer_expire_entry" => {
            Layout::HrtimerExpireEntry(field("hrtimer")?, field("function")?, field("now")?)
        }
        "hrtimer_expire_exit" => Layout::HrtimerExpireExit(field("hrtimer")?),
        "workqueue_execute_start" | "workqueue_execute_end" => Layout::Work {
            start: format.name == "workqueue_execute_start",
            work: field("work")?,
            function: field("function")?,
        },
        "print" => Layout::Print {
            text_offset: field("buf")?.offset,
        },
        "kernel_stack" => Layout::KernelStack {
            size: field("size")?,
            callers_offset: field("caller")?.offset,
        },
        name => match vector_of(format, name) {
            Some((entry, vector_name)) => Layout::Vector {
                entry,
                name: Arc::from(vector_name),
                vector: field("vector")?,
            },
            None => return Ok(None),
        },
    }))
}

/// An `irq_vectors` event: `<vector>_entry` or `<vector>_exit` whose one own field is
/// `vector` (x86's `arch/x86/include/asm/trace/irq_vectors.h`). Recognised by shape,
/// so vectors added by later kernels are read too.
fn vector_of<'a>(format: &EventFormat, name: &'a str) -> Option<(bool, &'a str)> {
    let own: Vec<&str> = format
        .fields
        .iter()
        .map(|field| field.name.as_str())
        .filter(|name| !name.starts_with("common_"))
        .collect();
    if own != ["vector"] {
        return None;
    }
    if let Some(vector) = name.strip_suffix("_entry") {
        Some((true, vector))
    } else {
        name.strip_suffix("_exit").map(|vector| (false, vector))
    }
}
