//! The caller's rights: real-time priority and memory locking, from
//! `/proc/self/status` (capabilities) and `/proc/self/limits` (rlimits) under the root.

use super::{Check, CheckContext, FactError, Recorder};
use latlab_model::audit::CheckResult;

/// Capability bit numbers (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

/// Below this RLIMIT_MEMLOCK even latlab run, which locks only what it touches, may not
/// lock its measurement.
const MEMLOCK_TOO_SMALL: u64 = 4 << 20;
/// From this RLIMIT_MEMLOCK up, a typical real-time task can lock its whole image.
const MEMLOCK_ENOUGH: u64 = 64 << 20;

/// A resource limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    Unlimited,
    Value(u64),
}

impl Limit {
    fn parse(text: &str) -> Option<Limit> {
        match text {
            "unlimited" => Some(Limit::Unlimited),
            n => n.parse().ok().map(Limit::Value),
        }
    }

    fn at_least(self, n: u64) -> bool {
        match self {
            Limit::Unlimited => true,
            Limit::Value(v) => v >= n,
        }
    }
}

/// Whether the caller holds capability `bit` (effective set), from `/proc/self/status`.
fn capability(ctx: &CheckContext, bit: u32) -> Result<bool, FactError> {
    const STATUS: &str = "/proc/self/status";
    let status = ctx
        .files
        .try_read(STATUS)
        .map_err(|e| FactError::unreadable(STATUS, &e))?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .ok_or_else(|| FactError::NoLine {
            path: STATUS,
            line: "CapEff".to_string(),
        })?;
    let mask = u64::from_str_radix(hex.trim(), 16).map_err(|_| FactError::Malformed {
        path: STATUS,
        value: format!("CapEff '{}'", hex.trim()),
        form: "hexadecimal",
    })?;
    Ok(mask >> bit & 1 == 1)
}

/// The soft and hard values of a limit in `/proc/self/limits` (`Max locked memory`).
fn limit(ctx: &CheckContext, name: &str) -> Result<(Limit, Limit), FactError> {
    const LIMITS: &str = "/proc/self/limits";
    let limits = ctx
        .files
        .try_read(LIMITS)
        .map_err(|e| FactError::unreadable(LIMITS, &e))?;
    let line = limits
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .ok_or_else(|| FactError::NoLine {
            path: LIMITS,
            line: format!("'{name}'"),
        })?;
    let mut values = line.split_whitespace().map(Limit::parse);
    match (values.next().flatten(), values.next().flatten()) {
        (Some(soft), Some(hard)) => Ok((soft, hard)),
        _ => Err(FactError::Malformed {
            path: LIMITS,
            value: format!("'{name}'"),
            form: "'SOFT HARD'",
        }),
    }
}

fn show(l: Limit) -> String {
    match l {
        Limit::Unlimited => "unlimited".to_string(),
        Limit::Value(v) => v.to_string(),
    }
}

fn note_cap(r: &mut Recorder<'_>, name: &str, held: bool) {
    r.note(
        "/proc/self/status CapEff",
        format!("{name} {}", if held { "held" } else { "not held" }),
    );
}

fn note_limit(r: &mut Recorder<'_>, name: &str, (soft, hard): (Limit, Limit)) {
    r.note(
        format!("/proc/self/limits {name}"),
        format!("soft {}, hard {}", show(soft), show(hard)),
    );
}

/// Whether the caller can lock a typical real-time task's memory: `None` when that
/// cannot be read.
pub(super) fn can_lock_memory(ctx: &CheckContext) -> Option<bool> {
    if capability(ctx, CAP_IPC_LOCK).ok()? {
        return Some(true);
    }
    let (soft, _) = limit(ctx, "Max locked memory").ok()?;
    Some(soft.at_least(MEMLOCK_ENOUGH))
}

/// May the caller run at the task's real-time priority?
pub struct RtPriorityRight;

impl Check for RtPriorityRight {
    fn id(&self) -> &'static str {
        "rt-priority"
    }

    fn title(&self) -> &'static str {
        "Caller: RT priority"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let wanted = u64::from(ctx.priority);
        if wanted == 0 {
            return r.ok("the task does not ask for a real-time priority");
        }
        let cap = match capability(ctx, CAP_SYS_NICE) {
            Ok(c) => c,
            Err(e) => return r.unknown(e),
        };
        note_cap(&mut r, "CAP_SYS_NICE", cap);
        if cap {
            return r.ok(format!("CAP_SYS_NICE held: fifo:{wanted} will be granted"));
        }
        let (soft, hard) = match limit(ctx, "Max realtime priority") {
            Ok(l) => l,
            Err(e) => return r.unknown(e),
        };
        note_limit(&mut r, "Max realtime priority", (soft, hard));
        if soft.at_least(wanted) {
            return r.ok(format!("RLIMIT_RTPRIO {} allows fifo:{wanted}", show(soft)));
        }
        let fix = "run as root, or grant the capability: setcap cap_sys_nice,cap_ipc_lock+ep \
                   $(command -v latlab), or allow your user in \
                   /etc/security/limits.d/99-realtime.conf: `USER - rtprio 99` (log in again)";
        if hard.at_least(wanted) {
            r.explain("the soft limit must be raised before the task starts");
            return r.warn(
                format!(
                    "RLIMIT_RTPRIO {} (hard limit {}) below fifo:{wanted}",
                    show(soft),
                    show(hard)
                ),
                format!("ulimit -r {wanted} in the shell that starts the task; or {fix}"),
            );
        }
        r.explain(
            "real-time priority will be refused: latlab run then measures at SCHED_OTHER and \
             marks the run DEGRADED",
        );
        r.fail(
            format!(
                "no CAP_SYS_NICE and RLIMIT_RTPRIO {}: fifo:{wanted} refused",
                show(soft)
            ),
            fix,
        )
    }
}

/// May the caller lock its memory in RAM?
pub struct MemoryLockRight;

impl Check for MemoryLockRight {
    fn id(&self) -> &'static str {
        "memory-lock"
    }

    fn title(&self) -> &'static str {
        "Caller: memory lock"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let cap = match capability(ctx, CAP_IPC_LOCK) {
            Ok(c) => c,
            Err(e) => return r.unknown(e),
        };
        note_cap(&mut r, "CAP_IPC_LOCK", cap);
        if cap {
            return r.ok("CAP_IPC_LOCK held: any amount of memory can be locked");
        }
        let (soft, hard) = match limit(ctx, "Max locked memory") {
            Ok(l) => l,
            Err(e) => return r.unknown(e),
        };
        note_limit(&mut r, "Max locked memory", (soft, hard));
        let fix = "run as root, or setcap cap_sys_nice,cap_ipc_lock+ep $(command -v latlab), \
                   or in /etc/security/limits.d/99-realtime.conf: `USER - memlock unlimited` \
                   (log in again)";
        let mib = |l: Limit| match l {
            Limit::Unlimited => "unlimited".to_string(),
            Limit::Value(v) => format!("{} MiB", v >> 20),
        };
        if soft.at_least(MEMLOCK_ENOUGH) {
            return r.ok(format!(
                "RLIMIT_MEMLOCK {}: enough to lock a task",
                mib(soft)
            ));
        }
        if soft.at_least(MEMLOCK_TOO_SMALL) {
            r.explain(
                "enough for latlab run, which locks only what it touches, but not for \
                 --mlock-all or most applications' mlockall(MCL_CURRENT | MCL_FUTURE)",
            );
            return r.warn(format!("RLIMIT_MEMLOCK {}", mib(soft)), fix);
        }
        r.explain(
            "memory cannot be locked, so page faults can delay the task (latlab run marks \
             such runs DEGRADED)",
        );
        r.fail(
            format!("no CAP_IPC_LOCK and RLIMIT_MEMLOCK {}", mib(soft)),
            fix,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse() {
        assert_eq!(Limit::parse("unlimited"), Some(Limit::Unlimited));
        assert_eq!(Limit::parse("8388608"), Some(Limit::Value(8 << 20)));
        assert!(Limit::Unlimited.at_least(u64::MAX));
        assert!(!Limit::Value(3).at_least(4));
    }
}
