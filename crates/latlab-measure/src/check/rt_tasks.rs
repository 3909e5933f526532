//! Other real-time threads that may run on the task's CPUs: kernel threads and
//! real-time user processes (threaded interrupt handlers: `irq_threads`).

use super::{Check, CheckContext, Task};
use latlab_model::audit::CheckResult;

/// How many threads a finding names before it says "and N more".
const NAMED: usize = 6;

/// A real-time thread at or above the task's priority on its CPU preempts it whenever
/// it runs (McKenney: read IRQ-thread priorities from /proc/PID/stat).
pub struct RtTasks;

/// The per-CPU stopper threads (`migration/N`) outrank everything by design and run
/// only to migrate tasks or stop the machine; judging them says nothing. Threaded
/// interrupt handlers are judged on their own (`irq-threads`).
fn is_stopper(t: &Task) -> bool {
    t.kernel && t.comm.starts_with("migration/")
}

fn describe(tasks: &[&Task]) -> String {
    let mut named: Vec<String> = tasks
        .iter()
        .take(NAMED)
        .map(|t| format!("{} {}", t.comm, t.policy_label()))
        .collect();
    if tasks.len() > NAMED {
        named.push(format!("and {} more", tasks.len() - NAMED));
    }
    named.join(", ")
}

impl Check for RtTasks {
    fn id(&self) -> &'static str {
        "rt-tasks"
    }

    fn title(&self) -> &'static str {
        "RT threads"
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
        let mut rt: Vec<&Task> = tasks
            .iter()
            .filter(|t| t.is_realtime() && !is_stopper(t))
            .filter(|t| t.threaded_irq().is_none())
            .filter(|t| {
                t.allowed
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|c| ctx.cpus.contains(c)))
            })
            .collect();
        // Highest priority first; deadline tasks outrank every FIFO/RR task.
        rt.sort_by_key(|t| (std::cmp::Reverse((t.policy == 6, t.rt_priority)), t.pid));
        for t in &rt {
            r.note(
                format!("/proc/{}/task/{}/stat", t.pid, t.tid),
                format!(
                    "{} {}{} on {}",
                    t.comm,
                    t.policy_label(),
                    if t.kernel { " (kernel)" } else { "" },
                    t.allowed
                        .as_deref()
                        .map_or("unknown CPUs".to_string(), super::cpus)
                ),
            );
        }
        let cpus = super::cpus(&ctx.cpus);
        let task = if ctx.priority == 0 {
            "the task (not real-time)".to_string()
        } else {
            format!("the task (fifo:{})", ctx.priority)
        };
        let above: Vec<&Task> = rt
            .iter()
            .copied()
            .filter(|t| t.policy == 6 || t.rt_priority >= u32::from(ctx.priority))
            .collect();
        if !above.is_empty() {
            r.explain(format!("they preempt {task} whenever they run on its CPU"));
            return r.warn(
                format!(
                    "{} threads at or above {task} on {cpus}: {}",
                    above.len(),
                    describe(&above)
                ),
                format!(
                    "lower them (chrt -f -p PRIO PID) or move them off the task CPUs \
                     (taskset -p -c OTHER_CPUS PID) where the kernel allows it, or run the \
                     task above fifo:{}; keep the IRQ thread of a device the task waits for \
                     above the task",
                    above.iter().map(|t| t.rt_priority).max().unwrap_or(0)
                ),
            );
        }
        if !rt.is_empty() {
            r.explain(format!(
                "{task} preempts them; they matter only if it waits for one of them"
            ));
            return r.info(
                format!(
                    "{} real-time threads below {task} on {cpus}: {}",
                    rt.len(),
                    describe(&rt)
                ),
                None,
            );
        }
        r.ok(format!(
            "no other real-time thread may run on {cpus} (stopper threads aside)"
        ))
    }
}
