//! Virtualisation: a hypervisor under the kernel, and the time it steals.

use super::{Check, CheckContext};
use latlab_model::audit::CheckResult;

/// Steal share of a task CPU's time since boot from which the host is taking the CPU
/// away measurably.
const STEAL_FAIL_PERCENT: f64 = 1.0;

/// Under a hypervisor, the host can deschedule a vCPU at any moment, and nothing the
/// guest configures bounds that.
pub struct Virtualization;

/// Steal time as a percentage of all time of `cpuN` lines in `/proc/stat`.
fn steal_percent(stat: &str, cpu: usize) -> Option<f64> {
    let label = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label.as_str()))?;
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = v.iter().sum();
    let steal = *v.get(7)?;
    (total > 0).then(|| steal as f64 * 100.0 / total as f64)
}

impl Check for Virtualization {
    fn id(&self) -> &'static str {
        "virtualization"
    }

    fn title(&self) -> &'static str {
        "Virtualisation"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let Some(what) = ctx.virtualization.clone() else {
            if let Err(e) = r.read_quietly("/proc/cpuinfo") {
                return r.unknown(format!("{e}: its hypervisor flag is the first sign"));
            }
            r.note("/proc/cpuinfo flags", "no hypervisor flag");
            return r.ok("bare metal: no hypervisor or container seen");
        };
        r.note(
            "/proc/cpuinfo, /sys/hypervisor/type, /sys/class/dmi/id/sys_vendor",
            what.clone(),
        );
        if !ctx.in_vm() {
            r.explain(
                "the kernel and its configuration are the host's; fixes that change the \
                 kernel must be made there",
            );
            return r.info(format!("in a container ({what})"), None);
        }
        let stat = r.read_quietly("/proc/stat").unwrap_or_default();
        let mut worst: Option<(usize, f64)> = None;
        for &cpu in &ctx.cpus {
            if let Some(p) = steal_percent(&stat, cpu) {
                r.note(
                    format!("/proc/stat cpu{cpu} steal"),
                    format!("{p:.2} % since boot"),
                );
                if worst.is_none_or(|(_, w)| p > w) {
                    worst = Some((cpu, p));
                }
            }
        }
        let fix = "nothing inside the VM removes this: measure on bare metal for real-time \
                   figures, or on the host pin each vCPU thread to its own isolated CPU \
                   (isolcpus/nohz_full there), give the vCPU threads a real-time priority \
                   and keep those CPUs out of deep idle states";
        r.explain(
            "the host can take a vCPU away at any moment, and wake-ups also wait for the host \
             to deliver the timer interrupt",
        );
        match worst {
            Some((cpu, p)) if p >= STEAL_FAIL_PERCENT => r.fail(
                format!("virtualised: {what}; the host took {p:.1} % of CPU {cpu} (steal)"),
                fix,
            ),
            Some((_, p)) => r.warn(
                format!(
                    "virtualised: {what}; steal at most {p:.2} % on {}",
                    super::cpus(&ctx.cpus)
                ),
                fix,
            ),
            None => r.warn(format!("virtualised: {what}; steal unreadable"), fix),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn steal_share() {
        let stat =
            "cpu  1 0 0 0 0 0 0 0 0 0\ncpu0 90 0 0 0 0 0 0 10 0 0\ncpu1 5 0 0 95 0 0 0 0 0 0\n";
        assert_eq!(super::steal_percent(stat, 0), Some(10.0));
        assert_eq!(super::steal_percent(stat, 1), Some(0.0));
        assert_eq!(super::steal_percent(stat, 2), None);
    }
}
