//! Device interrupts on the task's CPUs, and irqbalance moving them there.

use super::{among, cpu_list, Check, CheckContext};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::audit::CheckResult;
use std::collections::HashMap;

/// How many IRQs a finding names before it says "and N more".
const NAMED: usize = 6;

/// An interrupt handler runs before any task on its CPU (McKenney: direct IRQs away
/// from the real-time CPU through /proc/irq/N/smp_affinity).
pub struct IrqAffinity;

/// One IRQ routed to a task CPU.
struct Routed {
    irq: u32,
    name: String,
    cpus: Vec<usize>,
    count: u64,
}

/// `/proc/interrupts`: IRQ number → (device name, count per CPU).
pub(super) fn interrupts(text: &str) -> HashMap<u32, (String, HashMap<usize, u64>)> {
    let mut lines = text.lines();
    let columns: Vec<usize> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut out = HashMap::new();
    for line in lines {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.parse::<u32>() else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let counts = columns
            .iter()
            .zip(&fields)
            .filter_map(|(&cpu, v)| Some((cpu, v.parse::<u64>().ok()?)))
            .collect();
        // After the counts: the chip, the hardware IRQ and trigger, then the device.
        let tail = fields.get(columns.len()..).unwrap_or_default();
        let name = match tail {
            [_, _, device @ ..] if !device.is_empty() => device.join(" "),
            _ => tail.last().copied().unwrap_or("?").to_string(),
        };
        out.insert(irq, (name, counts));
    }
    out
}

impl Check for IrqAffinity {
    fn id(&self) -> &'static str {
        "irq-affinity"
    }

    fn title(&self) -> &'static str {
        "IRQ affinity"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let irqs = match ctx.files.list("/proc/irq") {
            Ok(list) => list,
            Err(e) => {
                return r.unknown(super::FactError::Unlistable {
                    path: "/proc/irq".to_string(),
                    why: super::IoWhy::from(&e),
                })
            }
        };
        let _ = r.read("/proc/irq/default_smp_affinity");
        let table = r
            .read_quietly("/proc/interrupts")
            .map(|t| interrupts(&t))
            .unwrap_or_default();
        let mut routed = Vec::new();
        let mut irq_numbers: Vec<u32> = irqs.iter().filter_map(|n| n.parse().ok()).collect();
        irq_numbers.sort_unstable();
        for irq in irq_numbers {
            let dir = format!("/proc/irq/{irq}");
            let Some(list) = ctx
                .files
                .read(&format!("{dir}/effective_affinity_list"))
                .or_else(|| ctx.files.read(&format!("{dir}/smp_affinity_list")))
            else {
                continue;
            };
            let on = among(&parse_kernel_cpu_list(&list), &ctx.cpus);
            if on.is_empty() {
                continue;
            }
            let (name, counts) = table
                .get(&irq)
                .map(|(n, c)| (n.clone(), c.clone()))
                .unwrap_or_else(|| ("?".to_string(), HashMap::new()));
            let count = on.iter().filter_map(|c| counts.get(c)).sum();
            routed.push(Routed {
                irq,
                name,
                cpus: on,
                count,
            });
        }
        if routed.is_empty() {
            return r.ok(format!(
                "no device IRQ is routed to {}",
                super::cpus(&ctx.cpus)
            ));
        }
        routed.sort_by(|a, b| b.count.cmp(&a.count).then(a.irq.cmp(&b.irq)));
        for x in &routed {
            r.note(
                format!("/proc/irq/{}/effective_affinity_list", x.irq),
                format!(
                    "{} ({}, {} so far there)",
                    cpu_list(&x.cpus),
                    x.name,
                    x.count
                ),
            );
        }
        let mut named: Vec<String> = routed
            .iter()
            .take(NAMED)
            .map(|x| format!("{} {} on {}", x.irq, x.name, cpu_list(&x.cpus)))
            .collect();
        if routed.len() > NAMED {
            named.push(format!("and {} more", routed.len() - NAMED));
        }
        let finding = format!(
            "{} device IRQs on task CPUs: {}",
            routed.len(),
            named.join(", ")
        );
        // Threaded handlers (PREEMPT_RT, threadirqs): the hard interrupt only wakes a
        // thread, which follows its interrupt's affinity.
        let threaded = ctx
            .tasks()
            .is_ok_and(|tasks| tasks.iter().any(|t| t.threaded_irq().is_some()));
        match threaded {
            true => r.explain(
                "a device interrupt still stops whatever runs on its CPU, and its threaded \
                 handler (irq/N-…) runs there too, at its own priority",
            ),
            false => r.explain(
                "an interrupt handler runs before any task on its CPU, and its softirq work \
                 often follows it there",
            ),
        }
        let threads_too = match threaded {
            true => {
                "; each IRQ's thread irq/N-… follows its interrupt there, and one whose \
                 interrupt cannot move can at least run below the task (chrt -f -p 1 PID)"
            }
            false => "",
        };
        let housekeeping = ctx.housekeeping();
        if housekeeping.is_empty() {
            return r.warn(
                finding,
                "the task CPUs are every online CPU, so IRQs must land on one of them: run \
                 the task on fewer CPUs (-c) and move the IRQs to the others",
            );
        }
        let hk = cpu_list(&housekeeping);
        let numbers: Vec<String> = routed.iter().map(|x| x.irq.to_string()).collect();
        r.warn(
            finding,
            format!(
                "for i in {}; do echo {hk} > /proc/irq/$i/smp_affinity_list; done, and boot \
                 with irqaffinity={hk} so new IRQs start there (stop or configure irqbalance \
                 first; per-queue IRQs of NVMe and multi-queue NICs refuse to move: boot with \
                 isolcpus=managed_irq,{} for those){threads_too}",
                numbers.join(" "),
                cpu_list(&ctx.cpus)
            ),
        )
    }
}

/// irqbalance moves IRQs between CPUs every few seconds, including onto task CPUs.
pub struct Irqbalance;

impl Check for Irqbalance {
    fn id(&self) -> &'static str {
        "irqbalance"
    }

    fn title(&self) -> &'static str {
        "irqbalance"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let tasks = match ctx.tasks() {
            Ok(t) => t,
            Err(e) => return r.unknown(e.to_string()),
        };
        let Some(daemon) = tasks
            .iter()
            .find(|t| t.pid == t.tid && t.comm == "irqbalance")
        else {
            r.note("/proc/*/stat", "no irqbalance process");
            return r.ok("irqbalance is not running");
        };
        r.note(format!("/proc/{}/stat", daemon.pid), "irqbalance");
        // irqbalance 1.8 and later leave isolated and nohz_full CPUs alone.
        let mut isolated = ctx
            .files
            .read("/sys/devices/system/cpu/isolated")
            .map(|t| parse_kernel_cpu_list(&t))
            .unwrap_or_default();
        isolated.extend(
            ctx.files
                .read("/sys/devices/system/cpu/nohz_full")
                .map(|t| parse_kernel_cpu_list(&t))
                .unwrap_or_default(),
        );
        if !ctx.cpus.is_empty() && ctx.cpus.iter().all(|c| isolated.contains(c)) {
            r.explain("version 1.8 and later leave isolated and nohz_full CPUs alone");
            return r.info(
                format!(
                    "irqbalance is running (pid {}), task CPUs isolated",
                    daemon.pid
                ),
                None,
            );
        }
        r.explain(format!(
            "every 10 s it may move IRQs onto {}",
            super::cpus(&ctx.cpus)
        ));
        r.warn(
            format!("irqbalance is running (pid {})", daemon.pid),
            format!(
                "systemctl disable --now irqbalance, or ban the task CPUs: \
                 IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance (or \
                 /etc/sysconfig/irqbalance) and restart it",
                cpu_list(&ctx.cpus)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn interrupts_table() {
        let text = "           CPU0       CPU1       \n \
                    24:          1          0  IO-APIC   5-edge      ACPI:Ged\n \
                    36:          0     586290 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
                    NMI:          0          0   Non-maskable interrupts\n";
        let t = super::interrupts(text);
        assert_eq!(t[&24].0, "ACPI:Ged");
        assert_eq!(t[&36].0, "virtio1-req.0");
        assert_eq!(t[&36].1[&1], 586290);
        assert_eq!(t.len(), 2);
    }
}
