//! Run ids and timestamps, for runs measured and runs imported alike: the id shape
//! that [`Run::check`](crate::run::Run::check) accepts is made here.

use std::time::SystemTime;

/// RFC 3339 UTC with milliseconds, as the Run format writes instants.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// An RFC 3339 instant as the Run format writes them (`2026-11-21T00:10:12.345Z`);
/// `None` when `text` is not one.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

/// Why a time bound (`--since`, `--older-than`) could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: give an age such as 30d, 12h or 1h30m, or a UTC date such as 2026-11-01 or 2026-11-01T12:00")]
pub struct TimeBoundError(pub String);

/// An instant from what a user types: an age before `now` (`30d`, `2h`, `1h30m`), or a
/// UTC date (`2026-11-01`, midnight), date and time (`2026-11-01T12:00`, `2026-11-01
/// 12:00:00`) or RFC 3339 instant.
pub fn parse_time_bound(text: &str, now: SystemTime) -> Result<SystemTime, TimeBoundError> {
    let t = text.trim();
    let refused = || TimeBoundError(text.to_string());
    if let Ok(age) = humantime::parse_duration(t) {
        return now.checked_sub(age).ok_or_else(refused);
    }
    let full = match t.len() {
        10 => format!("{t}T00:00:00Z"),
        16 => format!("{t}:00Z"),
        _ => t.to_string(),
    };
    humantime::parse_rfc3339_weak(&full).map_err(|_| refused())
}

/// A sortable, unique id: UTC start to the second, then 6 random hex digits.
pub fn run_id(started: SystemTime) -> String {
    use std::hash::{BuildHasher, Hasher};
    let stamp: String = humantime::format_rfc3339_seconds(started)
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        started
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{stamp}-{:06x}", h.finish() & 0xff_ffff)
}

/// Whether `text` has the shape of a run id: `20261121T001012Z-3f9a2c` (UTC start to
/// the second, 6 lowercase hex digits).
pub fn is_run_id(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 23
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_time() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let id = run_id(t);
        assert!(id.starts_with("20270115T080000Z-"), "{id}");
        assert_eq!(id.len(), "20270115T080000Z-".len() + 6);
        assert!(is_run_id(&id), "{id}");
        assert!(!is_run_id("20270115T080000Z-ABCDEF"));
    }

    #[test]
    fn time_bounds_are_ages_or_utc_dates() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let at = |text: &str| parse_time_bound(text, now).map(rfc3339);
        assert_eq!(at("2h").unwrap(), "2027-01-15T06:00:00.000Z");
        assert_eq!(at("30d").unwrap(), "2026-12-16T08:00:00.000Z");
        assert_eq!(at("1h30m").unwrap(), "2027-01-15T06:30:00.000Z");
        assert_eq!(at("2026-11-01").unwrap(), "2026-11-01T00:00:00.000Z");
        assert_eq!(at("2026-11-01T12:30").unwrap(), "2026-11-01T12:30:00.000Z");
        assert_eq!(
            at("2026-11-01 12:30:05").unwrap(),
            "2026-11-01T12:30:05.000Z"
        );
        assert_eq!(
            at("2026-11-01T12:30:05.250Z").unwrap(),
            "2026-11-01T12:30:05.250Z"
        );
        for bad in ["", "30", "yesterday", "2026-13-01"] {
            let e = at(bad).unwrap_err().to_string();
            assert!(e.contains("give an age such as 30d"), "{bad}: {e}");
        }
    }
}
