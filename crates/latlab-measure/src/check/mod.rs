//! The readiness audit behind `latlab check`: one small module per check (or per
//! closely related group), each behind [`Check`], all listed once in [`CHECKS`].
//!
//! Checks judge the configuration for the CPUs the task will run on: they read files
//! under a root (normally `/`, a fixture tree in tests) through the [`CheckContext`],
//! record every value that decided the verdict as evidence, and name a concrete fix.
//! A check that cannot read what it needs says `unknown` with the reason — never `ok`.
//! Caller credentials come from `/proc/self/status` and `/proc/self/limits` under the
//! root, so fixtures can fake them; nothing here makes a system call of its own.

mod caller;
mod clock;
mod console;
mod context;
mod cpufreq;
mod cpuidle;
mod debug;
mod irq;
mod irq_threads;
mod isolation;
mod memory;
mod preemption;
mod rt_tasks;
mod smi;
mod smt;
mod throttling;
mod tick;
mod virt;
mod watchdog;

pub use context::{CheckContext, FactError, IoWhy, KernelConfig, Recorder, Task};

use latlab_model::audit::{Audit, CheckResult};
use latlab_model::spec::SchedSpec;

/// One check of the audit.
pub trait Check: Sync {
    /// Stable identifier, used in the Run and by the summary (`rt-throttling`).
    fn id(&self) -> &'static str;
    /// What is checked, for people (`RT throttling`).
    fn title(&self) -> &'static str;
    /// Judges the configuration. Never panics: what cannot be read is `unknown`.
    fn run(&self, ctx: &CheckContext) -> CheckResult;
}

/// Every check, in the order the audit reports them: the kernel, then the CPUs the
/// task runs on, then memory, the caller's rights and the platform.
pub static CHECKS: &[&dyn Check] = &[
    &preemption::PreemptionModel,
    &tick::Tick,
    &clock::HighResTimers,
    &clock::Clocksource,
    &debug::DebugKernel,
    &debug::Tracing,
    &throttling::RtThrottling,
    &isolation::Isolation,
    &smt::SmtSiblings,
    &cpufreq::Governor,
    &cpuidle::IdleStates,
    &irq::IrqAffinity,
    &irq::Irqbalance,
    &tick::TimerMigration,
    &watchdog::Watchdogs,
    &rt_tasks::RtTasks,
    &irq_threads::IrqThreads,
    &memory::TransparentHugePages,
    &memory::Swap,
    &caller::RtPriorityRight,
    &caller::MemoryLockRight,
    &virt::Virtualization,
    &smi::SystemManagementInterrupts,
    &console::Console,
];

/// Runs every check.
pub fn audit(ctx: &CheckContext) -> Audit {
    Audit {
        cpus: ctx.cpus.clone(),
        priority: ctx.priority,
        checks: CHECKS.iter().map(|check| check.run(ctx)).collect(),
    }
}

/// The configuration judged for every CPU any phase of `plan` measures, at the first
/// phase's policy (scenarios keep one policy): what `latlab run` keeps in its Run.
pub fn audit_of_plan(plan: &crate::plan::RunPlan) -> Audit {
    let cpus: Vec<usize> = plan
        .phases
        .iter()
        .flat_map(|p| p.request.cpus.clone())
        .collect();
    let policy = plan.phases[0].setup.policy;
    audit(&CheckContext::new(
        crate::facts::FactReader::system(),
        Some(&cpus),
        priority_of(&policy),
    ))
}

/// The real-time priority a task at `policy` competes at, for [`CheckContext::new`]:
/// its FIFO/RR priority, 99 for SCHED_DEADLINE (which outranks every FIFO thread, so
/// this errs on the side of reporting), 0 for the other policies.
pub fn priority_of(policy: &SchedSpec) -> u8 {
    match *policy {
        SchedSpec::Fifo { priority } | SchedSpec::Rr { priority } => {
            u8::try_from(priority.clamp(0, 99)).unwrap_or(99)
        }
        SchedSpec::Deadline { .. } => 99,
        SchedSpec::Other { .. } | SchedSpec::Batch { .. } | SchedSpec::Idle => 0,
    }
}

/// Formats CPUs as a kernel CPU list (`0-3,5`).
fn cpu_list(cpus: &[usize]) -> String {
    latlab_model::spec::format_cpu_list(cpus)
}

/// `CPU 3` or `CPUs 0-3,5`, for findings.
fn cpus(list: &[usize]) -> String {
    match list {
        [one] => format!("CPU {one}"),
        _ => format!("CPUs {}", cpu_list(list)),
    }
}

/// The CPUs of `cpus` that are also in `set`.
fn among(cpus: &[usize], set: &[usize]) -> Vec<usize> {
    cpus.iter().copied().filter(|c| set.contains(c)).collect()
}

/// The CPUs of `cpus` that are not in `set`.
fn outside(cpus: &[usize], set: &[usize]) -> Vec<usize> {
    cpus.iter().copied().filter(|c| !set.contains(c)).collect()
}

/// Shortens a long value for evidence (`/proc/cmdline` can be kilobytes).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_lower_case() {
        let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.id()).collect();
        assert!(ids
            .iter()
            .all(|id| id.chars().all(|c| c.is_ascii_lowercase() || c == '-')));
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "duplicate check id");
    }

    #[test]
    fn clipping_keeps_short_text() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 3), "abc…");
    }
}
