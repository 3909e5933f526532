//! The run store: every Run kept whole (its JSON) plus indexed columns for listing
//! and trend queries, behind the [`RunStore`] trait so other back-ends can follow.
//!
//! The embedded back-end is SQLite ([`SqliteStore`]) at
//! `$XDG_DATA_HOME/latlab/runs.sqlite` by default. Its schema version is SQLite's
//! `user_version`; opening a database written by a newer latlab is refused rather than
//! guessed at, and several latlab processes may write at once (WAL, busy timeout).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use latlab_model::run::Run;
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

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
    /// The file is not a latlab store (corrupt, or another program's database).
    #[error("{path} is not a usable latlab run store ({reason}); move it aside or choose another with --store PATH")]
    Corrupt {
        /// The database path.
        path: PathBuf,
        /// What was wrong.
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
    /// A run reference that matches no run, or more than one.
    #[error("no run '{reference}': {reason}")]
    NotFound {
        /// The reference as given.
        reference: String,
        /// Why.
        reason: String,
    },
    /// A query failed.
    #[error("run store error: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// One row of the store's listing.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// Start time (RFC 3339).
    pub started_at: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Scenario name, if any.
    pub scenario: Option<String>,
    /// Worst p99.9 over the run's streams, ns.
    pub p99_9_ns: Option<i64>,
    /// Worst maximum over the run's streams, ns.
    pub max_ns: Option<i64>,
    /// `pass`, `fail` or `none`.
    pub verdict: String,
    /// The run is degraded.
    pub degraded: bool,
}

/// Where Runs are kept.
pub trait RunStore {
    /// Saves a run (replacing one with the same id).
    fn save(&mut self, run: &Run) -> Result<(), StoreError>;
    /// Lists runs, newest first.
    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError>;
    /// Loads one run whole.
    fn load(&self, id: &str) -> Result<Option<Run>, StoreError>;

    /// Ids of every run, newest first.
    fn ids(&self) -> Result<Vec<String>, StoreError>;

    /// Finds a run by reference: `last`, `last~N` (N runs before the last), a full id,
    /// or a unique prefix of one.
    fn resolve(&self, reference: &str) -> Result<Run, StoreError> {
        let ids = self.ids()?;
        let id = resolve_reference(reference, &ids)?;
        self.load(&id)?.ok_or_else(|| StoreError::NotFound {
            reference: reference.to_string(),
            reason: "it vanished from the store".to_string(),
        })
    }
}

/// Picks the id a reference means among `ids` (newest first).
pub fn resolve_reference(reference: &str, ids: &[String]) -> Result<String, StoreError> {
    let not_found = |reason: String| StoreError::NotFound {
        reference: reference.to_string(),
        reason,
    };
    let r = reference.trim();
    if let Some(back) = r.strip_prefix("last") {
        let n: usize = match back.strip_prefix('~') {
            None if back.is_empty() => 0,
            Some(n) => n
                .parse()
                .map_err(|_| not_found("write last, last~1, last~2, ...".to_string()))?,
            None => return Err(not_found("write last, last~1, last~2, ...".to_string())),
        };
        return ids
            .get(n)
            .cloned()
            .ok_or_else(|| not_found(format!("the store holds {} run(s)", ids.len())));
    }
    if r.is_empty() {
        return Err(not_found(
            "give a run id, a prefix of one, or last".to_string(),
        ));
    }
    let matches: Vec<&String> = ids.iter().filter(|id| id.starts_with(r)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(not_found(
            "no run has that id (latlab runs lists them)".to_string(),
        )),
        many => Err(not_found(format!(
            "{} runs start with it ({}, ...): give more of the id",
            many.len(),
            many[0]
        ))),
    }
}

/// The embedded SQLite store.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

/// The default database path: `$XDG_DATA_HOME/latlab/runs.sqlite`, else
/// `~/.local/share/latlab/runs.sqlite`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab").join("runs.sqlite")
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and migrates it.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let open_err = |e: Box<dyn std::error::Error + Send + Sync>| StoreError::Open {
            path: path.to_path_buf(),
            source: e,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_err(Box::new(e)))?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| open_err(Box::new(e)))?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let corrupt = |e: rusqlite::Error| StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(corrupt)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: version,
            });
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(corrupt)?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate(version).map_err(corrupt)?;
        Ok(store)
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self, from: i64) -> Result<(), rusqlite::Error> {
        let tx = self.conn.transaction()?;
        if from < 1 {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS runs (
                     id TEXT PRIMARY KEY,
                     started_at TEXT NOT NULL,
                     host TEXT NOT NULL,
                     kernel TEXT NOT NULL,
                     scenario TEXT,
                     p99_9_ns INTEGER,
                     max_ns INTEGER,
                     verdict TEXT NOT NULL,
                     degraded INTEGER NOT NULL,
                     run_json TEXT NOT NULL
                 );
                 CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
                 CREATE INDEX IF NOT EXISTS runs_host_kernel ON runs(host, kernel);
                 PRAGMA user_version = 1;",
            )?;
        }
        tx.commit()
    }
}

fn worst(run: &Run, f: impl Fn(&latlab_model::run::Stream) -> Option<i64>) -> Option<i64> {
    run.streams.iter().filter_map(f).max()
}

impl RunStore for SqliteStore {
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        let json = serde_json::to_string(run).expect("a Run always serialises");
        let verdict = serde_json::to_value(run.verdict.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        self.conn.execute(
            "INSERT OR REPLACE INTO runs
                 (id, started_at, host, kernel, scenario, p99_9_ns, max_ns, verdict, degraded, run_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                run.id,
                // The index's columns hold "" for what an imported Run does not know;
                // the Run itself holds null.
                run.started_at.as_deref().unwrap_or(""),
                run.host.as_ref().map_or("", |h| h.hostname.as_str()),
                run.host.as_ref().map_or("", |h| h.kernel_release.as_str()),
                run.scenario,
                worst(run, |s| s.stats.percentile(99.9).map(|p| p.value().0)),
                worst(run, |s| s.stats.max_ns.map(|n| n.0)),
                verdict,
                run.degraded,
                json,
            ],
        )?;
        Ok(())
    }

    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, started_at, host, kernel, scenario, p99_9_ns, max_ns, verdict, degraded
             FROM runs ORDER BY started_at DESC, id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                started_at: r.get(1)?,
                host: r.get(2)?,
                kernel: r.get(3)?,
                scenario: r.get(4)?,
                p99_9_ns: r.get(5)?,
                max_ns: r.get(6)?,
                verdict: r.get(7)?,
                degraded: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn ids(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs ORDER BY started_at DESC, id DESC")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn load(&self, id: &str) -> Result<Option<Run>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_json FROM runs WHERE id = ?1")?;
        let mut rows = stmt.query([id])?;
        match rows.next()? {
            None => Ok(None),
            Some(row) => {
                let json: String = row.get(0)?;
                Run::from_json(&json)
                    .map(Some)
                    .map_err(|e| StoreError::Corrupt {
                        path: self.path.clone(),
                        reason: format!("run {id}: {e}"),
                    })
            }
        }
    }
}
