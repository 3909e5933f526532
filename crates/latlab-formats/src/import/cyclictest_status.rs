//! cyclictest's status line, `print_stat` in rt-tests `src/cyclictest/cyclictest.c`:
//! `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`, with `Act:%8ld
//! Avg:%8ld` under `-N`. Without `-q` it is redrawn live (after `ESC [ N A`, the cursor
//! moved up) before a `-h` histogram; with `-q` it is printed once at the end, also after
//! a `-v` log's samples.

use super::TimeUnit;

/// One thread's status line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Status {
    /// The thread's number (`T:`).
    pub(super) thread: usize,
    /// `P:`.
    pub(super) priority: i32,
    /// `I:`, always µs.
    pub(super) interval_us: i64,
    /// `C:`, the cycles measured when it was printed.
    pub(super) cycles: u64,
    /// `Max:`, in the values' unit.
    pub(super) max: Option<i64>,
    /// The unit its field widths show, when they show it.
    pub(super) unit: Option<TimeUnit>,
}

impl Status {
    /// The status of a line (without cursor movement), or `None` for any other line.
    pub(super) fn parse(line: &str) -> Option<Status> {
        let rest = line.strip_prefix("T:")?;
        let field = |name: &str| -> Option<&str> {
            let at = rest.find(name)? + name.len();
            rest[at..].split_whitespace().next()
        };
        let status = Status {
            thread: rest.split_whitespace().next()?.parse().ok()?,
            priority: field("P:")?.parse().ok()?,
            interval_us: field("I:")?.parse().ok()?,
            cycles: field("C:")?.parse().ok()?,
            max: field("Max:").and_then(|m| m.parse().ok()),
            unit: width_unit(rest, "Act:", " Avg:").or_else(|| width_unit(rest, "Avg:", " Max:")),
        };
        (status.thread < 4_096).then_some(status)
    }
}

/// Whether `line` is a thread's status line, cursor movement or not.
pub(super) fn is_status_line(line: &str) -> bool {
    Status::parse(without_cursor_moves(line)).is_some()
}

/// The line after the live display's cursor movement (`ESC [ 4 A`), if any.
pub(super) fn without_cursor_moves(line: &str) -> &str {
    match line.rfind('\x1b') {
        Some(at) => {
            line[at + 1..].trim_start_matches(|c: char| c == '[' || c.is_ascii_digit() || c == 'A')
        }
        None => line,
    }
}

/// The unit a field's printed width shows: narrower than 8 is `%5ld` (µs); exactly 8
/// with padding is `%8ld` (ns); 8 digits or more could be either.
fn width_unit(rest: &str, label: &str, next: &str) -> Option<TimeUnit> {
    let start = rest.find(label)? + label.len();
    let end = start + rest[start..].find(next)?;
    let printed = &rest[start..end];
    if printed.trim_start().parse::<i64>().is_err() {
        return None;
    }
    match printed.len() {
        0..=7 => Some(TimeUnit::Microseconds),
        8 if printed.starts_with(' ') => Some(TimeUnit::Nanoseconds),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_tell_the_unit() {
        let unit = |line: &str| Status::parse(line).and_then(|s| s.unit);
        // rt-tests 2.4, without and with -N.
        let us = "T: 0 (11187) P:95 I:1000 C:   2990 Min:      9 Act:   43 Avg:   32 Max:    1982";
        let ns =
            "T: 0 (11566) P:95 I:1000 C:    300 Min:  14159 Act:   32218 Avg:   32042 Max:  107051";
        let ns_start =
            "T: 0 (    0) P:95 I:1000 C:      0 Min:1000000 Act:       0 Avg:       0 Max:       0";
        let wide_us =
            "T: 0 (11187) P:95 I:1000 C:   2990 Min:      9 Act:123456 Avg:   32 Max:  123456";
        let either =
            "T: 0 (11187) P:95 I:1000 C:   2990 Min:      9 Act:12345678 Avg:12345678 Max:12345678";
        assert_eq!(unit(us), Some(TimeUnit::Microseconds));
        assert_eq!(unit(ns), Some(TimeUnit::Nanoseconds));
        assert_eq!(unit(ns_start), Some(TimeUnit::Nanoseconds));
        assert_eq!(unit(wide_us), Some(TimeUnit::Microseconds));
        assert_eq!(unit(either), None);
        assert_eq!(Status::parse(us).and_then(|s| s.max), Some(1982));
        assert!(is_status_line(&format!("\x1b[4A{us}")));
        assert!(!is_status_line("       0:       1:      23"));
    }
}
