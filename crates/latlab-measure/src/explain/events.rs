//! The trace events each mode enables, and what a kernel without some of them cannot
//! attribute (the event set and roles of research Part 1 §1.3).

use super::SessionError;
use latlab_model::explain::ExplainMode;
use latlab_rt::tracefs::{TraceError, TraceInstance};
use latlab_trace::EventFormat;
use std::fs;

/// An event of a set and what latlab cannot attribute without it.
struct Wanted {
    system: &'static str,
    name: &'static str,
    without: &'static str,
}

const fn wanted(system: &'static str, name: &'static str, without: &'static str) -> Wanted {
    Wanted {
        system,
        name,
        without,
    }
}

/// The cheap set that can stay on for hours (the x86 `irq_vectors` are added from the
/// instance's own list).
const DEFAULT_SET: &[Wanted] = &[
    wanted(
        "sched",
        "sched_switch",
        "the threads that ran before a late wake cannot be named",
    ),
    wanted(
        "sched",
        "sched_waking",
        "the instant a measuring thread was woken is unknown, so timer delivery and \
         scheduling delay cannot be split",
    ),
    wanted("irq", "irq_handler_entry", "device interrupts go unseen"),
    wanted(
        "irq",
        "irq_handler_exit",
        "device interrupts have no duration",
    ),
    wanted("irq", "softirq_entry", "softirqs go unseen"),
    wanted("irq", "softirq_exit", "softirqs have no duration"),
    wanted("nmi", "nmi_handler", "time taken by NMIs stays unexplained"),
    wanted(
        "power",
        "cpu_idle",
        "time spent leaving an idle state stays unexplained",
    ),
];

/// What deep adds to the default set.
const DEEP_EXTRA: &[Wanted] = &[
    wanted(
        "sched",
        "sched_wakeup",
        "the instant a woken thread became runnable is unknown",
    ),
    wanted(
        "timer",
        "hrtimer_start",
        "the kernel's own deadline of a sleep is unknown",
    ),
    wanted(
        "timer",
        "hrtimer_expire_entry",
        "other timers expiring in the same interrupt go unseen",
    ),
    wanted(
        "timer",
        "hrtimer_expire_exit",
        "timer callbacks have no duration",
    ),
    wanted(
        "workqueue",
        "workqueue_execute_start",
        "kworkers cannot be named by the function they ran",
    ),
    wanted(
        "workqueue",
        "workqueue_execute_end",
        "kworker functions have no duration",
    ),
];

/// What a session enabled.
#[derive(Debug, Default)]
pub(crate) struct Enabled {
    /// `system:name` of every event enabled.
    pub(crate) events: Vec<String>,
    /// Their formats, plus those of the records the kernel adds itself (markers and
    /// stacks), for decoding.
    pub(crate) formats: Vec<EventFormat>,
    /// One sentence per missing event: what cannot be attributed without it.
    pub(crate) limits: Vec<String>,
}

/// The x86 interrupt-vector events this kernel has, as `*_entry`/`*_exit` pairs
/// (timer, IPIs, irq_work…; empty on other architectures).
fn vector_events(instance: &TraceInstance) -> Vec<String> {
    let dir = instance.dir().join("events/irq_vectors");
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with("_entry") || name.ends_with("_exit"))
        .collect();
    names.sort();
    names
}

/// Enables `mode`'s events that exist in `instance`, and says what the missing ones
/// leave unexplained.
pub(crate) fn enable(instance: &TraceInstance, mode: ExplainMode) -> Result<Enabled, SessionError> {
    let mut enabled = Enabled::default();
    let mut set: Vec<&Wanted> = DEFAULT_SET.iter().collect();
    if mode == ExplainMode::Deep {
        set.extend(DEEP_EXTRA);
    }
    for event in set {
        if !enable_one(instance, event.system, event.name, &mut enabled)? {
            enabled.limits.push(format!(
                "no trace event {}:{} on this kernel: {}",
                event.system, event.name, event.without
            ));
        }
    }
    let vectors = vector_events(instance);
    if vectors.is_empty() {
        enabled.limits.push(
            "no irq_vectors trace events on this kernel (x86 only): timer-interrupt delivery \
             cannot be told apart from its handler, and IPIs go unseen"
                .to_string(),
        );
    }
    for name in &vectors {
        enable_one(instance, "irq_vectors", name, &mut enabled)?;
    }
    for name in ["print", "kernel_stack"] {
        let path = instance
            .dir()
            .join("events/ftrace")
            .join(name)
            .join("format");
        if let Some(format) = read_format(&path)? {
            enabled.formats.push(format);
        }
    }
    Ok(enabled)
}

/// Enables one event; false if the kernel has no such event.
fn enable_one(
    instance: &TraceInstance,
    system: &str,
    name: &str,
    enabled: &mut Enabled,
) -> Result<bool, SessionError> {
    let path = match instance.event_format(system, name) {
        Ok(path) => path,
        Err(TraceError::NoEvent { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let Some(format) = read_format(&path)? else {
        return Ok(false);
    };
    instance.set_event(system, name, true)?;
    enabled.events.push(format!("{system}:{name}"));
    enabled.formats.push(format);
    Ok(true)
}

/// Reads and parses a `format` file; `None` if there is none.
fn read_format(path: &std::path::Path) -> Result<Option<EventFormat>, SessionError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SessionError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    EventFormat::parse(&text)
        .map(Some)
        .map_err(|source| SessionError::Description {
            path: path.to_path_buf(),
            source,
        })
}

/// The `trigger` text that records a kernel stack at each wake-up of `tids` (deep
/// mode): inside the timer callback, the stack of the code the interrupt stopped.
pub(crate) fn stack_trigger(tids: &[i32]) -> Option<String> {
    let condition: Vec<String> = tids.iter().map(|tid| format!("pid == {tid}")).collect();
    (!condition.is_empty()).then(|| format!("stacktrace if {}", condition.join(" || ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_trigger_names_every_measuring_thread() {
        assert_eq!(stack_trigger(&[]), None);
        assert_eq!(
            stack_trigger(&[12, 34]).as_deref(),
            Some("stacktrace if pid == 12 || pid == 34")
        );
    }
}
