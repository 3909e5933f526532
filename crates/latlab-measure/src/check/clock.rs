//! Time keeping: high-resolution timers and the clocksource.

use super::{cpus, Check, CheckContext};
use latlab_model::audit::CheckResult;

/// Whether timers fire at their deadline or at the next tick.
pub struct HighResTimers;

impl Check for HighResTimers {
    fn id(&self) -> &'static str {
        "hrtimers"
    }

    fn title(&self) -> &'static str {
        "High-resolution timers"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let built = ctx
            .config
            .as_ref()
            .ok()
            .map(|c| (c.source.clone(), c.enabled("CONFIG_HIGH_RES_TIMERS")));
        if let Some((source, on)) = &built {
            r.note(
                source,
                if *on {
                    "CONFIG_HIGH_RES_TIMERS=y"
                } else {
                    "CONFIG_HIGH_RES_TIMERS not set"
                },
            );
            if !on {
                r.explain("every sleep ends at a tick, up to a whole tick late");
                return r.fail(
                    "the kernel has no high-resolution timers",
                    "boot a kernel built with CONFIG_HIGH_RES_TIMERS=y (every distribution \
                     kernel is)",
                );
            }
        }
        let list = match r.read_quietly("/proc/timer_list") {
            Ok(text) => text,
            Err(e) => {
                r.note("/proc/timer_list", e.to_string());
                return r.unknown(format!(
                    "{e}; whether high-resolution mode is active on each CPU is only shown there"
                ));
            }
        };
        // "cpu: N" opens each CPU's section; ".hres_active : 1" is inside it.
        let mut cpu = None;
        let mut low_res = Vec::new();
        let mut seen = Vec::new();
        for line in list.lines() {
            if let Some(n) = line.strip_prefix("cpu: ") {
                cpu = n.trim().parse::<usize>().ok();
            } else if let Some(v) = line.trim().strip_prefix(".hres_active") {
                let active = v.trim_start_matches([' ', ':', '\t']).trim() == "1";
                if let Some(c) = cpu.filter(|c| ctx.cpus.contains(c)) {
                    seen.push(c);
                    if !active {
                        low_res.push(c);
                    }
                }
            }
        }
        r.note(
            "/proc/timer_list .hres_active",
            if low_res.is_empty() {
                format!("1 on {}", cpus(&seen))
            } else {
                format!("0 on {}", cpus(&low_res))
            },
        );
        if seen.is_empty() {
            return r.unknown("/proc/timer_list shows no .hres_active for the target CPUs");
        }
        if low_res.is_empty() {
            r.explain("timers fire at their deadline, not at the next tick");
            r.ok("high-resolution mode is active")
        } else {
            r.explain("sleeps end at the next tick, up to a whole tick late");
            r.fail(
                format!("high-resolution mode is off on {}", cpus(&low_res)),
                "remove highres=off from the kernel command line; a clock event device \
                 that supports one-shot mode is needed (see dmesg for 'Switched to \
                 high resolution mode')",
            )
        }
    }
}

/// The clocksource: what every clock read costs, and whether it can be trusted.
pub struct Clocksource;

impl Check for Clocksource {
    fn id(&self) -> &'static str {
        "clocksource"
    }

    fn title(&self) -> &'static str {
        "Clocksource"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let base = "/sys/devices/system/clocksource/clocksource0";
        let current = match r.read(&format!("{base}/current_clocksource")) {
            Ok(c) => c,
            Err(e) => return r.unknown(e),
        };
        let available = r
            .read(&format!("{base}/available_clocksource"))
            .unwrap_or_default();
        let tsc_available = available.split_whitespace().any(|c| c == "tsc");
        match current.as_str() {
            "tsc" => {
                let info = r.read_quietly("/proc/cpuinfo").unwrap_or_default();
                let flags: Vec<&str> = info
                    .lines()
                    .find(|l| l.starts_with("flags"))
                    .map(|l| l.split_whitespace().collect())
                    .unwrap_or_default();
                let has = |f: &str| flags.contains(&f);
                let stable = ["constant_tsc", "nonstop_tsc"];
                r.note(
                    "/proc/cpuinfo flags",
                    stable
                        .iter()
                        .map(|f| format!("{f}: {}", if has(f) { "yes" } else { "no" }))
                        .collect::<Vec<_>>()
                        .join(", "),
                );
                if stable.iter().all(|f| has(f)) {
                    r.explain(
                        "a constant rate that keeps counting in idle states: the cheapest and \
                         most precise clock, read in user space",
                    );
                    r.ok("tsc, stable")
                } else {
                    r.explain(
                        "the CPU does not promise a constant, non-stop TSC: the kernel may \
                         find it unstable and fall back to a slow clocksource",
                    );
                    r.warn(
                        "tsc, not known to be stable",
                        "watch dmesg for 'Marking TSC unstable'; in the BIOS disable \
                         power features that stop the TSC; if hpet takes over, see this \
                         check again",
                    )
                }
            }
            "kvm-clock"
            | "hyperv_clocksource_tsc_page"
            | "xen"
            | "arch_sys_counter"
            | "riscv_clocksource"
            | "timer" => {
                r.explain("a clock the vDSO reads without entering the kernel");
                r.ok(current)
            }
            "jiffies" => r.fail(
                "jiffies: time advances only at ticks",
                "the platform lacks a usable clocksource; check dmesg for clocksource errors",
            ),
            slow => {
                let fix = if tsc_available {
                    format!(
                        "echo tsc > {base}/current_clocksource (boot: clocksource=tsc); only \
                         if the TSC is stable: the kernel left it for a reason (dmesg)"
                    )
                } else {
                    "none inside the kernel: this platform offers no faster clocksource".to_string()
                };
                r.explain(
                    "every clock read is a system call and a device read of about a \
                     microsecond, which both slows the task and blurs what is measured",
                );
                r.warn(format!("{slow}, a slow clocksource"), fix)
            }
        }
    }
}
