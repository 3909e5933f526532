//! Which machine measures a run, so that a store shared by a farm judges a running
//! run dead or alive only on the machine that measures it: a pid and a boot id mean
//! nothing on another. Host names are no identity — cloned images, boards that all
//! call themselves `buildroot` — so a run records its rig ([`Rig::this`]) in its
//! progress, and is judged by the rig that matches it.

use latlab_model::progress::Progress;

pub use latlab_model::rig::RIG_ENV;
use latlab_model::rig::{rig_id, MACHINE_ID_FILES};

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
