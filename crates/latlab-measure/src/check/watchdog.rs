//! Lockup detectors: the NMI (hard) and soft lockup watchdogs on the task's CPUs.

use super::{among, cpu_list, Check, CheckContext, FactError};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::audit::CheckResult;

/// The hard lockup detector fires an NMI on every watched CPU every few seconds; the
/// soft lockup detector wakes the highest-priority stopper thread there every few
/// seconds. Both interrupt the task.
pub struct Watchdogs;

impl Check for Watchdogs {
    fn id(&self) -> &'static str {
        "watchdogs"
    }

    fn title(&self) -> &'static str {
        "Lockup watchdogs"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let master = r.read("/proc/sys/kernel/watchdog");
        let nmi = r.read("/proc/sys/kernel/nmi_watchdog");
        let soft = r.read("/proc/sys/kernel/soft_watchdog");
        if let (Err(e), Err(_), Err(_)) = (&master, &nmi, &soft) {
            return r.unknown(e.clone());
        }
        // A missing file means the detector is not built in.
        let off = |v: &Result<String, FactError>| v.as_deref().map_or(true, |s| s == "0");
        let master_off = master.as_deref() == Ok("0");
        let nmi = !master_off && !off(&nmi);
        let soft = !master_off && !off(&soft);
        if !nmi && !soft {
            return r.ok("no lockup watchdog is running");
        }
        let watched = match r.read("/proc/sys/kernel/watchdog_cpumask") {
            Ok(mask) => among(&ctx.cpus, &parse_kernel_cpu_list(&mask)),
            Err(_) => ctx.cpus.clone(),
        };
        if watched.is_empty() {
            return r.ok(format!(
                "watchdog_cpumask leaves {} alone",
                super::cpus(&ctx.cpus)
            ));
        }
        let mut what = Vec::new();
        if nmi {
            what.push("the NMI watchdog interrupts them with a performance-counter NMI");
        }
        if soft {
            what.push(
                "the soft lockup watchdog runs its stopper-thread work there every few \
                 seconds, above any real-time priority",
            );
        }
        let housekeeping = ctx.housekeeping();
        let mask_fix = if housekeeping.is_empty() {
            String::new()
        } else {
            format!(
                "sysctl kernel.watchdog_cpumask={} (keeps lockup detection on the other \
                 CPUs), or ",
                cpu_list(&housekeeping)
            )
        };
        r.explain(what.join("; "));
        let names = match (nmi, soft) {
            (true, true) => "NMI and soft lockup watchdogs",
            (true, false) => "NMI watchdog",
            _ => "soft lockup watchdog",
        };
        r.warn(
            format!("{names} on {}", super::cpus(&watched)),
            format!(
                "{mask_fix}sysctl kernel.nmi_watchdog=0 kernel.soft_watchdog=0 (boot: \
                 nmi_watchdog=0 nosoftlockup); the cost: a locked-up CPU is no longer \
                 reported"
            ),
        )
    }
}
