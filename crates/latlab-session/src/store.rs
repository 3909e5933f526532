//! Where the run store is and how every command opens it: `--store` (a path, a
//! `postgres://` URL or a connection string such as `service=farm`), else
//! `LATLAB_STORE`, else the SQLite store at its default path.
//! Every writable open first marks the runs whose process is gone as died, and says
//! so; a reading command that finds such runs tries to do the same, and when it cannot
//! write, shows them as died without writing.

use crate::error::CliError;
use latlab_model::progress::{DeathCause, Progress, RunState};
use latlab_model::run::Run;
use latlab_model::series::SeriesFigures;
use latlab_model::stamp::rfc3339;
use latlab_store::{
    is_url, redact, FarmStore, PostgresStore, RunFilter, RunStore, RunSummary, SqliteStore,
    StoreError,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// The environment variable that names the store when `--store` is not given.
pub const STORE_ENV: &str = "LATLAB_STORE";

/// A store, opened.
pub type Store = Box<dyn RunStore + Send>;

/// Where a run store is.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    Path(PathBuf),
    /// A PostgreSQL URL or connection string, password and all (shown only through
    /// [`redact`]).
    Url(String),
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Path(p) => write!(f, "{}", p.display()),
            StoreLocation::Url(u) => f.write_str(&redact(u)),
        }
    }
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreLocation({self})")
    }
}

impl StoreLocation {
    /// A `--store` or `LATLAB_STORE` value: a `postgres://` or `postgresql://` URL, a
    /// connection string of libpq's keywords (`service=farm`), or a path.
    pub fn parse(text: &str) -> Result<StoreLocation, String> {
        if text.is_empty() {
            return Err(
                "give a path to a SQLite file, a postgres:// URL or service=NAME".to_string(),
            );
        }
        if is_url(text) {
            return Ok(StoreLocation::Url(text.to_string()));
        }
        if text.contains("://") {
            return Err(format!(
                "{}: only postgres:// and postgresql:// URLs are stores; a path has no ://",
                redact(text)
            ));
        }
        Ok(StoreLocation::Path(PathBuf::from(text)))
    }

    /// `given` (`--store`), else `LATLAB_STORE`, else the default SQLite store.
    pub fn resolve(given: Option<&StoreLocation>) -> Result<StoreLocation, CliError> {
        if let Some(given) = given {
            return Ok(given.clone());
        }
        match std::env::var(STORE_ENV) {
            Ok(value) if !value.is_empty() => StoreLocation::parse(&value)
                .map_err(|e| CliError::config(format!("{STORE_ENV}: {e}"))),
            _ => Ok(StoreLocation::Path(latlab_store::default_path())),
        }
    }

    /// The SQLite file, for a store that is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Path(p) => Some(p),
            StoreLocation::Url(_) => None,
        }
    }
}

/// What `alive` means on this machine: the same process still runs.
fn alive(p: &Progress) -> bool {
    latlab_rt::process::is_same_process_alive(p.pid, p.pid_start_ticks)
}

/// Marks the store's dead runs died and says which on standard error.
fn recover(store: &mut Store) -> Result<(), CliError> {
    let boot = latlab_rt::process::boot_id();
    let found = store.recover(boot.as_deref(), &alive)?;
    for (id, cause) in found {
        let said = store
            .load(&id)
            .ok()
            .flatten()
            .and_then(|run| run.progress.map(|p| p.describe()))
            .unwrap_or_else(|| format!("died; {}", cause.words()));
        eprintln!("latlab: run {id} {said}");
    }
    Ok(())
}

/// Opens the store at `location` for a command that writes, migrating it, after
/// marking its dead runs died.
pub fn open_writable(location: &StoreLocation) -> Result<Store, CliError> {
    let mut store: Store = match location {
        StoreLocation::Path(p) => Box::new(SqliteStore::open(p)?),
        StoreLocation::Url(u) => Box::new(PostgresStore::open(u)?),
    };
    recover(&mut store)?;
    Ok(store)
}

/// Opens the store for a command that makes a Run (`run`, `attach`): a SQLite store
/// as [`open_writable`] does; a PostgreSQL one behind a [`FarmStore`] with the default
/// local store (or `LATLAB_OUTBOX`) to fall back on, after pushing the runs owed to it
/// (one line each on standard error). Once `stop` is set (the command asked to stop),
/// a write the server has not answered within half a second goes to the local store.
pub fn open_for_run(location: &StoreLocation, stop: &Arc<AtomicBool>) -> Result<Store, CliError> {
    let url = match location {
        StoreLocation::Path(_) => return open_writable(location),
        StoreLocation::Url(u) => u,
    };
    let mut farm = FarmStore::open(url, &outbox_path())?;
    farm.stop_when(stop.clone());
    if farm.is_central() {
        // Quietly: a server that answers now takes what it missed.
        if let Ok((pushed, _)) = latlab_store::push(farm.local(), Some(url), &alive) {
            for p in pushed {
                eprintln!("latlab: {}", pushed_line(&p));
            }
        }
    }
    let mut store: Store = Box::new(farm);
    recover(&mut store)?;
    for notice in store.take_notices() {
        eprintln!("latlab: {notice}");
    }
    Ok(store)
}

/// The local store runs fall back to when the central store cannot be reached:
/// `LATLAB_OUTBOX`, else the default SQLite store.
pub fn outbox_path() -> PathBuf {
    std::env::var_os("LATLAB_OUTBOX")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(latlab_store::default_path)
}

/// One pushed run, for people.
pub fn pushed_line(p: &latlab_store::Pushed) -> String {
    use latlab_store::PushOutcome;
    let what = match p.outcome {
        PushOutcome::Saved => "pushed to",
        PushOutcome::Updated => "updated in",
        PushOutcome::AlreadyThere => "already in",
    };
    let running = match p.still_running {
        true => " (still running: sent as it stands, pushed again later)",
        false => "",
    };
    format!("run {} {what} {}{running}", p.id, p.to)
}

/// Opens the store at `location` for reading. Runs it holds as running whose process
/// is gone are marked died: in the store when it can be written, else only in what is
/// read.
pub fn open_read_only(location: &StoreLocation) -> Result<Store, CliError> {
    let store: Store = match location {
        StoreLocation::Path(p) => Box::new(SqliteStore::open_read_only(p)?),
        StoreLocation::Url(u) => Box::new(PostgresStore::open_read_only(u)?),
    };
    let dead = dead_runs(&*store, location)?;
    if dead.is_empty() {
        return Ok(store);
    }
    drop(store);
    match open_writable(location) {
        Ok(store) => Ok(store),
        Err(_) => {
            let store: Store = match location {
                StoreLocation::Path(p) => Box::new(SqliteStore::open_read_only(p)?),
                StoreLocation::Url(u) => Box::new(PostgresStore::open_read_only(u)?),
            };
            Ok(Box::new(DeadInMemory { store, dead }))
        }
    }
}

/// Opens the store at `location` to show it, never writing (`latlab serve`): runs it
/// holds as running whose process is gone are shown died, in what is read only.
pub fn open_to_show(location: &StoreLocation) -> Result<Store, CliError> {
    let store: Store = match location {
        StoreLocation::Path(p) => Box::new(SqliteStore::open_read_only(p)?),
        StoreLocation::Url(u) => Box::new(PostgresStore::open_read_only(u)?),
    };
    let dead = dead_runs(&*store, location)?;
    Ok(match dead.is_empty() {
        true => store,
        false => Box::new(DeadInMemory { store, dead }),
    })
}

/// The runs `store` holds as running whose process is gone (of this machine only, in
/// a store others share), with why.
fn dead_runs(
    store: &dyn RunStore,
    location: &StoreLocation,
) -> Result<BTreeMap<String, DeathCause>, CliError> {
    let boot = latlab_rt::process::boot_id();
    let here = latlab_store::Rig::this();
    let shared = matches!(location, StoreLocation::Url(_));
    Ok(store
        .summaries()?
        .into_iter()
        .filter_map(|s| {
            let p = s.progress.as_ref()?;
            if shared && !here.measures(p, s.host.as_deref()) {
                return None;
            }
            let cause = p.why_dead(boot.as_deref(), alive(p))?;
            Some((s.id, cause))
        })
        .collect())
}

/// A store that cannot be written, its dead runs shown as died.
struct DeadInMemory {
    store: Store,
    dead: BTreeMap<String, DeathCause>,
}

impl DeadInMemory {
    fn mark(&self, id: &str, progress: &mut Option<Progress>) {
        if let (Some(cause), Some(p)) = (self.dead.get(id), progress.as_mut()) {
            if p.state == RunState::Running {
                p.died(*cause, rfc3339(SystemTime::now()));
            }
        }
    }
}

impl RunStore for DeadInMemory {
    fn location(&self) -> String {
        self.store.location()
    }
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        self.store.save(run)
    }
    fn update(&mut self, run: &Run) -> Result<(), StoreError> {
        self.store.update(run)
    }
    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError> {
        self.store.save_imported(run, source_sha256)
    }
    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError> {
        self.store.imported_from(source_sha256)
    }
    fn summaries(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.list(&RunFilter::default(), None)
    }
    fn list(
        &self,
        filter: &RunFilter,
        limit: Option<usize>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let mut runs = self.store.list(filter, limit)?;
        for s in &mut runs {
            self.mark(&s.id, &mut s.progress);
        }
        Ok(runs)
    }
    fn load(&self, id: &str) -> Result<Option<Run>, StoreError> {
        let mut run = self.store.load(id)?;
        if let Some(run) = run.as_mut() {
            self.mark(id, &mut run.progress);
        }
        Ok(run)
    }
    fn series_figures(
        &self,
        runs: &[RunSummary],
    ) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
        self.store.series_figures(runs)
    }
    fn remove(&mut self, ids: &[String]) -> Result<usize, StoreError> {
        self.store.remove(ids)
    }
}

/// Opens where a command writes its Run as JSON (`--json FILE`, `-` for standard
/// output) as every output flag is ([`OutputTarget::checked`](crate::output::OutputTarget::checked):
/// the default store and the command's `store` refused, a killed latlab's temporary
/// files beside it swept); with the stream people read: standard error when the JSON
/// takes standard output.
pub fn open_run_json(
    json: Option<&std::path::Path>,
    store: Option<&StoreLocation>,
) -> Result<(Option<crate::output::OutputTarget>, crate::output::Human), CliError> {
    use crate::output::{Human, OutputTarget};
    let json = json
        .map(|p| OutputTarget::checked("--json", p, store.and_then(StoreLocation::path)))
        .transpose()?;
    let human = match json {
        Some(OutputTarget::Stdout) => Human::Stderr,
        _ => Human::Stdout,
    };
    Ok((json, human))
}
