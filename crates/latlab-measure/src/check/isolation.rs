//! CPU isolation of the task's CPUs: isolcpus, nohz_full, rcu_nocbs, irqaffinity.

use super::{among, cpu_list, cpus, outside, Check, CheckContext};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::audit::CheckResult;

/// Whether the task's CPUs are kept free of other tasks and kernel housekeeping.
pub struct Isolation;

/// The CPU list of a boot parameter whose value may start with flags
/// (`isolcpus=managed_irq,domain,2-3`).
fn param_cpus(value: &str) -> Vec<usize> {
    let list: Vec<&str> = value
        .split(',')
        .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    parse_kernel_cpu_list(&list.join(","))
}

impl Check for Isolation {
    fn id(&self) -> &'static str {
        "isolation"
    }

    fn title(&self) -> &'static str {
        "CPU isolation"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        if ctx.online.len() == 1 {
            r.explain("the task shares its CPU with everything else");
            return r.info("one CPU only: nothing to isolate", None);
        }
        let mut isolated = r
            .read("/sys/devices/system/cpu/isolated")
            .map(|t| parse_kernel_cpu_list(&t))
            .unwrap_or_default();
        let isolcpus = r.note_param("isolcpus");
        isolated.extend(isolcpus.as_deref().map(param_cpus).unwrap_or_default());
        isolated.sort_unstable();
        isolated.dedup();
        let nohz_param = r.note_param("nohz_full");
        let nohz = match ctx.files.read("/sys/devices/system/cpu/nohz_full") {
            Some(t) => {
                let cpus = parse_kernel_cpu_list(&t);
                // Kernels write `(null)` (before 6.x, and 6.1-rt, 6.12-rt) or an empty
                // line when no CPU is nohz_full.
                let shown = match cpus.is_empty() {
                    true => "none".to_string(),
                    false => cpu_list(&cpus),
                };
                r.note("/sys/devices/system/cpu/nohz_full", shown);
                cpus
            }
            None => nohz_param.as_deref().map(param_cpus).unwrap_or_default(),
        };
        // nohz_full CPUs are rcu_nocbs CPUs too.
        let mut nocbs = r
            .note_param("rcu_nocbs")
            .as_deref()
            .map(param_cpus)
            .unwrap_or_default();
        nocbs.extend(&nohz);
        r.note_param("irqaffinity");

        let candidates = ctx.isolation_candidates();
        let list = cpu_list(&candidates);
        let housekeeping = cpu_list(&outside(&ctx.online, &candidates));
        let full_built = ctx
            .config
            .as_ref()
            .is_ok_and(|c| c.enabled("CONFIG_NO_HZ_FULL"));
        let mut fix = format!(
            "boot with isolcpus=managed_irq,domain,{list} nohz_full={list} rcu_nocbs={list} \
             irqaffinity={housekeeping} and run the task there (latlab run -c {list})"
        );
        if !full_built {
            fix.push_str("; nohz_full needs a kernel built with CONFIG_NO_HZ_FULL=y");
        }
        if ctx.in_vm() {
            fix.push_str(
                "; in a VM this helps only if the host pins each vCPU to an isolated \
                 physical CPU",
            );
        }
        if ctx.housekeeping().is_empty() {
            fix.push_str(&format!(
                " — the target CPUs are every online CPU; one ({housekeeping}) must stay \
                 for everything else"
            ));
        }

        let not_isolated = outside(&ctx.cpus, &isolated);
        r.explain(
            "on a CPU that is not isolated the task shares time with every other task, \
             kernel threads and RCU callbacks",
        );
        if not_isolated.len() == ctx.cpus.len() {
            let finding = if isolated.is_empty() {
                "no isolated CPUs".to_string()
            } else {
                format!(
                    "{} not isolated (isolated: {})",
                    cpus(&ctx.cpus),
                    cpu_list(&isolated)
                )
            };
            return r.warn(finding, fix);
        }
        if !not_isolated.is_empty() {
            return r.warn(
                format!(
                    "{} isolated, {} not",
                    cpus(&among(&ctx.cpus, &isolated)),
                    cpus(&not_isolated)
                ),
                fix,
            );
        }
        let no_offload = outside(&ctx.cpus, &nocbs);
        if !no_offload.is_empty() {
            r.explain("RCU callbacks run in softirq on the CPU unless offloaded (rcu_nocbs)");
            return r.warn(
                format!(
                    "{} isolated, but RCU callbacks still run on {}",
                    cpus(&ctx.cpus),
                    cpus(&no_offload)
                ),
                fix,
            );
        }
        let tick = if outside(&ctx.cpus, &nohz).is_empty() {
            "nohz_full"
        } else {
            "no nohz_full (it only matters for busy-polling tasks)"
        };
        r.explain("nothing else is scheduled there, and RCU callbacks run elsewhere");
        r.ok(format!("{} isolated, rcu_nocbs, {tick}", cpus(&ctx.cpus)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn boot_parameter_lists_skip_flags() {
        assert_eq!(super::param_cpus("managed_irq,domain,2-3,5"), vec![2, 3, 5]);
        assert_eq!(super::param_cpus("1"), vec![1]);
        assert!(super::param_cpus("nohz").is_empty());
    }
}
