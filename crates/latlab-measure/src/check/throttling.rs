//! RT throttling: the share of each period real-time tasks may use.

use super::{Check, CheckContext};
use latlab_model::audit::CheckResult;

/// `kernel.sched_rt_runtime_us` (and, from 6.12, the fair server that enforces it).
pub struct RtThrottling;

/// Kernel release as (major, minor), from `6.18.44-fc`.
fn release(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

impl Check for RtThrottling {
    fn id(&self) -> &'static str {
        "rt-throttling"
    }

    fn title(&self) -> &'static str {
        "RT throttling"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let runtime = r.read("/proc/sys/kernel/sched_rt_runtime_us");
        let period = r.read("/proc/sys/kernel/sched_rt_period_us");
        let (runtime, period) = match (runtime, period) {
            (Ok(rt), Ok(p)) => (rt.parse::<i64>(), p.parse::<i64>()),
            (Err(e), _) | (_, Err(e)) => return r.unknown(e),
        };
        let (Ok(runtime), Ok(period)) = (runtime, period) else {
            return r.unknown("sched_rt_runtime_us or sched_rt_period_us is not a number");
        };
        // Since 6.12 the fair server gives starving SCHED_OTHER tasks the same share
        // instead (per CPU, in debugfs).
        let fair_server = ctx
            .files
            .read("/proc/sys/kernel/osrelease")
            .and_then(|v| release(&v))
            .is_some_and(|v| v >= (6, 12));
        // One per CPU; the first task CPU stands for the others.
        let path = format!(
            "/sys/kernel/debug/sched/fair_server/cpu{}/runtime",
            ctx.cpus.first().copied().unwrap_or(0)
        );
        let fair_fix = if fair_server {
            format!(
                "; on this kernel (6.12 or later) the fair server does the same for starving \
                 SCHED_OTHER tasks: also write 0 to {path} for each task CPU (debugfs)"
            )
        } else {
            String::new()
        };
        if runtime < 0 || runtime >= period {
            if fair_server {
                return match r.read(&path).as_deref() {
                    Ok("0") => {
                        r.explain("a real-time task may use its whole CPU");
                        r.ok("RT throttling is off, fair server off")
                    }
                    Ok(ns) => {
                        r.explain(
                            "the fair server (kernels 6.12 and later) stops a busy real-time \
                             task to give starving SCHED_OTHER tasks their share",
                        );
                        r.info(
                            format!("RT throttling is off, fair server {ns} ns per period"),
                            Some(format!("echo 0 > {path} (for each task CPU)")),
                        )
                    }
                    Err(_) => {
                        r.explain(
                            "on kernels 6.12 and later the fair server may still stop a busy \
                             real-time task for 50 ms a second to give starving SCHED_OTHER \
                             tasks their share; its setting is in debugfs, unreadable here",
                        );
                        r.info(
                            "RT throttling is off; fair server unknown",
                            Some(format!(
                                "mount debugfs and write 0 to {path} for each task CPU"
                            )),
                        )
                    }
                };
            }
            r.explain("a real-time task may use its whole CPU");
            return r.ok("RT throttling is off");
        }
        let share = runtime as f64 / period as f64;
        r.explain(format!(
            "a real-time task busy for longer (a spin or hybrid loop, a runaway, heavy IRQ \
             threads) is stopped for the rest of the period ({:.0} ms)",
            (1.0 - share) * period as f64 / 1e3
        ));
        r.warn(
            format!(
                "RT throttling is on: real-time tasks may run {:.2} s of every {:.2} s",
                runtime as f64 / 1e6,
                period as f64 / 1e6,
            ),
            format!(
                "sysctl kernel.sched_rt_runtime_us=-1 (persist in /etc/sysctl.d/). The risk: \
                 a runaway real-time task then owns its CPU for good, starving everything \
                 else there, shells included{fair_fix}"
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn releases() {
        assert_eq!(super::release("6.18.44-fc-v595"), Some((6, 18)));
        assert_eq!(super::release("5.10.0-rt"), Some((5, 10)));
        assert_eq!(super::release("x"), None);
    }
}
