//! Where a run stands while it is measured, and how it ended when it did not end
//! normally: a long run is in the store from its start and extended at every
//! checkpoint, so a crash, a SIGKILL or a reboot loses at most one checkpoint.
//!
//! A Run that ended normally has no [`Progress`] (the field is absent). One written at
//! a checkpoint says `running`; one whose process is gone, or whose machine booted
//! again since, is marked `died` by the next latlab that opens its store, and keeps
//! everything up to its last checkpoint.

use serde::{Deserialize, Serialize};

/// A run that has not (yet) ended normally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// `running` or `died`.
    pub state: RunState,
    /// The measuring process.
    pub pid: u32,
    /// When that process started, in clock ticks since boot (`/proc/PID/stat` field
    /// 22), so that a pid reused by another process is not taken for it; `null` when
    /// unknown.
    #[serde(default)]
    pub pid_start_ticks: Option<u64>,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`) when the run started;
    /// `null` when it could not be read.
    pub boot_id: Option<String>,
    /// The machine measuring it, as latlab tells machines apart (`LATLAB_RIG`, else a
    /// hash of `/etc/machine-id`, else the host name and boot id), so that a store
    /// shared by machines with one host name judges the run on its own machine only;
    /// `null` when unknown (a run written before latlab recorded it).
    #[serde(default)]
    pub rig: Option<String>,
    /// Checkpoints written so far (0: only the start).
    pub checkpoints: u64,
    /// When the last checkpoint was taken, RFC 3339 UTC (`null`: none yet).
    pub checkpoint_at: Option<String>,
    /// How often checkpoints are taken, ns.
    pub checkpoint_every_ns: i64,
    /// For a died run: why it is known to have died, and when that was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub death: Option<Death>,
}

/// Whether a run is still being measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Being measured: extended at every checkpoint.
    Running,
    /// Its process is gone without ending it: it holds what was measured up to its
    /// last checkpoint.
    Died,
}

impl RunState {
    /// The word the store and the views use.
    pub fn name(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Died => "died",
        }
    }
}

/// How a run is known to have died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Death {
    /// `machine_rebooted` or `process_killed`.
    pub cause: DeathCause,
    /// When it was found dead, RFC 3339 UTC.
    pub found_at: String,
}

/// Why a running run's process is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeathCause {
    /// The machine booted since the run started (its boot id changed).
    MachineRebooted,
    /// The process is gone on this boot (killed, crashed, out of memory).
    ProcessKilled,
}

impl DeathCause {
    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            DeathCause::MachineRebooted => "machine rebooted",
            DeathCause::ProcessKilled => {
                "its process ended without saving it (killed, crashed, or its final save \
                 failed)"
            }
        }
    }
}

impl Progress {
    /// One line for people: `running, checkpoint 12 at …` or `died at <last
    /// checkpoint>; process killed`.
    pub fn describe(&self) -> String {
        let at = self.checkpoint_at.as_deref().unwrap_or("its start");
        match (&self.state, &self.death) {
            (RunState::Running, _) => match self.checkpoints {
                0 => format!("running (pid {}), no checkpoint yet", self.pid),
                n => format!("running (pid {}), checkpoint {n} at {at}", self.pid),
            },
            (RunState::Died, Some(death)) => {
                format!("died at {at}; {}", death.cause.words())
            }
            (RunState::Died, None) => format!("died at {at}"),
        }
    }

    /// Marks the run died of `cause`, found now (`found_at`).
    pub fn died(&mut self, cause: DeathCause, found_at: String) {
        self.state = RunState::Died;
        self.death = Some(Death { cause, found_at });
    }

    /// Why a run with this progress, started on boot `boot_id`, is dead given this
    /// boot's id and whether its process still lives; `None`: it may still be
    /// running. An unknown boot id on either side leaves the process test alone.
    pub fn why_dead(&self, this_boot: Option<&str>, alive: bool) -> Option<DeathCause> {
        if self.state != RunState::Running {
            return None;
        }
        match (self.boot_id.as_deref(), this_boot) {
            (Some(then), Some(now)) if then != now => Some(DeathCause::MachineRebooted),
            _ if !alive => Some(DeathCause::ProcessKilled),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(boot: Option<&str>) -> Progress {
        Progress {
            state: RunState::Running,
            pid: 42,
            pid_start_ticks: Some(7),
            boot_id: boot.map(str::to_string),
            rig: None,
            checkpoints: 3,
            checkpoint_at: Some("2026-11-23T12:00:30Z".into()),
            checkpoint_every_ns: 10_000_000_000,
            death: None,
        }
    }

    #[test]
    fn a_new_boot_or_a_gone_process_is_a_death_and_nothing_else_is() {
        let p = running(Some("a"));
        assert_eq!(
            p.why_dead(Some("b"), true),
            Some(DeathCause::MachineRebooted)
        );
        assert_eq!(
            p.why_dead(Some("a"), false),
            Some(DeathCause::ProcessKilled)
        );
        assert_eq!(p.why_dead(Some("a"), true), None);
        assert_eq!(running(None).why_dead(Some("b"), true), None);
        assert_eq!(
            running(None).why_dead(None, false),
            Some(DeathCause::ProcessKilled)
        );
        let mut dead = running(Some("a"));
        dead.died(DeathCause::ProcessKilled, "2026-11-23T12:01:00Z".into());
        assert_eq!(dead.why_dead(Some("b"), false), None, "found once");
        assert_eq!(
            dead.describe(),
            "died at 2026-11-23T12:00:30Z; its process ended without saving it (killed, crashed, or its final save failed)"
        );
        let json = serde_json::to_string(&dead).unwrap();
        assert!(json.contains("\"state\":\"died\"") && json.contains("process_killed"));
        assert_eq!(serde_json::from_str::<Progress>(&json).unwrap(), dead);
    }
}
