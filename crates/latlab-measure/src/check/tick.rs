//! The scheduler tick (HZ, NO_HZ_FULL) and timer migration.

use super::{among, cpu_list, outside, Check, CheckContext};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::audit::CheckResult;

/// The tick rate and whether the tick can stop on a busy CPU.
pub struct Tick;

impl Check for Tick {
    fn id(&self) -> &'static str {
        "tick"
    }

    fn title(&self) -> &'static str {
        "Tick (HZ, NO_HZ_FULL)"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let config = match &ctx.config {
            Ok(c) => c,
            Err(e) => return r.unknown(e.clone()),
        };
        let Some(hz) = config.get("CONFIG_HZ").map(str::to_string) else {
            r.note(&config.source, "no CONFIG_HZ");
            return r.unknown(format!("{} sets no CONFIG_HZ", config.source));
        };
        r.note(&config.source, format!("CONFIG_HZ={hz}"));
        let full_built = config.enabled("CONFIG_NO_HZ_FULL");
        r.note(
            &config.source,
            if full_built {
                "CONFIG_NO_HZ_FULL=y"
            } else {
                "CONFIG_NO_HZ_FULL not set"
            },
        );
        r.explain(format!(
            "the task's timer is a high-resolution timer and does not wait for the tick, \
             but the tick interrupts a busy CPU {hz} times a second; only NO_HZ_FULL stops \
             it while one task runs"
        ));
        let targets = ctx.isolation_candidates();
        if !full_built {
            return r.info(
                format!("HZ {hz}; NO_HZ_FULL not built"),
                Some(format!(
                    "only tasks that busy-poll need it: a kernel with CONFIG_NO_HZ_FULL=y, \
                     booted with nohz_full={}",
                    cpu_list(&targets)
                )),
            );
        }
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let nohz = r
            .read("/sys/devices/system/cpu/nohz_full")
            .map(|t| parse_kernel_cpu_list(&t))
            .unwrap_or_default();
        let missing = outside(&ctx.cpus, &nohz);
        if missing.is_empty() {
            return r.ok(format!(
                "HZ {hz}; nohz_full on {}",
                super::cpus(&among(&ctx.cpus, &nohz))
            ));
        }
        r.info(
            format!(
                "HZ {hz}; NO_HZ_FULL built, not active on {}",
                super::cpus(&missing)
            ),
            Some(format!(
                "for tasks that busy-poll: boot with nohz_full={}",
                cpu_list(&targets)
            )),
        )
    }
}

/// `kernel.timer_migration`: whether timers of idle CPUs move to busy ones.
pub struct TimerMigration;

impl Check for TimerMigration {
    fn id(&self) -> &'static str {
        "timer-migration"
    }

    fn title(&self) -> &'static str {
        "Timer migration"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        match r.read("/proc/sys/kernel/timer_migration").as_deref() {
            Ok("0") => {
                r.explain("each CPU expires only its own timers");
                r.ok("timer migration is off")
            }
            Ok(_) => {
                r.explain(
                    "timers of idle CPUs are handed to CPUs that are awake, which can be the \
                     task's (tuned's realtime profile turns it off)",
                );
                r.warn(
                    "timer migration is on",
                    "sysctl kernel.timer_migration=0 (persist in /etc/sysctl.d/)",
                )
            }
            Err(e) => r.unknown(e),
        }
    }
}
