//! Which machine measured a run: one identity for every use — the series a run belongs
//! to (`host.rig`) and the machine a store shared by a farm judges a running run on
//! (`progress.rig`). Host names are no identity: cloned images and boards that all
//! call themselves `buildroot` share one, and a rig may be renamed.

use sha2::{Digest, Sha256};

/// The environment variable that names this rig, overriding what latlab derives: for
/// machines that share one `/etc/machine-id` (cloned without
/// `systemd-machine-id-setup`) or have none.
pub const RIG_ENV: &str = "LATLAB_RIG";

/// Where the machine id is kept (machine-id(5)); the second is D-Bus's older place.
pub const MACHINE_ID_FILES: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/// A rig's identity from what the machine offers: the name given (one word of at most
/// 64 characters), else `machine:` and 16 hex digits of a hash of the machine id
/// (machine-id(5) asks applications not to show it; the hash, with latlab's own key,
/// cannot be matched with other applications' records), else, with `boot_id`, the host
/// name and the boot id — unique while the machine runs but new at every boot, so only
/// for telling a live run's machine; `None` when none can be had.
pub fn rig_id(
    given: Option<&str>,
    machine_id: Option<&str>,
    host: Option<&str>,
    boot_id: Option<&str>,
) -> Option<String> {
    let given = given.map(str::trim).filter(|n| {
        !n.is_empty()
            && n.chars().count() <= 64
            && !n.chars().any(|c| c.is_whitespace() || c.is_control())
    });
    if let Some(name) = given {
        return Some(name.to_string());
    }
    if let Some(machine) = machine_id.map(str::trim).filter(|m| !m.is_empty()) {
        let hash = Sha256::new()
            .chain_update(b"latlab rig\n")
            .chain_update(machine.as_bytes())
            .finalize();
        let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
        return Some(format!("machine:{hex}"));
    }
    match (host, boot_id.map(str::trim).filter(|b| !b.is_empty())) {
        (Some(host), Some(boot)) => Some(format!("boot:{host}/{boot}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_name_then_the_machine_id_hashed_then_the_boot_name_a_rig() {
        let machine = "3d1219c7c4c5404aaa1f6d2a48adfda4\n";
        assert_eq!(
            rig_id(Some(" rig07 "), Some(machine), Some("h"), Some("b")).as_deref(),
            Some("rig07")
        );
        let hashed = rig_id(Some(""), Some(machine), Some("h"), Some("b")).unwrap();
        assert!(
            hashed.starts_with("machine:") && hashed.len() == 8 + 16,
            "{hashed}"
        );
        assert!(
            !hashed.contains("3d1219c7"),
            "the machine id itself is not shown"
        );
        assert_eq!(
            rig_id(None, Some(machine), None, None).as_deref(),
            Some(hashed.as_str()),
            "the same machine, the same rig"
        );
        assert_ne!(
            rig_id(None, Some("0f1219c7c4c5404aaa1f6d2a48adfda4"), None, None).unwrap(),
            hashed
        );
        // A name that is not one word is no name.
        assert_eq!(
            rig_id(Some("two words"), Some(machine), None, None).unwrap(),
            hashed
        );
        assert_eq!(
            rig_id(None, None, Some("buildroot"), Some("b1\n")).as_deref(),
            Some("boot:buildroot/b1")
        );
        assert_eq!(rig_id(None, Some(" "), Some("buildroot"), None), None);
    }
}
