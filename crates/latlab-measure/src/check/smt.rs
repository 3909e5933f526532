//! SMT (hyper-threading) siblings of the task's CPUs.

use super::{cpu_list, Check, CheckContext};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::audit::CheckResult;

/// Hardware threads sharing a core with a task CPU share its execution units and
/// caches: whatever runs there slows the task down.
pub struct SmtSiblings;

impl Check for SmtSiblings {
    fn id(&self) -> &'static str {
        "smt"
    }

    fn title(&self) -> &'static str {
        "SMT siblings"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let control = r.read("/sys/devices/system/cpu/smt/control").ok();
        let isolated = ctx
            .files
            .read("/sys/devices/system/cpu/isolated")
            .map(|t| parse_kernel_cpu_list(&t))
            .unwrap_or_default();
        let mut busy = Vec::new(); // (cpu, sibling) with the sibling running other work
        let mut measured = Vec::new(); // (cpu, sibling) both task CPUs
        let mut unread = Vec::new();
        for &cpu in &ctx.cpus {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            let Some(list) = ctx.files.read(&path) else {
                unread.push(cpu);
                continue;
            };
            let siblings: Vec<usize> = parse_kernel_cpu_list(&list)
                .into_iter()
                .filter(|&s| s != cpu && ctx.online.contains(&s))
                .collect();
            if !siblings.is_empty() {
                r.note(path, list);
            }
            for s in siblings {
                if ctx.cpus.contains(&s) {
                    if s > cpu {
                        measured.push((cpu, s));
                    }
                } else if !isolated.contains(&s) {
                    busy.push((cpu, s));
                }
            }
        }
        let smt_inactive = matches!(
            control.as_deref(),
            Some("off" | "forceoff" | "notsupported" | "notimplemented")
        );
        if !unread.is_empty() && !smt_inactive {
            return r.unknown(format!(
                "the topology of CPUs {} is unreadable (thread_siblings_list) and SMT is not \
                 known to be off",
                cpu_list(&unread)
            ));
        }
        let pairs = |v: &[(usize, usize)]| {
            v.iter()
                .map(|(c, s)| format!("{c}+{s}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut fix = "echo off > /sys/devices/system/cpu/smt/control (boot: nosmt), or keep \
                       each task CPU's sibling idle: add it to isolcpus= and run nothing there"
            .to_string();
        if ctx.in_vm() {
            fix.push_str("; in a VM, the host decides: pin vCPUs so that no two share a core");
        }
        if !measured.is_empty() || !busy.is_empty() {
            let mut what = Vec::new();
            if !measured.is_empty() {
                what.push(format!("task CPUs share cores ({})", pairs(&measured)));
            }
            if !busy.is_empty() {
                what.push(format!("siblings run other work ({})", pairs(&busy)));
            }
            r.explain(
                "hardware threads of one core share its execution units and caches: work on \
                 a sibling slows the task down",
            );
            return r.warn(format!("SMT on: {}", what.join("; ")), fix);
        }
        if ctx.in_vm() {
            r.explain(
                "whether the host runs the vCPUs on sibling threads cannot be seen from inside",
            );
            return r.info(
                "no SMT siblings visible in the VM",
                Some("on the host: pin vCPUs so that no two share a core".to_string()),
            );
        }
        match control.as_deref() {
            Some("on") => r.ok("SMT on, siblings of the task CPUs isolated or offline"),
            Some(state) => r.ok(format!("SMT {state}: no sibling shares a task CPU's core")),
            None => r.ok("no task CPU has an online SMT sibling"),
        }
    }
}
