//! Kernel messages on a slow console.

use super::{Check, CheckContext};
use latlab_model::audit::CheckResult;

/// Console log level up to which only errors and worse are printed (`quiet`).
const QUIET: u32 = 4;

/// Consoles that print slowly: serial ports and the framebuffer/VGA text console.
fn is_slow(name: &str) -> bool {
    let serial = [
        "ttyS", "ttyAMA", "ttyPS", "ttymxc", "ttyO", "ttySAC", "ttyMSM", "ttyLP", "ttyUSB",
    ];
    serial.iter().any(|p| name.starts_with(p))
        || name
            .strip_prefix("tty")
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// printk writes to the console synchronously in most kernels, a serial line at
/// 115200 baud takes about a millisecond per line, and it can hold off preemption
/// meanwhile (Koolwal: run over SSH, not on the console).
pub struct Console;

impl Check for Console {
    fn id(&self) -> &'static str {
        "console"
    }

    fn title(&self) -> &'static str {
        "Kernel console"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let consoles = match r.read("/proc/consoles") {
            Ok(c) => c,
            Err(e) => return r.unknown(e),
        };
        let slow: Vec<&str> = consoles
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| is_slow(name))
            .collect();
        if slow.is_empty() {
            return r.ok("no serial or text console receives kernel messages");
        }
        let level = match r.read("/proc/sys/kernel/printk") {
            Ok(p) => p
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u32>().ok()),
            Err(e) => return r.unknown(e),
        };
        let Some(level) = level else {
            return r.unknown("/proc/sys/kernel/printk does not start with a number");
        };
        let consoles = slow.join(", ");
        if level <= QUIET {
            return r.ok(format!(
                "console {consoles} gets errors only (log level {level})"
            ));
        }
        r.explain(
            "a serial or text console prints slowly, holding the printing CPU for each line \
             (Koolwal: run over SSH, not on the console)",
        );
        r.warn(
            format!(
                "console {consoles} prints kernel messages up to log level {}",
                level - 1
            ),
            "dmesg -n 4 (or sysctl kernel.printk='4 4 1 7'; boot: quiet), and log in over \
             SSH rather than on the console",
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slow_consoles() {
        assert!(super::is_slow("ttyS0"));
        assert!(super::is_slow("tty0"));
        assert!(!super::is_slow("netcon0"));
        assert!(!super::is_slow("hvc0"));
    }
}
