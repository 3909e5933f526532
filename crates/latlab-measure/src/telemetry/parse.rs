//! The text of `/proc/interrupts`, `/proc/softirqs` and `/proc/stat`.
//!
//! `/proc/interrupts` and `/proc/softirqs` are tables with one column per online CPU,
//! named in a header line (`CPU0 CPU1 ...`: an offline CPU has no column), and one
//! row per source: `NAME: count count ... [description]` (the kernel's
//! `show_interrupts()` in kernel/irq/proc.c and `show_softirqs()` in fs/proc/softirqs.c).
//! Rows with a single count (`ERR`, `MIS`) are system-wide, not per CPU, and are
//! skipped.

/// One row of a per-CPU table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row's name without its colon (`36`, `LOC`, `NET_RX`).
    pub name: String,
    /// Each CPU column's count, as `(cpu, count)`.
    pub counts: Vec<(usize, u64)>,
    /// The device or description (for a numbered IRQ: the handlers' names after
    /// the chip and trigger columns, `virtio1-req.0`; for a named one: `Local timer
    /// interrupts`); `None` when the row has none.
    pub description: Option<String>,
}

/// What is wrong with a table, naming the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// No `CPUn` header line.
    #[error("{file}: no header line naming the CPU columns (CPU0 CPU1 ...)")]
    NoHeader {
        /// The file.
        file: &'static str,
    },
}

/// The CPU numbers of a header line (`CPU0 CPU1 CPU3`).
fn header_cpus(line: &str) -> Option<Vec<usize>> {
    let cpus: Option<Vec<usize>> = line
        .split_whitespace()
        .map(|t| t.strip_prefix("CPU")?.parse().ok())
        .collect();
    cpus.filter(|c| !c.is_empty())
}

/// Parses a per-CPU table (`/proc/interrupts`, `/proc/softirqs`); `file` names it in
/// errors. Rows that do not parse are skipped (a driver's odd line must not cost
/// every other series).
pub fn cpu_table(file: &'static str, text: &str) -> Result<Vec<Row>, ParseError> {
    let mut lines = text.lines();
    let cpus = lines
        .by_ref()
        .find_map(header_cpus)
        .ok_or(ParseError::NoHeader { file })?;
    Ok(lines.filter_map(|line| row(line, &cpus)).collect())
}

/// One row, when it has a count for every CPU column.
fn row(line: &str, cpus: &[usize]) -> Option<Row> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut tokens = rest.split_whitespace();
    let mut counts = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        counts.push((cpu, tokens.next()?.parse().ok()?));
    }
    let words: Vec<&str> = tokens.collect();
    let numbered = name.bytes().all(|b| b.is_ascii_digit());
    // A numbered IRQ's columns: chip, hardware IRQ with its trigger (`1-edge`), then
    // the handlers; keep the handlers, which name the device.
    let words = match numbered {
        true => match words
            .iter()
            .position(|w| w.ends_with("-edge") || w.ends_with("-level") || *w == "edge")
        {
            Some(trigger) => &words[trigger + 1..],
            None => &words[..],
        },
        false => &words[..],
    };
    let description = (!words.is_empty()).then(|| words.join(" "));
    Some(Row {
        name: name.to_string(),
        counts,
        description,
    })
}

/// Each CPU's steal time from `/proc/stat`, in USER_HZ ticks (`cpuN user nice system
/// idle iowait irq softirq steal ...`: the eighth value); CPUs whose line has no
/// steal column are absent.
pub fn steal_ticks(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut tokens = line.split_whitespace();
            let cpu = tokens.next()?.strip_prefix("cpu")?.parse().ok()?;
            let steal = tokens.nth(7)?.parse().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = include_str!("../../tests/fixtures/telemetry/interrupts");
    const SOFTIRQS: &str = include_str!("../../tests/fixtures/telemetry/softirqs");
    const STAT: &str = include_str!("../../tests/fixtures/telemetry/stat");

    #[test]
    fn interrupts_of_a_kvm_guest_give_each_irq_its_device() {
        let rows = cpu_table("/proc/interrupts", INTERRUPTS).unwrap();
        let by_name = |n: &str| rows.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!(
            by_name("36"),
            Row {
                name: "36".to_string(),
                counts: vec![(0, 0), (1, 3_951_089)],
                description: Some("virtio1-req.0".to_string()),
            }
        );
        assert_eq!(
            by_name("24").description.as_deref(),
            Some("ACPI:Ged"),
            "an IO-APIC line's device"
        );
        assert_eq!(
            by_name("LOC").description.as_deref(),
            Some("Local timer interrupts")
        );
        assert_eq!(
            by_name("LOC").counts,
            vec![(0, 24_762_036), (1, 33_028_752)]
        );
        assert!(
            rows.iter().all(|r| r.name != "ERR" && r.name != "MIS"),
            "system-wide rows are not a CPU's"
        );
        assert_eq!(
            rows.len(),
            19 + 16 - 2,
            "19 numbered, 16 named, less ERR and MIS"
        );
    }

    #[test]
    fn softirqs_are_named_by_kind() {
        let rows = cpu_table("/proc/softirqs", SOFTIRQS).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
                "HRTIMER", "RCU"
            ]
        );
        let net_rx = &rows[3];
        assert_eq!(net_rx.counts, vec![(0, 14_173_509), (1, 20_670_963)]);
        assert_eq!(net_rx.description, None);
    }

    #[test]
    fn steal_is_the_eighth_value_of_each_cpus_line() {
        assert_eq!(steal_ticks(STAT), vec![(0, 21_460), (1, 21_658)]);
    }

    #[test]
    fn a_table_with_an_offline_cpu_names_its_columns_by_the_header() {
        let text = "     CPU0  CPU2\n  9:  5  7  IO-APIC  9-level  acpi\nNMI: 1 2 Non-maskable interrupts\n";
        let rows = cpu_table("/proc/interrupts", text).unwrap();
        assert_eq!(rows[0].counts, vec![(0, 5), (2, 7)]);
        assert_eq!(rows[1].counts, vec![(0, 1), (2, 2)]);
    }

    #[test]
    fn bad_text_is_an_error_or_skipped_never_a_panic() {
        assert_eq!(
            cpu_table("/proc/softirqs", "garbage\n"),
            Err(ParseError::NoHeader {
                file: "/proc/softirqs"
            })
        );
        let rows = cpu_table("/proc/softirqs", "CPU0 CPU1\nHI: 1\nX: a b\nRCU: 1 2\n").unwrap();
        assert_eq!(rows.len(), 1);
        assert!(steal_ticks("cpu0 1 2\ncpuX 1 2 3 4 5 6 7 8\n").is_empty());
    }
}
