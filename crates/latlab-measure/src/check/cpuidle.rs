//! CPU idle states of the task's CPUs and their exit latencies.

use super::{cpu_list, Check, CheckContext};
use latlab_model::audit::CheckResult;

/// Exit latency up to which an idle state costs no more than a cache miss or two.
const SHALLOW_US: u64 = 2;

/// A CPU in a deep idle state takes its exit latency to wake: every wake-up of a task
/// that sleeps between periods pays it.
pub struct IdleStates;

/// One enabled idle state.
struct State {
    name: String,
    latency_us: u64,
}

impl Check for IdleStates {
    fn id(&self) -> &'static str {
        "cpuidle"
    }

    fn title(&self) -> &'static str {
        "CPU idle states"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.cpus.is_empty() {
            return r.no_cpus();
        }
        let driver = r
            .read("/sys/devices/system/cpu/cpuidle/current_driver")
            .ok();
        let _ = r.read("/sys/devices/system/cpu/cpuidle/current_governor_ro");
        let vm_note = "idle vCPUs halt, and waking one goes through the host (a VM exit, the \
                       host's own idle states)";
        let vm_fix = "in the guest: boot with idle=poll (burns the host CPU) or load \
                      cpuidle-haltpoll, which polls before halting; on the host: keep the \
                      vCPUs' CPUs out of deep idle states";
        if matches!(driver.as_deref(), None | Some("none")) {
            if ctx.in_vm() {
                r.explain(vm_note);
                return r.info("no cpuidle driver in the VM", Some(vm_fix.into()));
            }
            if driver.is_some() {
                r.explain("idle CPUs only halt, which exits in about a microsecond");
                return r.ok("no cpuidle driver");
            }
        }
        let mut deepest: Option<(usize, State)> = None;
        let mut unread = Vec::new();
        for &cpu in &ctx.cpus {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
            let names = match ctx.files.list(&dir) {
                Ok(n) => n,
                Err(_) => {
                    unread.push(cpu);
                    continue;
                }
            };
            let mut states: Vec<&String> =
                names.iter().filter(|n| n.starts_with("state")).collect();
            states.sort_by_key(|n| n[5..].parse::<u32>().unwrap_or(u32::MAX));
            for state in states {
                let read = |f: &str| ctx.files.read(&format!("{dir}/{state}/{f}"));
                if read("disable").as_deref() == Some("1") {
                    continue;
                }
                let (Some(name), Some(latency_us)) = (
                    read("name"),
                    read("latency").and_then(|l| l.parse::<u64>().ok()),
                ) else {
                    continue;
                };
                if cpu == ctx.cpus[0] {
                    r.note(
                        format!("{dir}/{state}"),
                        format!("{name}, exit latency {latency_us} µs, enabled"),
                    );
                }
                if deepest
                    .as_ref()
                    .is_none_or(|(_, d)| latency_us > d.latency_us)
                {
                    deepest = Some((cpu, State { name, latency_us }));
                }
            }
        }
        if unread.len() == ctx.cpus.len() {
            if driver.is_none() {
                return r.unknown(
                    "neither /sys/devices/system/cpu/cpuidle/current_driver nor the task \
                     CPUs' cpuidle directories are readable",
                );
            }
            return r.ok("the idle driver exposes no states for the task CPUs");
        }
        let cpus = cpu_list(&ctx.cpus);
        match deepest {
            Some((cpu, state)) if state.latency_us > SHALLOW_US => {
                let mut fix = format!(
                    "in the task, hold /dev/cpu_dma_latency open with 0 written to it \
                     (latlab run does this by default while measuring; --dma-latency US); or \
                     disable the deep states: cpupower -c {cpus} idle-set -D {SHALLOW_US}; or \
                     boot with processor.max_cstate=1 intel_idle.max_cstate=0"
                );
                if ctx.in_vm() {
                    fix.push_str(&format!("; {vm_fix}"));
                }
                r.explain(
                    "a wake-up from a deep state is later by its exit latency. latlab run \
                     keeps CPUs out of them while it measures (/dev/cpu_dma_latency = 0); \
                     your task needs the same",
                );
                r.warn(
                    format!(
                        "idle states down to {} enabled ({} µs exit latency, CPU {cpu})",
                        state.name, state.latency_us
                    ),
                    fix,
                )
            }
            Some((_, state)) => r.ok(format!(
                "only shallow idle states enabled (deepest {}, {} µs exit latency)",
                state.name, state.latency_us
            )),
            None => r.ok(format!(
                "no idle state is enabled on {}",
                super::cpus(&ctx.cpus)
            )),
        }
    }
}
