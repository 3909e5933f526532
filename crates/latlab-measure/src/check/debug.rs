//! Kernel debugging that costs latency: lock checking, sanitizers, an active tracer.

use super::{Check, CheckContext};
use latlab_model::audit::CheckResult;

/// Options that multiply the cost of locking or memory access everywhere.
const HEAVY: [&str; 9] = [
    "CONFIG_PROVE_LOCKING",
    "CONFIG_LOCKDEP",
    "CONFIG_DEBUG_LOCK_ALLOC",
    "CONFIG_LOCK_STAT",
    "CONFIG_KASAN",
    "CONFIG_KCSAN",
    "CONFIG_KMSAN",
    "CONFIG_KCOV",
    "CONFIG_GCOV_KERNEL",
];

/// Options that add checks on hot paths (preemption, sleeping, locks, slabs).
const LIGHT: [&str; 9] = [
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_DEBUG_ATOMIC_SLEEP",
    "CONFIG_DEBUG_SPINLOCK",
    "CONFIG_DEBUG_MUTEXES",
    "CONFIG_DEBUG_RT_MUTEXES",
    "CONFIG_DEBUG_OBJECTS",
    "CONFIG_SLUB_DEBUG_ON",
    "CONFIG_IRQSOFF_TRACER",
    "CONFIG_PREEMPT_TRACER",
];

/// A kernel built for debugging rather than for latency.
pub struct DebugKernel;

impl Check for DebugKernel {
    fn id(&self) -> &'static str {
        "debug-kernel"
    }

    fn title(&self) -> &'static str {
        "Debug kernel"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let config = match &ctx.config {
            Ok(c) => c,
            Err(e) => return r.unknown(e.clone()),
        };
        let heavy: Vec<&str> = HEAVY.into_iter().filter(|k| config.enabled(k)).collect();
        let light: Vec<&str> = LIGHT.into_iter().filter(|k| config.enabled(k)).collect();
        let boot: Vec<String> = ["slub_debug", "debug_pagealloc", "kasan"]
            .into_iter()
            .filter_map(|p| {
                let v = ctx.cmdline_param(p)?;
                (p != "kasan" || v != "off").then(|| format!("{p}={v}"))
            })
            .collect();
        let found: Vec<String> = heavy
            .iter()
            .chain(&light)
            .map(|k| format!("{k}=y"))
            .collect();
        r.note(
            &config.source,
            if found.is_empty() {
                "no lockdep, sanitizer or latency tracer option set".to_string()
            } else {
                found.join(" ")
            },
        );
        if !boot.is_empty() {
            r.note("/proc/cmdline", boot.join(" "));
        }
        let fix = "boot a production kernel (distribution kernels set none of these) or \
                   rebuild without them; debug kernels are for finding bugs, not for \
                   measuring latency";
        if !heavy.is_empty() {
            r.explain(
                "lock validation or a sanitizer runs on every lock or memory access, \
                 multiplying kernel latencies",
            );
            return r.fail(format!("debug kernel: {}", heavy.join(", ")), fix);
        }
        if !light.is_empty() || !boot.is_empty() {
            let what: Vec<String> = light.iter().map(|k| k.to_string()).chain(boot).collect();
            r.explain("extra checks on preemption, locking or allocation paths add latency");
            return r.warn(format!("debug options: {}", what.join(", ")), fix);
        }
        r.ok("no lock validation, sanitizer or latency tracer built in")
    }
}

/// A kernel tracer or trace events left running.
pub struct Tracing;

impl Check for Tracing {
    fn id(&self) -> &'static str {
        "tracing"
    }

    fn title(&self) -> &'static str {
        "Kernel tracing"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let boot: Vec<String> = ["ftrace", "trace_event"]
            .into_iter()
            .filter_map(|p| ctx.cmdline_param(p).map(|v| format!("{p}={v}")))
            .collect();
        if !boot.is_empty() {
            r.note("/proc/cmdline", boot.join(" "));
        }
        let mounts = match r.read_quietly("/proc/mounts") {
            Ok(m) => m,
            Err(e) => return r.unknown(e),
        };
        // tracefs itself, else the tracing directory of a mounted debugfs.
        let mount_of = |kind: &str| {
            mounts.lines().find_map(|l| {
                let mut f = l.split_whitespace();
                let point = f.nth(1)?;
                (f.next()? == kind).then(|| point.to_string())
            })
        };
        let dir =
            mount_of("tracefs").or_else(|| mount_of("debugfs").map(|d| format!("{d}/tracing")));
        let Some(dir) = dir else {
            r.note("/proc/mounts", "no tracefs or debugfs mounted");
            if boot.is_empty() {
                return r.ok("tracefs is not mounted and the command line starts no tracer");
            }
            return r.warn(
                format!("the kernel command line starts tracing: {}", boot.join(" ")),
                "remove ftrace= and trace_event= from the kernel command line",
            );
        };
        let tracer = match r.read(&format!("{dir}/current_tracer")) {
            Ok(t) => t,
            Err(e) => return r.unknown(e),
        };
        let events = r
            .read_quietly(&format!("{dir}/set_event"))
            .map(|e| e.lines().count())
            .unwrap_or(0);
        let on = r.read(&format!("{dir}/tracing_on")).ok();
        r.note(
            format!("{dir}/set_event"),
            format!("{events} events enabled"),
        );
        let reset = format!(
            "echo nop > {dir}/current_tracer; echo > {dir}/set_event (or `trace-cmd reset`)"
        );
        if tracer != "nop" {
            r.explain(
                "a tracer runs on every traced kernel path (in the seeds, the function tracer \
                 raised a latency maximum from 30 to 171 µs)",
            );
            return r.warn(format!("the {tracer} tracer is active"), reset);
        }
        if events > 0 && on.as_deref() == Some("1") {
            r.explain("each enabled event costs time wherever it fires");
            return r.warn(format!("{events} trace events are recording"), reset);
        }
        if !boot.is_empty() {
            return r.warn(
                format!("the kernel command line starts tracing: {}", boot.join(" ")),
                "remove ftrace= and trace_event= from the kernel command line",
            );
        }
        r.ok("no tracer is active and no trace event is recording")
    }
}
