//! CPU frequency scaling: governor and limits of the task's CPUs.

use super::{cpu_list, Check, CheckContext};
use latlab_model::audit::CheckResult;

/// A governor that lowers the frequency when the CPU looks idle makes every wake-up
/// start slow, and a frequency change itself stalls the CPU (Koolwal: no on-demand
/// scaling).
pub struct Governor;

impl Check for Governor {
    fn id(&self) -> &'static str {
        "cpufreq"
    }

    fn title(&self) -> &'static str {
        "CPU frequency"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let mut scaling = Vec::new(); // (cpu, governor)
        let mut capped = Vec::new(); // (cpu, max kHz, hardware max kHz)
        let mut performance = Vec::new();
        let mut other = Vec::new();
        let mut without = Vec::new();
        for &cpu in &ctx.cpus {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
            if !ctx.files.exists(&dir) {
                without.push(cpu);
                continue;
            }
            let governor = match r.read(&format!("{dir}/scaling_governor")) {
                Ok(g) => g,
                Err(e) => return r.unknown(e),
            };
            if cpu == ctx.cpus[0] {
                let _ = r.read(&format!("{dir}/scaling_driver"));
            }
            let khz = |name: &str| {
                ctx.files
                    .read(&format!("{dir}/{name}"))
                    .and_then(|v| v.parse::<u64>().ok())
            };
            if let (Some(max), Some(hw_max)) = (khz("scaling_max_freq"), khz("cpuinfo_max_freq")) {
                if max < hw_max {
                    r.note(format!("{dir}/scaling_max_freq"), max.to_string());
                    r.note(format!("{dir}/cpuinfo_max_freq"), hw_max.to_string());
                    capped.push((cpu, max, hw_max));
                }
            }
            match governor.as_str() {
                "performance" => performance.push(cpu),
                "powersave" | "ondemand" | "conservative" | "schedutil" => {
                    scaling.push((cpu, governor))
                }
                _ => other.push((cpu, governor)),
            }
        }
        let cpus = cpu_list(&ctx.cpus);
        let set_performance = format!(
            "cpupower -c {cpus} frequency-set -g performance (or write performance to \
             /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor for each task CPU; \
             persist with a tuned profile or a boot script)"
        );
        if without.len() == ctx.cpus.len() {
            r.note(
                format!("/sys/devices/system/cpu/cpu{}/cpufreq", ctx.cpus[0]),
                "absent",
            );
            if ctx.in_vm() {
                r.explain("the host sets the frequency, which cannot be changed from inside");
                return r.info(
                    "no frequency scaling visible in the VM",
                    Some("on the host: the performance governor for the vCPUs' CPUs".into()),
                );
            }
            r.explain("the frequency is left to the firmware");
            return r.info(
                "no cpufreq driver",
                Some(
                    "in the BIOS/UEFI choose a maximum-performance power profile (no \
                     firmware-controlled P-states)"
                        .into(),
                ),
            );
        }
        if !scaling.is_empty() {
            let mut govs: Vec<&str> = scaling.iter().map(|(_, g)| g.as_str()).collect();
            govs.dedup();
            let on: Vec<usize> = scaling.iter().map(|(c, _)| *c).collect();
            r.explain(
                "the frequency drops while the task sleeps, so each wake-up runs slow until it \
                 ramps up, and a change stalls the CPU (Koolwal: no on-demand scaling)",
            );
            return r.warn(
                format!("governor {} on {}", govs.join("/"), super::cpus(&on)),
                set_performance,
            );
        }
        if !capped.is_empty() {
            let (cpu, max, hw) = capped[0];
            r.explain("the task runs slower than the CPU can");
            return r.warn(
                format!(
                    "the frequency of CPU {cpu} is capped at {} MHz of {} MHz{}",
                    max / 1000,
                    hw / 1000,
                    if capped.len() > 1 {
                        format!(" ({} CPUs capped)", capped.len())
                    } else {
                        String::new()
                    }
                ),
                format!(
                    "echo {hw} > /sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_max_freq \
                     (and so for each capped CPU); if the cap comes back, look for thermal or \
                     power limits (thermald, the BIOS)"
                ),
            );
        }
        if !other.is_empty() {
            let (cpu, gov) = &other[0];
            r.explain("the frequency is whatever was set by hand");
            return r.info(
                format!("governor {gov} on CPU {cpu}"),
                Some(set_performance),
            );
        }
        let mut finding = format!(
            "governor performance on {}, not capped",
            super::cpus(&performance)
        );
        if !without.is_empty() {
            finding.push_str(&format!("; no cpufreq on {}", super::cpus(&without)));
        }
        r.ok(finding)
    }
}
