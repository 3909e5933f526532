//! Run ids and timestamps, for runs measured and runs imported alike: the id shape
//! that [`Run::check`](crate::run::Run::check) accepts is made here.

use std::time::SystemTime;

/// RFC 3339 UTC with milliseconds, as the Run format writes instants.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_time() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let id = run_id(t);
        assert!(id.starts_with("20270115T080000Z-"), "{id}");
        assert_eq!(id.len(), "20270115T080000Z-".len() + 6);
    }
}
