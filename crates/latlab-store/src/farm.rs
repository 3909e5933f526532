//! A rig's store in a farm: the central PostgreSQL store while it can be reached, the
//! rig's own SQLite store when it cannot — at the start or at any write — with every
//! run written there owed to the central one, and [`push`] to send the owed runs later.
//! A run pushed twice is stored once: what the central store holds decides what a push
//! does.

use crate::postgres::{redact, PostgresStore};
use crate::{recover_where, Rig, RunFilter, RunStore, RunSummary, SqliteStore, StoreError};
use latlab_model::progress::{DeathCause, Progress, RunState};
use latlab_model::run::Run;
use latlab_model::series::SeriesFigures;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The central store, or the local one in its stead.
pub struct FarmStore {
    central: Option<PostgresStore>,
    /// The central store's URL, without its password.
    central_location: String,
    local: SqliteStore,
    notices: Vec<String>,
}

impl FarmStore {
    /// Connects to the central store at `url`, and opens the local store at `local`
    /// to fall back on. A server that cannot be reached or does not answer in time is
    /// no error: the runs go to the local store, and [`FarmStore::take_notices`] says
    /// so. Any other failure (a password, a newer schema) is.
    pub fn open(url: &str, local: &Path) -> Result<FarmStore, StoreError> {
        let local = SqliteStore::open(local)?;
        let mut farm = FarmStore {
            central: None,
            central_location: redact(url),
            local,
            notices: Vec::new(),
        };
        match PostgresStore::open(url) {
            Ok(central) => farm.central = Some(central),
            Err(e) if e.is_unavailable() => farm.fall_back(e),
            Err(e) => return Err(e),
        }
        Ok(farm)
    }

    /// From now on, a write to the central store that has not been answered half a
    /// second after `stop` is set goes to the local store instead: a run asked to stop
    /// ends at once, whatever the server does.
    pub fn stop_when(&mut self, stop: Arc<AtomicBool>) {
        if let Some(central) = self.central.as_mut() {
            central.stop_when(stop);
        }
    }

    /// True while the central store is written.
    pub fn is_central(&self) -> bool {
        self.central.is_some()
    }

    /// The local store, where the runs owed are.
    pub fn local(&mut self) -> &mut SqliteStore {
        &mut self.local
    }

    fn fall_back(&mut self, e: StoreError) {
        self.central = None;
        self.notices.push(format!(
            "{e}; the run goes on into the local store {} and is owed to {}: \
             `latlab push` (or the next latlab run with this store) sends it",
            self.local.path().display(),
            self.central_location
        ));
    }

    /// Writes with `write` to the central store; false when it is (or just became)
    /// unreachable.
    fn centrally(
        &mut self,
        write: impl FnOnce(&mut PostgresStore) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        let Some(central) = self.central.as_mut() else {
            return Ok(false);
        };
        match write(central) {
            Ok(()) => Ok(true),
            Err(e) if e.is_unavailable() => {
                self.fall_back(e);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn reader(&self) -> &dyn RunStore {
        match &self.central {
            Some(central) => central,
            None => &self.local,
        }
    }
}

impl RunStore for FarmStore {
    fn location(&self) -> String {
        match &self.central {
            Some(central) => central.location(),
            None => format!(
                "{} (owed to {})",
                self.local.path().display(),
                self.central_location
            ),
        }
    }

    /// The switch to the local store, when it happened.
    fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        if self.centrally(|c| c.save(run))? {
            return Ok(());
        }
        self.local.save(run)?;
        self.local.owe(&run.id, &self.central_location)
    }

    fn update(&mut self, run: &Run) -> Result<(), StoreError> {
        if self.centrally(|c| c.update(run))? {
            return Ok(());
        }
        // The first write after the switch: the local store does not hold it yet.
        match self.local.update(run) {
            Err(StoreError::NotFound { .. }) => self.local.save(run)?,
            other => other?,
        }
        self.local.owe(&run.id, &self.central_location)
    }

    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError> {
        if self.centrally(|c| c.save_imported(run, source_sha256))? {
            return Ok(());
        }
        self.local.save_imported(run, source_sha256)?;
        self.local.owe(&run.id, &self.central_location)
    }

    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError> {
        self.reader().imported_from(source_sha256)
    }

    fn summaries(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.reader().summaries()
    }

    fn list(
        &self,
        filter: &RunFilter,
        limit: Option<usize>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        self.reader().list(filter, limit)
    }

    fn load(&self, id: &str) -> Result<Option<Run>, StoreError> {
        self.reader().load(id)
    }

    fn series_figures(
        &self,
        runs: &[RunSummary],
    ) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
        self.reader().series_figures(runs)
    }

    fn remove(&mut self, ids: &[String]) -> Result<usize, StoreError> {
        match &mut self.central {
            Some(central) => central.remove(ids),
            None => self.local.remove(ids),
        }
    }

    fn recover(
        &mut self,
        this_boot: Option<&str>,
        alive: &dyn Fn(&Progress) -> bool,
    ) -> Result<Vec<(String, DeathCause)>, StoreError> {
        let mut found = self.local.recover(this_boot, alive)?;
        if let Some(central) = self.central.as_mut() {
            match central.recover(this_boot, alive) {
                Ok(more) => found.extend(more),
                // A table locked elsewhere, a server gone quiet: the run goes on
                // locally; the runs there are recovered another time.
                Err(e) if e.is_unavailable() => self.fall_back(e),
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }
}

impl PostgresStore {
    /// Only this machine's runs are judged ([`Rig::measures`]): another rig's pid and
    /// boot id mean nothing here, whatever its host name.
    pub(crate) fn recover_own(
        &mut self,
        this_boot: Option<&str>,
        alive: &dyn Fn(&Progress) -> bool,
    ) -> Result<Vec<(String, DeathCause)>, StoreError> {
        let here = Rig::this();
        recover_where(self, this_boot, alive, &|s| {
            s.progress
                .as_ref()
                .is_some_and(|p| here.measures(p, s.host.as_deref()))
        })
    }
}

/// What a push did with one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// The central store did not hold it: saved there.
    Saved,
    /// The central store held it as running: replaced by the local run.
    Updated,
    /// The central store holds it as ended or died already: nothing sent.
    AlreadyThere,
}

/// One run pushed.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The run.
    pub id: String,
    /// The central store, without its password.
    pub to: String,
    /// What was done.
    pub outcome: PushOutcome,
    /// The run is still running here: sent as it stands, and still owed.
    pub still_running: bool,
}

/// What a push did: the runs sent, and the runs not sent with why.
pub type PushReport = (Vec<Pushed>, Vec<(String, StoreError)>);

/// Sends every run the local store owes to a central store, to that store (only to
/// `url`'s, with `url`'s credentials, when given; otherwise each to its own, with the
/// credentials of `PGPASSWORD` or the password file). A run whose process `alive`
/// says lives is sent as it stands and stays owed; every other is no longer owed once
/// the central store holds it. Returns what was done, and the runs that could not be
/// sent with why.
pub fn push(
    local: &mut SqliteStore,
    url: Option<&str>,
    alive: &dyn Fn(&Progress) -> bool,
) -> Result<PushReport, StoreError> {
    let wanted = url.map(redact);
    let mut owed = local.owed()?;
    owed.retain(|o| wanted.as_ref().is_none_or(|w| *w == o.push_to));
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let mut targets: Vec<String> = owed.iter().map(|o| o.push_to.clone()).collect();
    targets.dedup();
    for target in targets {
        let connect_to = match (url, &wanted) {
            (Some(url), Some(w)) if *w == target => url.to_string(),
            _ => target.clone(),
        };
        let mut central = match PostgresStore::open(&connect_to) {
            Ok(c) => c,
            Err(e) => {
                let ids = owed.iter().filter(|o| o.push_to == target);
                // One error for the first run, each other run named by it.
                let message = e.to_string();
                let mut first = Some(e);
                for o in ids {
                    let e = first.take().unwrap_or_else(|| StoreError::Postgres {
                        location: target.clone(),
                        reason: message.clone(),
                    });
                    failed.push((o.id.clone(), e));
                }
                continue;
            }
        };
        let mut away: Option<String> = None;
        for o in owed.iter().filter(|o| o.push_to == target) {
            // A server that stopped answering is not asked again for every run.
            if let Some(why) = &away {
                failed.push((
                    o.id.clone(),
                    StoreError::Postgres {
                        location: target.clone(),
                        reason: why.clone(),
                    },
                ));
                continue;
            }
            match push_one(local, &mut central, &o.id, alive) {
                Ok(Some((outcome, still_running))) => done.push(Pushed {
                    id: o.id.clone(),
                    to: target.clone(),
                    outcome,
                    still_running,
                }),
                Ok(None) => {}
                Err(e) => {
                    if e.is_unavailable() {
                        away = Some(e.to_string());
                    }
                    failed.push((o.id.clone(), e));
                }
            }
        }
    }
    Ok((done, failed))
}

/// Pushes one owed run; `None` when the local store no longer holds it (removed).
fn push_one(
    local: &mut SqliteStore,
    central: &mut PostgresStore,
    id: &str,
    alive: &dyn Fn(&Progress) -> bool,
) -> Result<Option<(PushOutcome, bool)>, StoreError> {
    let Some(run) = local.load(id)? else {
        local.settle(id)?;
        return Ok(None);
    };
    // Running there, or found died there (its process ended while the server was
    // away): the central copy is partial, this one supersedes it.
    let running_there = |r: &Run| r.progress.is_some();
    let outcome = match central.load(id)? {
        None => match central.save(&run) {
            Ok(()) => PushOutcome::Saved,
            // Another push got there first.
            Err(StoreError::Duplicate { .. }) => PushOutcome::AlreadyThere,
            Err(e) => return Err(e),
        },
        Some(there) if running_there(&there) => match central.update(&run) {
            Ok(()) => PushOutcome::Updated,
            Err(StoreError::NotRunning { .. }) => PushOutcome::AlreadyThere,
            Err(e) => return Err(e),
        },
        Some(_) => PushOutcome::AlreadyThere,
    };
    let still_running = run
        .progress
        .as_ref()
        .is_some_and(|p| p.state == RunState::Running && alive(p));
    if !still_running {
        local.settle(id)?;
    }
    Ok(Some((outcome, still_running)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_central_store_runs_go_local_and_are_owed_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("local.sqlite");
        // A password no temporary directory's random name can hold by chance.
        let url = "postgres://lab:never-shown-pw@127.0.0.1:1/latency";
        let mut farm = FarmStore::open(url, &local).unwrap();
        assert!(!farm.is_central());
        let notices = farm.take_notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].contains("latlab push") && !notices[0].contains("never-shown"),
            "{}",
            notices[0]
        );
        let run = Run::from_json(include_str!("../../../docs/example-run.json")).unwrap();
        farm.save(&run).unwrap();
        let owed = farm.local().owed().unwrap();
        assert_eq!(owed.len(), 1);
        assert_eq!(owed[0].id, run.id);
        assert_eq!(owed[0].push_to, "postgres://lab@127.0.0.1:1/latency");
        assert_eq!(farm.load(&run.id).unwrap().as_ref(), Some(&run));
        // Still unreachable: the push fails and the run stays owed.
        let (pushed, failed) = push(farm.local(), None, &|_| false).unwrap();
        assert!(pushed.is_empty());
        assert_eq!(failed.len(), 1);
        assert!(failed[0].1.is_unavailable());
        assert_eq!(farm.local().owed().unwrap().len(), 1);
        // Removing the run settles it.
        farm.local().remove(std::slice::from_ref(&run.id)).unwrap();
        assert!(farm.local().owed().unwrap().is_empty());
    }
}
