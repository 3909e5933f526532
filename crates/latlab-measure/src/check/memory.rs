//! Memory management that can stall a task: transparent huge pages and swap.

use super::{caller, Check, CheckContext};
use latlab_model::audit::CheckResult;

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// Transparent huge pages: compaction at page-fault time and khugepaged's scanning.
pub struct TransparentHugePages;

/// The bracketed choice of a sysfs selector: `always [madvise] never` → `madvise`.
fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

impl Check for TransparentHugePages {
    fn id(&self) -> &'static str {
        "thp"
    }

    fn title(&self) -> &'static str {
        "Transparent huge pages"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        if ctx.files.exists("/sys/kernel/mm") && !ctx.files.exists(THP) {
            r.note(THP, "absent");
            return r.ok("the kernel has no transparent huge pages");
        }
        let enabled = match r.read(&format!("{THP}/enabled")) {
            Ok(t) => t,
            Err(e) => return r.unknown(e),
        };
        let defrag = r.read(&format!("{THP}/defrag")).unwrap_or_default();
        let _ = r.read(&format!("{THP}/khugepaged/defrag"));
        let (Some(enabled), defrag) = (selected(&enabled), selected(&defrag)) else {
            return r.unknown(format!("{THP}/enabled shows no [selected] mode"));
        };
        let fix = format!(
            "echo never > {THP}/enabled; echo never > {THP}/defrag (boot: \
             transparent_hugepage=never); or, to keep huge pages for those that ask, madvise \
             in both"
        );
        if enabled == "always" {
            r.explain(
                "page faults may stall in compaction, and khugepaged rewrites page tables \
                 behind every process",
            );
            return r.warn("THP enabled for all memory", fix);
        }
        if enabled != "never" && defrag == Some("always") {
            r.explain("a fault that wants a huge page compacts memory first, for milliseconds");
            return r.warn("THP defrag 'always'", fix);
        }
        match enabled {
            "never" => r.ok("THP is off"),
            mode => r.ok(format!(
                "THP only where asked ({mode}), no direct compaction"
            )),
        }
    }
}

/// Swap: a page of the task that is not locked can be swapped out and take
/// milliseconds to come back.
pub struct Swap;

impl Check for Swap {
    fn id(&self) -> &'static str {
        "swap"
    }

    fn title(&self) -> &'static str {
        "Swap"
    }

    fn run(&self, ctx: &CheckContext) -> CheckResult {
        let mut r = ctx.record(self);
        let swaps = match r.read_quietly("/proc/swaps") {
            Ok(t) => t,
            Err(e) => return r.unknown(e),
        };
        let areas: Vec<&str> = swaps
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        r.note(
            "/proc/swaps",
            if areas.is_empty() {
                "no swap area".to_string()
            } else {
                areas.join(", ")
            },
        );
        if areas.is_empty() {
            return r.ok("no swap");
        }
        let fix = "lock the task's memory (mlockall(MCL_CURRENT | MCL_FUTURE), as latlab \
                   run does), or swapoff -a (and remove swap from /etc/fstab)";
        match caller::can_lock_memory(ctx) {
            Some(true) => {
                r.explain(
                    "harmless for a task that locks its memory, as latlab run does; a page \
                     not locked can be swapped out and cost milliseconds to fault back",
                );
                r.info(
                    format!("swap on ({})", areas.join(", ")),
                    Some(fix.to_string()),
                )
            }
            Some(false) => {
                r.explain(
                    "this user cannot lock enough memory, so the task's pages can be swapped \
                     out and cost milliseconds to fault back",
                );
                r.warn(
                    format!("swap on ({}), memory not lockable", areas.join(", ")),
                    fix,
                )
            }
            None => {
                r.explain("whether this user can lock memory is unknown");
                r.info(
                    format!("swap on ({})", areas.join(", ")),
                    Some(fix.to_string()),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn selected_modes() {
        assert_eq!(super::selected("always [madvise] never"), Some("madvise"));
        assert_eq!(super::selected("[always] madvise never"), Some("always"));
        assert_eq!(super::selected("always"), None);
    }
}
