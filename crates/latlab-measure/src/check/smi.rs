//! System management interrupts: firmware that stops every CPU, invisible to Linux
//! except through Intel's SMI counter.

use super::{Check, CheckContext};
use latlab_model::audit::CheckResult;

/// `MSR_SMI_COUNT` (Intel, Nehalem and later): SMIs since reset.
const MSR_SMI_COUNT: u64 = 0x34;

/// SMIs more frequent than this on average look periodic.
const PERIODIC_PER_MINUTE: f64 = 1.0;

const BIOS_FIX: &str = "in the BIOS/UEFI disable periodic SMIs, USB legacy emulation and \
    firmware power management (Koolwal: 'Periodic SMI Disabled, USB2.0/Legacy Disabled'); \
    some systems need SMIs for thermal and memory-error handling (McKenney), so ask the \
    vendor; hwlatdetect or rtla hwnoise measure what is left";

/// An SMI takes every CPU into firmware for tens to hundreds of microseconds; Linux
/// cannot preempt or mask it (Koolwal, McKenney).
pub struct SystemManagementInterrupts;

impl Check for SystemManagementInterrupts {
    fn id(&self) -> &'static str {
        "smi"
    }

    fn title(&self) -> &'static str {
        "SMIs (firmware)"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.in_vm() {
            r.explain(
                "SMIs belong to the host's firmware: invisible here, they stall the whole VM",
            );
            return r.info(
                "not visible in a VM",
                Some(format!("on the host: {BIOS_FIX}")),
            );
        }
        let vendor = r.read_quietly("/proc/cpuinfo").ok().and_then(|info| {
            info.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "vendor_id").then(|| v.trim().to_string())
            })
        });
        r.note(
            "/proc/cpuinfo vendor_id",
            vendor.clone().unwrap_or_else(|| "none".to_string()),
        );
        if vendor.as_deref() != Some("GenuineIntel") {
            return r.verdict(
                latlab_model::audit::CheckVerdict::Unknown,
                "only Intel CPUs count SMIs (MSR_SMI_COUNT): not visible from Linux here",
                Some(BIOS_FIX.to_string()),
            );
        }
        let cpu = ctx.cpus.first().copied().unwrap_or(0);
        let msr = format!("/dev/cpu/{cpu}/msr");
        let count = match ctx.files.read_u64_at(&msr, MSR_SMI_COUNT) {
            Ok(c) => c,
            Err(e) => {
                let why = super::IoWhy::from(&e);
                r.note(&msr, format!("unreadable: {why}"));
                return r.verdict(
                    latlab_model::audit::CheckVerdict::Unknown,
                    format!(
                        "cannot read MSR_SMI_COUNT from {msr}: {why} (needs root and the msr \
                         driver: modprobe msr)"
                    ),
                    None,
                );
            }
        };
        r.note(format!("{msr} MSR 0x34 (SMI count)"), count.to_string());
        let uptime = r
            .read("/proc/uptime")
            .ok()
            .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
            .filter(|u| *u > 0.0);
        let Some(uptime) = uptime else {
            return r.unknown(format!(
                "{count} SMIs since boot, but /proc/uptime is unreadable, so not how often"
            ));
        };
        let per_minute = count as f64 * 60.0 / uptime;
        r.explain(
            "an SMI takes every CPU into firmware for tens to hundreds of µs, and Linux can \
             neither preempt nor mask it",
        );
        if per_minute >= PERIODIC_PER_MINUTE {
            return r.warn(
                format!("{count} SMIs in {uptime:.0} s ({per_minute:.1} a minute): periodic"),
                BIOS_FIX,
            );
        }
        r.ok(format!("{count} SMIs in {uptime:.0} s: not periodic"))
    }
}
