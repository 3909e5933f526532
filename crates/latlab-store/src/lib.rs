//! The run store: every Run kept whole (its JSON) plus indexed columns for listing
//! and trend queries, behind the [`RunStore`] trait so other back-ends can follow.
//!
//! The embedded back-end is SQLite ([`SqliteStore`]) at
//! `$XDG_DATA_HOME/latlab/runs.sqlite` by default. Its schema version is SQLite's
//! `user_version`; opening a database written by a newer latlab is refused rather than
//! guessed at, and several latlab processes may write at once (WAL, busy timeout).
//! Reading commands open it read-only ([`SqliteStore::open_read_only`]), so a store on
//! a read-only or full disk can still be listed and reported on. A stored run is never
//! replaced: saving an id the store holds is [`StoreError::Duplicate`].
//!
//! Every run has the time it was added (entered this store), and the store lists runs
//! by it, newest first: `last` is the run added most recently, whether measured or
//! imported, and whatever time its source says it was measured at. Runs are found by
//! reference ([`resolve_reference`]): position, id, name, or the id's random suffix.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod farm;
mod pgpass;
mod pgservice;
mod postgres;
mod reference;
mod rig;
mod row;
mod sqlite;
mod summary;

pub use farm::{push, FarmStore, PushOutcome, PushReport, Pushed};
pub use postgres::timeouts::{
    ANSWER_MARGIN, CONNECT_TIMEOUT, IDLE_IN_TRANSACTION_TIMEOUT, LOCK_TIMEOUT, STATEMENT_TIMEOUT,
};
pub use postgres::{is_url, redact, PostgresStore, PG_SCHEMA_VERSION};
pub use reference::resolve_reference;
pub use rig::{this_host, Rig, RIG_ENV};
pub use sqlite::outbox::Owed;
pub use sqlite::{default_path, SqliteStore};
pub use summary::{RunFilter, RunSummary};

use latlab_model::progress::{DeathCause, Progress, RunState};
use latlab_model::run::Run;
use latlab_model::series::SeriesFigures;
use latlab_model::stamp::rfc3339;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The schema version this build reads and writes (2: the SHA-256 of an imported
/// run's source file; 3: when each run was added, the user's name, tags and note, and
/// the listing's probes, periods, CPUs, duration and loads; 4: a run's progress, so a
/// run is kept from its start and extended at every checkpoint; 5: the outbox, the runs
/// owed to a central store that could not be reached; 6: names unique by an index, the
/// runs that shared a name before kept as they were; 7: each run's figures per series,
/// for the farm view).
pub const SCHEMA_VERSION: i64 = 7;

/// How long a writer waits for another process's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file or its directory could not be opened or created.
    #[error("cannot open the run store at {path}: {source} (choose another with --store PATH, or --no-store)")]
    Open {
        /// The database path.
        path: PathBuf,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store's file system cannot map a file shared (9p without `cache=mmap`, some
    /// NFS and FUSE mounts): SQLite's WAL journal keeps its index in such a map.
    #[error("the run store at {path} is on a file system without shared memory maps (9p without cache=mmap, some NFS and FUSE mounts), which SQLite's WAL journal needs: keep the store on a local file system (--store /var/lib/latlab/runs.sqlite, or set XDG_DATA_HOME), or mount this one with cache=mmap (9p)")]
    NoSharedMaps {
        /// The database path.
        path: PathBuf,
    },
    /// The file is not a latlab store (corrupt, or another program's database).
    #[error("{path} is not a usable latlab run store ({reason}); move it aside or choose another with --store PATH")]
    Corrupt {
        /// The database path.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// One stored run cannot be read (written by another program, or edited); the
    /// store and its other runs are fine.
    #[error("run {id} in {path} cannot be read: {reason}; the other runs are unaffected")]
    BadRun {
        /// The database path.
        path: PathBuf,
        /// The run.
        id: String,
        /// Why.
        reason: String,
    },
    /// Written by a newer latlab.
    #[error("the run store at {path} has schema version {found}, newer than this latlab understands ({SCHEMA_VERSION}); upgrade latlab")]
    TooNew {
        /// The database path.
        path: PathBuf,
        /// The version found.
        found: i64,
    },
    /// The store cannot be written: the file, its directory (where SQLite keeps its
    /// journal) or the file system is read-only.
    #[error("cannot write the run store at {path}: {cause}; make it writable, or choose another store with --store PATH (reading commands such as latlab runs still work)")]
    ReadOnly {
        /// The database path.
        path: PathBuf,
        /// What is read-only, in words.
        cause: String,
    },
    /// The disk holding the store is full.
    #[error("cannot write the run store at {path}: the disk is full; free space there, or choose another store with --store PATH")]
    Full {
        /// The database path.
        path: PathBuf,
    },
    /// Another process held the store's lock longer than [`BUSY_TIMEOUT`].
    #[error("the run store at {path} stayed locked by another process for {} s; try again when it is done (fuser {path} names it), or choose another store with --store PATH", BUSY_TIMEOUT.as_secs())]
    Locked {
        /// The database path.
        path: PathBuf,
    },
    /// A run with this id is stored already; a stored run is never replaced.
    #[error("the run store at {path} already holds a run with id {id}, which is never replaced")]
    Duplicate {
        /// The database path.
        path: PathBuf,
        /// The id.
        id: String,
    },
    /// Another run in the store has this name: a name stands for one run, and the
    /// store's unique index on names keeps it so also when two latlabs take one at once.
    #[error("the run store at {location} already has a run named {name}{}; choose another name, or remove that run first (latlab rm {name})", holder.as_ref().map(|id| format!(" ({id})")).unwrap_or_default())]
    NameTaken {
        /// The store: a path, or a URL without its password.
        location: String,
        /// The name.
        name: String,
        /// The run that has it, when known.
        holder: Option<String>,
    },
    /// A run reference that matches no run, or more than one.
    #[error("no run '{reference}': {reason}")]
    NotFound {
        /// The reference as given.
        reference: String,
        /// Why.
        reason: String,
    },
    /// A reference that several runs answer to (a name given twice, an id prefix).
    #[error("'{reference}' could mean {} runs: {}{}; give the full id of the one you mean", candidates.len() + more, candidates.join(", "), if *more > 0 { format!(" and {more} more") } else { String::new() })]
    Ambiguous {
        /// The reference as given.
        reference: String,
        /// The first runs it could mean, each with its name and start where known.
        candidates: Vec<String>,
        /// How many more it could mean.
        more: usize,
    },
    /// Only a run still running is replaced (at a checkpoint, or when it ends); a run
    /// that ended or died is kept as it is.
    #[error("the run store at {path} holds run {id} as ended, not running, and never replaces it")]
    NotRunning {
        /// The database path.
        path: PathBuf,
        /// The id.
        id: String,
    },
    /// A query failed.
    #[error("run store error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A `--store` / `LATLAB_STORE` value that is neither a path nor a PostgreSQL URL
    /// latlab can use.
    #[error("{given}: {reason}")]
    BadLocation {
        /// The location as given, without its password.
        given: String,
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// The PostgreSQL server cannot be reached: down, another host or port, the
    /// network, or the connection broke while in use.
    #[error("cannot reach the PostgreSQL server of the run store {location} at {server}: {reason}; check that it runs and accepts connections there (listen_addresses, pg_hba.conf, a firewall)")]
    Unreachable {
        /// The store's URL, without its password.
        location: String,
        /// `host:port` or the socket directory.
        server: String,
        /// What the connection said.
        reason: String,
    },
    /// The PostgreSQL server answered but refused: a password, a role, a database, a
    /// privilege or TLS.
    #[error("the PostgreSQL server of the run store {location} refused: {reason}; {fix}")]
    Refused {
        /// The store's URL, without its password.
        location: String,
        /// What the server said.
        reason: String,
        /// What to change.
        fix: String,
    },
    /// The PostgreSQL server took a connection and then did not answer in time: a
    /// stopped or hung server or host, or a network that lost the connection while
    /// TCP still holds it.
    #[error("the PostgreSQL server at {server} is not answering ({waited}; run store {location}); check that it runs and is not stopped or overloaded, and that no firewall drops its packets")]
    NotAnswering {
        /// The store's URL, without its password.
        location: String,
        /// `host:port` or the socket.
        server: String,
        /// What latlab waited for, and how long.
        waited: NoAnswer,
    },
    /// The PostgreSQL server cancelled a statement at one of its limits: a lock held
    /// elsewhere longer than `lock_timeout`, a statement longer than
    /// `statement_timeout`, a transaction idle longer than
    /// `idle_in_transaction_session_timeout`.
    #[error("the PostgreSQL server of the run store {location} gave up: {reason}; {fix}")]
    TimedOut {
        /// The store's URL, without its password.
        location: String,
        /// What the server said.
        reason: String,
        /// What to look at or change.
        fix: String,
    },
    /// A PostgreSQL query failed.
    #[error("run store error at {location}: {reason}")]
    Postgres {
        /// The store's URL, without its password.
        location: String,
        /// What the server said.
        reason: String,
    },
}

/// What latlab waited for when it gave up on a PostgreSQL server that did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// Connecting (TCP, TLS and authentication) took longer than the connect timeout.
    Connecting(Duration),
    /// The answer to a statement took longer than the statement timeout plus a margin:
    /// a server that is alive would have cancelled the statement by then.
    Statement(Duration),
    /// The command was asked to stop (Ctrl-C, SIGTERM) and the server had not answered
    /// this long after.
    Stopping(Duration),
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use postgres::timeouts::seconds;
        match self {
            NoAnswer::Connecting(d) => write!(
                f,
                "no answer while connecting for {}; connect_timeout in the URL or \
                 PGCONNECT_TIMEOUT sets how long latlab waits",
                seconds(*d)
            ),
            NoAnswer::Statement(d) => write!(
                f,
                "no answer to a statement for {}, its statement_timeout and {} more; \
                 options=-c%20statement_timeout%3D… in the URL or PGOPTIONS sets it",
                seconds(*d),
                seconds(postgres::timeouts::ANSWER_MARGIN)
            ),
            NoAnswer::Stopping(d) => {
                write!(f, "no answer {} after the signal to stop", seconds(*d))
            }
        }
    }
}

impl StoreError {
    /// True when the store's server cannot take a run now — it cannot be reached, does
    /// not answer, the connection broke, or a lock held elsewhere outlasted the lock
    /// timeout: what [`FarmStore`] answers by keeping the run locally, to push it later.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. }
                | StoreError::NotAnswering { .. }
                | StoreError::TimedOut { .. }
        )
    }
}

/// Where Runs are kept.
pub trait RunStore {
    /// Where the store is, for people: a path, or a URL without its password.
    fn location(&self) -> String;

    /// What the store did on its own since last asked, in words for standard error
    /// (a [`FarmStore`] that switched to its local store); nothing for most stores.
    fn take_notices(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Saves a new run. One with the same id is never replaced:
    /// [`StoreError::Duplicate`]. A run whose `progress` says `running` is kept from
    /// its start: [`update`](RunStore::update) extends it at each checkpoint, and
    /// replaces it with its final form when it ends.
    fn save(&mut self, run: &Run) -> Result<(), StoreError>;
    /// Replaces a stored run that has not ended — running, or found died — with `run`
    /// (the same id): its next checkpoint, or (no `progress`) what it was when it
    /// ended. A died run is replaced too, because its last checkpoint is the partial
    /// copy: the run itself, ended elsewhere (its final form kept in a local outbox
    /// and pushed, or saved by a process wrongly taken for dead), supersedes it.
    /// Durable when it returns. A run that ended is never replaced:
    /// [`StoreError::NotRunning`]; one the store does not hold: [`StoreError::NotFound`].
    fn update(&mut self, run: &Run) -> Result<(), StoreError>;
    /// Saves a run imported from a file whose content has the SHA-256 `source_sha256`
    /// (hex), so the same content can be recognised when it is imported again.
    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError>;
    /// The id of the run imported from content with the SHA-256 `source_sha256`.
    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError>;
    /// Every run's summary, newest added first.
    fn summaries(&self) -> Result<Vec<RunSummary>, StoreError>;
    /// Loads one run whole.
    fn load(&self, id: &str) -> Result<Option<Run>, StoreError>;
    /// Removes the runs with these ids; returns how many there were.
    fn remove(&mut self, ids: &[String]) -> Result<usize, StoreError>;

    /// The runs `filter` lets through, newest added first, at most `limit` of them
    /// (`None`: all).
    fn list(
        &self,
        filter: &RunFilter,
        limit: Option<usize>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        Ok(self
            .summaries()?
            .into_iter()
            .filter(|r| filter.matches(r))
            .take(limit.unwrap_or(usize::MAX))
            .collect())
    }

    /// Each of `runs`' figures per series ([`SeriesFigures`]), by run id: what a farm's
    /// view needs of every run beside its summary. A run removed since it was listed
    /// is left out. This default reads each Run whole; a store that keeps the figures
    /// beside its index reads only them.
    fn series_figures(
        &self,
        runs: &[RunSummary],
    ) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
        series_figures_of_runs(self, runs)
    }

    /// Finds the runs still marked running whose process is gone (`alive(progress)`
    /// is false: see `latlab_rt::process::is_same_process_alive`) or that started on another boot than `this_boot`, and marks them died,
    /// keeping everything up to their last checkpoint. Returns each with its cause.
    fn recover(
        &mut self,
        this_boot: Option<&str>,
        alive: &dyn Fn(&Progress) -> bool,
    ) -> Result<Vec<(String, DeathCause)>, StoreError> {
        recover_where(self, this_boot, alive, &|_| true)
    }

    /// Finds a run by reference: `last`, `last~N` (N runs before the last added), a
    /// full id, a run's name, its id's random suffix, or a unique prefix of its id
    /// ([`resolve_reference`]).
    fn resolve(&self, reference: &str) -> Result<Run, StoreError> {
        let id = resolve_reference(reference, &self.summaries()?)?;
        self.load(&id)?.ok_or_else(|| StoreError::NotFound {
            reference: reference.to_string(),
            reason: "it vanished from the store".to_string(),
        })
    }
}

/// [`RunStore::series_figures`] from each Run whole.
pub(crate) fn series_figures_of_runs<S: RunStore + ?Sized>(
    store: &S,
    runs: &[RunSummary],
) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
    let mut figures = BTreeMap::new();
    for summary in runs {
        if let Some(run) = store.load(&summary.id)? {
            figures.insert(summary.id.clone(), SeriesFigures::of_run(&run));
        }
    }
    Ok(figures)
}

/// [`RunStore::series_figures`] from the column a store keeps them in: `rows` are each
/// run's id and the column's JSON; a run whose column is empty or not what latlab
/// writes (stored before the column was) is read whole.
pub(crate) fn series_figures_of_column<S: RunStore + ?Sized>(
    store: &S,
    rows: Vec<(String, Option<String>)>,
) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
    let mut figures = BTreeMap::new();
    for (id, column) in rows {
        match column.and_then(|json| serde_json::from_str(&json).ok()) {
            Some(series) => {
                figures.insert(id, series);
            }
            None => {
                if let Some(run) = store.load(&id)? {
                    figures.insert(id, SeriesFigures::of_run(&run));
                }
            }
        }
    }
    Ok(figures)
}

/// [`RunStore::recover`] for the running runs `mine` picks.
pub(crate) fn recover_where<S: RunStore + ?Sized>(
    store: &mut S,
    this_boot: Option<&str>,
    alive: &dyn Fn(&Progress) -> bool,
    mine: &dyn Fn(&RunSummary) -> bool,
) -> Result<Vec<(String, DeathCause)>, StoreError> {
    let mut found = Vec::new();
    let running: Vec<RunSummary> = store
        .summaries()?
        .into_iter()
        .filter(|s| {
            s.progress
                .as_ref()
                .is_some_and(|p| p.state == RunState::Running)
                && mine(s)
        })
        .collect();
    for summary in running {
        let Some(progress) = &summary.progress else {
            continue;
        };
        let Some(cause) = progress.why_dead(this_boot, alive(progress)) else {
            continue;
        };
        let Some(mut run) = store.load(&summary.id)? else {
            continue;
        };
        let Some(progress) = run.progress.as_mut() else {
            continue;
        };
        progress.died(cause, rfc3339(SystemTime::now()));
        match store.update(&run) {
            Ok(()) => found.push((summary.id, cause)),
            // Another latlab found it first.
            Err(StoreError::NotRunning { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(found)
}

/// Whether a run whose row's `state` is this (`None`: no row) may be updated: only a
/// run not ended (running, or died) is; an ended one is never replaced.
pub(crate) fn updatable(
    state: Option<Option<String>>,
    id: &str,
    location: &std::path::Path,
) -> Result<(), StoreError> {
    match state {
        None => Err(StoreError::NotFound {
            reference: id.to_string(),
            reason: "the store does not hold it".to_string(),
        }),
        // Running, or died: not ended.
        Some(Some(_)) => Ok(()),
        Some(None) => Err(StoreError::NotRunning {
            path: location.to_path_buf(),
            id: id.to_string(),
        }),
    }
}
