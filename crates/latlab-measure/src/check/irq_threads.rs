//! Threaded interrupt handlers on the task's CPUs, judged by priority against the task.
//!
//! On PREEMPT_RT every device interrupt's handler runs in a kernel thread
//! (`irq/25-virtio0-`, SCHED_FIFO 50 by default; `threadirqs` does the same on other
//! kernels, and some drivers thread theirs anyway): the hard interrupt only wakes it,
//! and the thread then competes by priority like any task. Two misconfigurations are
//! classic: a task below the IRQ threads of its CPUs (each interrupt's handling runs
//! before it), and a task above all of them while it waits for a device (its device's
//! handler cannot run until it sleeps).

use super::irq::interrupts;
use super::{cpu_list, Check, CheckContext, Task};
use latlab_model::audit::CheckResult;

/// How many threads a finding names before it says "and N more".
const NAMED: usize = 6;

/// Threaded interrupt handlers against the task's priority.
pub struct IrqThreads;

impl Check for IrqThreads {
    fn id(&self) -> &'static str {
        "irq-threads"
    }

    fn title(&self) -> &'static str {
        "IRQ threads"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let tasks = match ctx.tasks() {
            Ok(t) => t,
            Err(e) => return r.unknown(e.to_string()),
        };
        let names = r
            .read_quietly("/proc/interrupts")
            .map(|t| interrupts(&t))
            .unwrap_or_default();
        let all: Vec<(&Task, i64)> = tasks
            .iter()
            .filter_map(|t| Some((t, t.threaded_irq()?)))
            .collect();
        let mut threads: Vec<(&Task, i64)> = all
            .iter()
            .copied()
            .filter(|(t, _)| {
                t.allowed
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|c| ctx.cpus.contains(c)))
            })
            .collect();
        if threads.is_empty() && !all.is_empty() {
            r.explain("their interrupts are routed elsewhere, and the threads follow them");
            return r.ok(format!(
                "none of the {} IRQ threads may run on {}",
                all.len(),
                super::cpus(&ctx.cpus)
            ));
        }
        if threads.is_empty() {
            r.explain(
                "a handler that is not threaded runs in hard interrupt context, before any \
                 task on its CPU, whatever the task's priority",
            );
            return r.info(
                format!(
                    "no threaded interrupt handler may run on {} (neither PREEMPT_RT nor \
                     threadirqs)",
                    super::cpus(&ctx.cpus)
                ),
                None,
            );
        }
        threads.sort_by_key(|(t, irq)| (std::cmp::Reverse(t.rt_priority), *irq));
        let name = |t: &Task, irq: i64| match names.get(&(irq as u32)) {
            Some((device, _)) => format!("irq {irq} {device} ({} {})", t.comm, t.policy_label()),
            None => format!("irq {irq} ({} {})", t.comm, t.policy_label()),
        };
        for (t, irq) in &threads {
            r.note(
                format!("/proc/{}/task/{}/stat", t.pid, t.tid),
                format!(
                    "{} on {}",
                    name(t, *irq),
                    t.allowed
                        .as_deref()
                        .map_or("unknown CPUs".to_string(), cpu_list)
                ),
            );
        }
        let describe = |list: &[(&Task, i64)]| {
            let mut named: Vec<String> = list
                .iter()
                .take(NAMED)
                .map(|(t, irq)| name(t, *irq))
                .collect();
            if list.len() > NAMED {
                named.push(format!("and {} more", list.len() - NAMED));
            }
            named.join(", ")
        };
        let on = super::cpus(&ctx.cpus);
        if ctx.priority == 0 {
            r.explain(
                "a task that is not real-time runs after every real-time thread, the \
                 interrupt threads included",
            );
            return r.warn(
                format!(
                    "the task is not real-time: {} IRQ thread(s) on {on} preempt it: {}",
                    threads.len(),
                    describe(&threads)
                ),
                "run it at a real-time priority above the IRQ threads it does not wait for \
                 (latlab run -P f:PRIO)",
            );
        }
        let task = format!("the task (fifo:{})", ctx.priority);
        let above: Vec<(&Task, i64)> = threads
            .iter()
            .copied()
            .filter(|(t, _)| t.rt_priority >= u32::from(ctx.priority))
            .collect();
        if !above.is_empty() {
            let highest = above.iter().map(|(t, _)| t.rt_priority).max().unwrap_or(0);
            r.explain(format!(
                "each interrupt's handling runs before {task} on its CPU: the hard handler \
                 wakes its thread, which outranks the task"
            ));
            return r.warn(
                format!(
                    "{} IRQ thread(s) at or above {task} on {on}: {}",
                    above.len(),
                    describe(&above)
                ),
                format!(
                    "{}, keeping only the IRQ threads of devices it waits for above it; or \
                     move their interrupts off the task CPUs (echo OTHER_CPUS > \
                     /proc/irq/N/smp_affinity_list: the thread follows its interrupt); or \
                     lower them (chrt -f -p 1 PID)",
                    match highest {
                        ..=98 => format!("run the task above them (-P f:{})", highest + 1),
                        // Nothing is above 99: they must come down.
                        _ => "lower those at 99 below the task (chrt -f -p 98 PID)".to_string(),
                    }
                ),
            );
        }
        r.explain(format!(
            "their handling waits while {task} runs; a task that waits for a device (a NIC, \
             a fieldbus) needs that device's IRQ thread above it, or its handling waits too"
        ));
        r.info(
            format!(
                "{task} is above all {} IRQ thread(s) on {on}: {}",
                threads.len(),
                describe(&threads)
            ),
            Some(match ctx.priority {
                ..=98 => format!(
                    "for a device the task waits for, raise its IRQ thread above the task: \
                     chrt -f -p {} PID (ps -eo pid,comm | grep irq/N-)",
                    ctx.priority + 1
                ),
                // Nothing is above 99: the task must come down to let one above.
                _ => "for a device the task waits for, its IRQ thread must be above the \
                      task, which at 99 nothing can be: run the task at 98 or below \
                      (latlab run -P f:98) and that IRQ thread at 99 (chrt -f -p 99 PID)"
                    .to_string(),
            }),
        )
    }
}
