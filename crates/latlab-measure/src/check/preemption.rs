//! The preemption model: PREEMPT_RT, full, lazy, voluntary, none, or dynamic and the
//! mode in force.

use super::{Check, CheckContext};
use latlab_model::audit::{CheckResult, CheckVerdict};

/// The kernel's preemption model decides how long the kernel can keep a woken task
/// waiting; only PREEMPT_RT bounds it to tens of microseconds.
pub struct PreemptionModel;

/// A preemption model short of PREEMPT_RT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Model {
    Full,
    Lazy,
    Voluntary,
    None,
}

impl Model {
    fn from_mode(mode: &str) -> Option<Model> {
        match mode {
            "full" => Some(Model::Full),
            "lazy" => Some(Model::Lazy),
            "voluntary" => Some(Model::Voluntary),
            "none" => Some(Model::None),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Model::Full => "full",
            Model::Lazy => "lazy",
            Model::Voluntary => "voluntary",
            Model::None => "none",
        }
    }
}

const RT_KERNEL: &str = "boot a PREEMPT_RT kernel: Debian `apt install linux-image-rt-amd64` \
    (arm64: linux-image-rt-arm64), Ubuntu `pro enable realtime-kernel`, RHEL/Fedora \
    kernel-rt, or build mainline (6.12 or later) with CONFIG_PREEMPT_RT=y";

impl Check for PreemptionModel {
    fn id(&self) -> &'static str {
        "preemption"
    }

    fn title(&self) -> &'static str {
        "Preemption model"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let realtime = r.read("/sys/kernel/realtime").ok();
        let version = r.read("/proc/sys/kernel/version").unwrap_or_default();
        let words: Vec<&str> = version.split_whitespace().collect();
        let config = ctx.config.as_ref().ok();
        let set = |key: &str| config.is_some_and(|c| c.enabled(key));
        if let Some(c) = config {
            for key in [
                "CONFIG_PREEMPT_RT",
                "CONFIG_PREEMPT_DYNAMIC",
                "CONFIG_PREEMPT",
                "CONFIG_PREEMPT_LAZY",
                "CONFIG_PREEMPT_VOLUNTARY",
                "CONFIG_PREEMPT_NONE",
            ] {
                if c.enabled(key) {
                    r.note(&c.source, format!("{key}=y"));
                }
            }
        }

        if realtime.as_deref() == Some("1")
            || words.contains(&"PREEMPT_RT")
            || set("CONFIG_PREEMPT_RT")
        {
            r.explain(
                "the kernel can preempt almost everywhere and interrupts run in threads, so \
                 wake-up latency is bounded",
            );
            return r.ok("PREEMPT_RT");
        }
        let vm_note = if ctx.in_vm() {
            " (inside a VM the guest kernel is yours to choose, but the host's kernel adds \
             its own latency)"
        } else {
            ""
        };
        if words.contains(&"PREEMPT_DYNAMIC") || set("CONFIG_PREEMPT_DYNAMIC") {
            let current = r
                .read("/sys/kernel/debug/sched/preempt")
                .ok()
                .and_then(|line| {
                    // The mode in force is in parentheses: "none voluntary (full) lazy".
                    let start = line.find('(')?;
                    let end = line[start..].find(')')? + start;
                    Model::from_mode(&line[start + 1..end])
                });
            let boot = r
                .note_param("preempt")
                .and_then(|m| Model::from_mode(&m))
                .or_else(|| {
                    [
                        ("CONFIG_PREEMPT_NONE", Model::None),
                        ("CONFIG_PREEMPT_VOLUNTARY", Model::Voluntary),
                        ("CONFIG_PREEMPT_LAZY", Model::Lazy),
                        ("CONFIG_PREEMPT", Model::Full),
                    ]
                    .into_iter()
                    .find(|(key, _)| set(key))
                    .map(|(_, m)| m)
                });
            let (judged, described) = match (current, boot) {
                (Some(m), _) => (
                    Some(m),
                    format!("PREEMPT_DYNAMIC, current mode {}", m.name()),
                ),
                (None, Some(b)) => (
                    Some(b),
                    format!(
                        "PREEMPT_DYNAMIC, boot mode {}, current mode unknown (debugfs not \
                         readable)",
                        b.name()
                    ),
                ),
                (None, None) => (None, "PREEMPT_DYNAMIC, mode unknown".to_string()),
            };
            let fix = format!(
                "{RT_KERNEL}{vm_note}. Until then, boot this kernel with preempt=full (or, \
                 with debugfs mounted, `echo full > /sys/kernel/debug/sched/preempt`)"
            );
            return judge(r, judged, &format!("not PREEMPT_RT: {described}"), fix);
        }
        let model = if words.contains(&"PREEMPT_LAZY") || set("CONFIG_PREEMPT_LAZY") {
            Some(Model::Lazy)
        } else if words.contains(&"PREEMPT") || set("CONFIG_PREEMPT") {
            Some(Model::Full)
        } else if set("CONFIG_PREEMPT_VOLUNTARY") {
            Some(Model::Voluntary)
        } else if set("CONFIG_PREEMPT_NONE") {
            Some(Model::None)
        } else {
            None
        };
        match model {
            Some(m) => judge(
                r,
                Some(m),
                &format!("not PREEMPT_RT: {}", m.name()),
                format!("{RT_KERNEL}{vm_note}"),
            ),
            None => {
                let why = match &ctx.config {
                    Ok(_) => "uname -v names no preemption model and the kernel configuration \
                              sets none"
                        .to_string(),
                    Err(e) => format!("uname -v names no preemption model and {e}"),
                };
                r.unknown(why)
            }
        }
    }
}

fn judge(
    mut r: super::Recorder<'_>,
    model: Option<Model>,
    described: &str,
    fix: String,
) -> CheckResult {
    match model {
        Some(Model::None | Model::Voluntary) => {
            r.explain(
                "the kernel switches tasks only at explicit points, so a long system call or \
                 driver path delays a woken task by milliseconds (McKenney measured misses of \
                 up to 3 ms on a stock kernel)",
            );
            r.fail(described, fix)
        }
        Some(Model::Full | Model::Lazy) => {
            r.explain(
                "preemptible, but interrupt handlers, softirqs and spinlocked sections still \
                 hold a woken task off: expect hundreds of µs under load, not tens",
            );
            r.warn(described, fix)
        }
        None => {
            r.explain("whichever mode is in force, worst cases are unbounded without PREEMPT_RT");
            r.verdict(CheckVerdict::Warn, described, Some(fix))
        }
    }
}
