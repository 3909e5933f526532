//! The trace clock, and how its instants map to `CLOCK_MONOTONIC`.
//!
//! `mono` stamps events with `CLOCK_MONOTONIC` itself (`ktime_get_mono_fast_ns`; it
//! matched a bracketing `clock_gettime` on this kind of machine, research Part 1 §1.4),
//! so a spike's instants need no conversion. It reads the clocksource, which is cheap
//! with the TSC (`arch_sys_counter` on arm64) and costly with HPET or acpi_pm; there,
//! and where `mono` is missing, the session uses `local` (the per-CPU sched clock) and
//! measures its offset: a `trace_marker` write bracketed by two `clock_gettime`
//! reads, repeated, the tightest bracket kept, measured again at the end to bound the
//! drift.

use super::SessionError;
use latlab_rt::affinity::AffinityGuard;
use latlab_rt::clock::Clock;
use latlab_rt::tracefs::TraceInstance;
use latlab_trace::{decode_page, EventFormat, PageLayout};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;

/// Clocksources `mono` reads cheaply.
const CHEAP_CLOCKSOURCES: &[&str] = &[
    "tsc",
    "arch_sys_counter",
    "kvm-clock",
    "hyperv_clocksource_tsc_page",
];
/// Marker brackets per measurement of the `local` clock's offset.
const BRACKETS: usize = 16;
/// What each marker says, before its number.
const MARKER: &str = "latlab-clock-sync ";

/// The trace clock of a session and its relation to `CLOCK_MONOTONIC`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceClock {
    /// The name `trace_clock` gives it.
    pub(crate) name: String,
    /// Trace clock minus `CLOCK_MONOTONIC`, ns (0 for `mono`).
    pub(crate) offset_ns: i64,
    /// Half the width of the tightest marker bracket, ns (`None` for `mono`).
    pub(crate) uncertainty_ns: Option<i64>,
}

impl TraceClock {
    /// The trace-clock instant of a `CLOCK_MONOTONIC` instant.
    pub(crate) fn at_monotonic(&self, monotonic_ns: i64) -> u64 {
        monotonic_ns.saturating_add(self.offset_ns).max(0) as u64
    }

    /// Now, on the trace clock.
    pub(crate) fn now(&self) -> u64 {
        self.at_monotonic(Clock::Monotonic.now_ns())
    }
}

/// The current clocksource, if the kernel says.
fn clocksource() -> Option<String> {
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Sets `mono` when it is there, cheap and `prefer_mono`, else `local`; returns which
/// (the offset of `local` is measured once tracing is on, by [`measure_offset`]).
pub(crate) fn choose(
    instance: &TraceInstance,
    prefer_mono: bool,
) -> Result<TraceClock, SessionError> {
    let cheap = clocksource().is_some_and(|cs| CHEAP_CLOCKSOURCES.contains(&cs.as_str()));
    if prefer_mono && cheap && instance.set_clock("mono").is_ok() {
        return Ok(TraceClock {
            name: "mono".to_string(),
            offset_ns: 0,
            uncertainty_ns: None,
        });
    }
    instance.set_clock("local")?;
    Ok(TraceClock {
        name: "local".to_string(),
        offset_ns: 0,
        uncertainty_ns: None,
    })
}

/// One marker write between two monotonic reads.
#[derive(Debug, Clone, Copy)]
struct Bracket {
    before: i64,
    after: i64,
}

/// Measures the `local` clock's offset on `cpu` (a traced CPU: the marker is recorded
/// in the buffer of the CPU that writes it) with tracing on. Reads `cpu`'s buffer:
/// call it only while no reader is running. Returns the offset and half the bracket
/// width.
pub(crate) fn measure_offset(
    instance: &TraceInstance,
    cpu: usize,
    layout: &PageLayout,
    print: &EventFormat,
) -> Result<(i64, i64), SessionError> {
    let io = |path: std::path::PathBuf| move |source| SessionError::Read { path, source };
    let marker_path = instance.dir().join("trace_marker");
    let mut marker = OpenOptions::new()
        .write(true)
        .open(&marker_path)
        .map_err(io(marker_path.clone()))?;
    let mut brackets = Vec::with_capacity(BRACKETS);
    {
        let _on_cpu = AffinityGuard::apply(&[cpu]).map_err(|e| SessionError::Clock {
            why: format!("cannot run on CPU {cpu} to write clock markers there: {e}"),
        })?;
        for i in 0..BRACKETS {
            let text = format!("{MARKER}{i}\n");
            let before = Clock::Monotonic.now_ns();
            marker
                .write_all(text.as_bytes())
                .map_err(io(marker_path.clone()))?;
            let after = Clock::Monotonic.now_ns();
            brackets.push(Bracket { before, after });
        }
    }
    let stamps = read_markers(instance, cpu, layout, print)?;
    let best = stamps
        .iter()
        .filter_map(|&(i, ts)| Some((brackets.get(i)?, ts)))
        .min_by_key(|(b, _)| b.after - b.before)
        .ok_or_else(|| SessionError::Clock {
            why: format!(
                "none of the {BRACKETS} clock markers written on CPU {cpu} came back in its \
                 trace buffer"
            ),
        })?;
    let (bracket, ts) = best;
    let middle = bracket.before + (bracket.after - bracket.before) / 2;
    Ok((ts as i64 - middle, (bracket.after - bracket.before + 1) / 2))
}

/// The markers in `cpu`'s buffer: (number, timestamp). Consumes the buffer.
fn read_markers(
    instance: &TraceInstance,
    cpu: usize,
    layout: &PageLayout,
    print: &EventFormat,
) -> Result<Vec<(usize, u64)>, SessionError> {
    let path = instance.trace_pipe_raw(cpu)?;
    let mut pipe = open_nonblocking(&path)?;
    let mut page = vec![0; layout.page_size()];
    let mut found = Vec::new();
    loop {
        match pipe.read(&mut page) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(source) => return Err(SessionError::Read { path, source }),
        }
        let Ok(decoded) = decode_page(layout, &page) else {
            continue;
        };
        for record in decoded.records {
            let payload = record.payload;
            if payload.get(..2) != Some(&print.id.to_ne_bytes()[..]) {
                continue;
            }
            if let Some(n) = marker_number(payload) {
                found.push((n, record.timestamp));
            }
        }
    }
    Ok(found)
}

/// The number of a clock marker in a `print` record's payload.
fn marker_number(payload: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(payload);
    let rest = &text[text.find(MARKER)? + MARKER.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Opens a `trace_pipe_raw` so that a read of an empty buffer returns `EAGAIN`
/// instead of waiting.
pub(crate) fn open_nonblocking(path: &std::path::Path) -> Result<File, SessionError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_numbers_are_read_from_print_payloads() {
        let mut payload = vec![5, 0, 0, 0, 0, 0, 0, 0];
        payload.extend(b"\0\0\0\0\0\0\0\0latlab-clock-sync 12\n\0");
        assert_eq!(marker_number(&payload), Some(12));
        assert_eq!(marker_number(b"hello"), None);
    }

    #[test]
    fn a_monotonic_instant_maps_by_the_offset() {
        let clock = TraceClock {
            name: "local".to_string(),
            offset_ns: -500,
            uncertainty_ns: Some(20),
        };
        assert_eq!(clock.at_monotonic(1_500), 1_000);
        assert_eq!(clock.at_monotonic(100), 0, "never before the clock's zero");
    }
}
