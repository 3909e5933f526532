//! Which machine measures a run, so that a store shared by a farm judges a running
//! run dead or alive only on the machine that measures it: a pid and a boot id mean
//! nothing on another. Host names are no identity — cloned images, boards that all
//! call themselves `buildroot` — so a run records its rig ([`Rig::this`]) in its
//! progress, and is judged by the rig that matches it.

use latlab_model::progress::Progress;
use sha2::{Digest, Sha256};

/// The environment variable that names this rig, overriding what latlab derives:
/// for machines that share one `/etc/machine-id` (cloned without
/// `systemd-machine-id-setup`) or have none.
pub const RIG_ENV: &str = "LATLAB_RIG";

/// Where the machine id is kept (machine-id(5)); the second is D-Bus's older place.
const MACHINE_ID_FILES: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/// This machine as runs record it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rig {
    /// Its identity (`progress.rig`): `LATLAB_RIG`, else a hash of the machine id,
    /// else the host name and this boot's id; `None` when none can be had.
    pub id: Option<String>,
    /// Its host name, for runs recorded before rigs were (their progress has none).
    pub host: Option<String>,
}

impl Rig {
    /// This machine.
    pub fn this() -> Rig {
        let host = this_host();
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok();
        let id = rig_id(
            std::env::var(RIG_ENV).ok().as_deref(),
            MACHINE_ID_FILES
                .iter()
                .find_map(|f| std::fs::read_to_string(f).ok())
                .as_deref(),
            host.as_deref(),
            boot.as_deref(),
        );
        Rig { id, host }
    }

    /// True when a run whose progress is `progress` and whose host name is `host` is
    /// measured by this machine: its rig is this one, or (recorded before rigs were)
    /// its host name is this one's.
    pub fn measures(&self, progress: &Progress, host: Option<&str>) -> bool {
        match &progress.rig {
            Some(rig) => self.id.as_ref() == Some(rig),
            None => self.host.is_some() && self.host.as_deref() == host,
        }
    }
}

/// A rig's identity from what the machine offers: the name given, else the machine id
/// (hashed: machine-id(5) asks applications not to show it, and the hash, with
/// latlab's own key, cannot be matched with other applications' records), else the
/// host name and the boot id — unique while the machine runs, but new at every boot,
/// so a run cut short by a reboot is then not recognised as this machine's.
fn rig_id(
    given: Option<&str>,
    machine_id: Option<&str>,
    host: Option<&str>,
    boot_id: Option<&str>,
) -> Option<String> {
    if let Some(name) = given.map(str::trim).filter(|n| !n.is_empty()) {
        return Some(name.to_string());
    }
    if let Some(machine) = machine_id.map(str::trim).filter(|m| !m.is_empty()) {
        let hash = Sha256::new()
            .chain_update(b"latlab rig\n")
            .chain_update(machine.as_bytes())
            .finalize();
        let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
        return Some(format!("machine:{hex}"));
    }
    match (host, boot_id.map(str::trim).filter(|b| !b.is_empty())) {
        (Some(host), Some(boot)) => Some(format!("boot:{host}/{boot}")),
        _ => None,
    }
}

/// This machine's host name as runs record it (`/proc/sys/kernel/hostname`).
pub fn this_host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::progress::RunState;

    #[test]
    fn a_given_name_then_the_machine_id_hashed_then_the_boot_name_a_rig() {
        let machine = "3d1219c7c4c5404aaa1f6d2a48adfda4\n";
        assert_eq!(
            rig_id(Some(" rig07 "), Some(machine), Some("h"), Some("b")).as_deref(),
            Some("rig07")
        );
        let hashed = rig_id(Some(""), Some(machine), Some("h"), Some("b")).unwrap();
        assert!(
            hashed.starts_with("machine:") && hashed.len() == 8 + 32,
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
        assert_eq!(
            rig_id(None, None, Some("buildroot"), Some("b1\n")).as_deref(),
            Some("boot:buildroot/b1")
        );
        assert_eq!(rig_id(None, Some(" "), Some("buildroot"), None), None);
    }

    #[test]
    fn a_run_is_this_rigs_by_its_rig_or_before_rigs_were_by_its_host_name() {
        let here = Rig {
            id: Some("machine:aa".into()),
            host: Some("rig".into()),
        };
        let progress = |rig: Option<&str>| Progress {
            state: RunState::Running,
            pid: 1,
            pid_start_ticks: None,
            boot_id: None,
            rig: rig.map(str::to_string),
            checkpoints: 0,
            checkpoint_at: None,
            checkpoint_every_ns: 1,
            death: None,
        };
        assert!(here.measures(&progress(Some("machine:aa")), Some("rig")));
        // Another machine with the same host name.
        assert!(!here.measures(&progress(Some("machine:bb")), Some("rig")));
        assert!(here.measures(&progress(None), Some("rig")));
        assert!(!here.measures(&progress(None), Some("other")));
        let nameless = Rig {
            id: None,
            host: None,
        };
        assert!(!nameless.measures(&progress(None), None));
    }
}
