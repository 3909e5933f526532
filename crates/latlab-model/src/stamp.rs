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
}
