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

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use latlab_model::run::{Percentile, Run};
use latlab_model::Nanos;
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema version this build reads and writes (2: the SHA-256 of an imported
/// run's source file).
pub const SCHEMA_VERSION: i64 = 2;

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
    /// Worst p99.9 over the run's streams (a bound when one stream's is).
    pub p99_9: Option<Percentile>,
    /// Worst maximum over the run's streams, ns.
    pub max_ns: Option<i64>,
    /// `pass`, `fail` or `none`.
    pub verdict: String,
    /// The run is degraded.
    pub degraded: bool,
}

/// Where Runs are kept.
pub trait RunStore {
    /// Saves a new run. One with the same id is never replaced:
    /// [`StoreError::Duplicate`].
    fn save(&mut self, run: &Run) -> Result<(), StoreError>;
    /// Saves a run imported from a file whose content has the SHA-256 `source_sha256`
    /// (hex), so the same content can be recognised when it is imported again.
    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError>;
    /// The id of the run imported from content with the SHA-256 `source_sha256`.
    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError>;
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
    /// The schema version of the database (an older one is read as it is).
    version: i64,
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

/// Why SQLite cannot write `path`, in words: the file, its directory or the file
/// system. Probed without changing anything: the file is opened for writing (not
/// truncated) and the directory is asked for an unnamed temporary file.
fn read_only_cause(path: &Path) -> Option<String> {
    const EROFS: i32 = 30;
    let why = |e: &std::io::Error| match e.raw_os_error() {
        Some(EROFS) => "on a file system mounted read-only",
        _ => "not writable for this user",
    };
    let denied = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(EROFS)
    };
    match std::fs::OpenOptions::new().write(true).open(path) {
        Err(e) if denied(&e) => return Some(format!("the file is {}", why(&e))),
        _ => {}
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match tempfile::tempfile_in(dir) {
        Err(e) if denied(&e) => Some(format!(
            "its directory {} (where SQLite keeps the store's journal) is {}",
            dir.display(),
            why(&e)
        )),
        _ => None,
    }
}

/// The error for a failed SQLite call on the store at `path`, naming the real cause.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
            cause: read_only_cause(&path)
                .unwrap_or_else(|| format!("SQLite refuses to write it ({e})")),
            path,
        },
        Some(ErrorCode::DiskFull) => StoreError::Full { path },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { path },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path,
            reason: e.to_string(),
        },
        Some(ErrorCode::CannotOpen) => match read_only_cause(&path) {
            Some(cause) => StoreError::ReadOnly { path, cause },
            None => StoreError::Open {
                path,
                source: Box::new(e),
            },
        },
        _ => StoreError::Sql(e),
    }
}

/// Brings the schema from version `from` to [`SCHEMA_VERSION`].
fn migrate(conn: &mut Connection, from: i64) -> Result<(), rusqlite::Error> {
    let tx = conn.transaction()?;
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
             CREATE INDEX IF NOT EXISTS runs_host_kernel ON runs(host, kernel);",
        )?;
    }
    if from < 2 {
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN source_sha256 TEXT;
             ALTER TABLE runs ADD COLUMN p99_9_bound INTEGER NOT NULL DEFAULT 0;
             CREATE INDEX IF NOT EXISTS runs_source ON runs(source_sha256);",
        )?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// A read-only connection to the store at `path` and its schema version; `immutable`
/// tells SQLite that nothing changes the file, so it needs no lock and no -shm.
fn connect_read_only(path: &Path, immutable: bool) -> Result<(Connection, i64), StoreError> {
    let conn = if immutable {
        // A URI, with the characters it reserves escaped.
        let mut uri = String::from("file:");
        for c in path.to_string_lossy().chars() {
            match c {
                '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
                c => uri.push(c),
            }
        }
        uri.push_str("?immutable=1");
        Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    } else {
        Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }
    .map_err(|e| classify(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let version = schema_version(path, &conn)?;
    Ok((conn, version))
}

/// True when the store's write-ahead log holds something not yet in the database file.
fn wal_pending(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0)
}

/// The store's schema version; one newer than this build's is refused.
fn schema_version(path: &Path, conn: &Connection) -> Result<i64, StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| classify(path, e))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: version,
        });
    }
    Ok(version)
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and migrates it, for commands
    /// that write.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?;
        }
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| classify(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let version = schema_version(path, &conn)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| classify(path, e))?;
        if version < SCHEMA_VERSION {
            migrate(&mut conn, version).map_err(|e| classify(path, e))?;
        }
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
            version: SCHEMA_VERSION,
        })
    }

    /// Opens the store at `path` for reading only: nothing is created, migrated or
    /// written, so a store on a read-only or full disk can still be read. A store that
    /// does not exist yet reads as empty.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        let empty = || -> Result<SqliteStore, StoreError> {
            let mut conn = Connection::open_in_memory()?;
            migrate(&mut conn, 0)?;
            Ok(SqliteStore {
                conn,
                path: path.to_path_buf(),
                version: SCHEMA_VERSION,
            })
        };
        if !path.exists() {
            return empty();
        }
        let (conn, version) = match connect_read_only(path, false) {
            // A WAL store needs its shared-memory index (-shm) even to be read; where
            // it cannot be created (a read-only directory) and no log is pending, the
            // database file alone holds every run.
            Err(StoreError::ReadOnly { .. } | StoreError::Open { .. }) if !wal_pending(path) => {
                connect_read_only(path, true)?
            }
            other => other?,
        };
        // An empty file (no schema yet) holds no runs; every later version has the
        // columns reading needs.
        if version == 0 {
            return empty();
        }
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
            version,
        })
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn insert(&mut self, run: &Run, source_sha256: Option<&str>) -> Result<(), StoreError> {
        let json = serde_json::to_string(run).expect("a Run always serialises");
        let p99_9 = worst_p99_9(run);
        let verdict = serde_json::to_value(run.verdict.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let inserted = self.conn.execute(
            "INSERT INTO runs
                 (id, started_at, host, kernel, scenario, p99_9_ns, p99_9_bound, max_ns,
                  verdict, degraded, run_json, source_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                run.id,
                // The index's columns hold "" for what an imported Run does not know;
                // the Run itself holds null.
                run.started_at.as_deref().unwrap_or(""),
                run.host.as_ref().map_or("", |h| h.hostname.as_str()),
                run.host.as_ref().map_or("", |h| h.kernel_release.as_str()),
                run.scenario,
                p99_9.map(|p| p.value().0),
                p99_9.is_some_and(Percentile::is_bound),
                worst(run, |s| s.stats.max_ns.map(|n| n.0)),
                verdict,
                run.degraded,
                json,
                source_sha256,
            ],
        );
        match inserted {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                Err(StoreError::Duplicate {
                    path: self.path.clone(),
                    id: run.id.clone(),
                })
            }
            Err(e) => Err(classify(&self.path, e)),
        }
    }
}

fn worst(run: &Run, f: impl Fn(&latlab_model::run::Stream) -> Option<i64>) -> Option<i64> {
    run.streams.iter().filter_map(f).max()
}

/// The worst p99.9 over the run's streams: a bound when any stream's is one (its sample
/// may lie above every other stream's).
fn worst_p99_9(run: &Run) -> Option<Percentile> {
    let all: Vec<Percentile> = run
        .streams
        .iter()
        .filter_map(|s| s.stats.percentile(99.9))
        .collect();
    let value = all.iter().map(|p| p.value()).max()?;
    Some(if all.iter().any(|p| p.is_bound()) {
        Percentile::AtLeast { at_least_ns: value }
    } else {
        Percentile::Exact(value)
    })
}

impl RunStore for SqliteStore {
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        self.insert(run, None)
    }

    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError> {
        self.insert(run, Some(source_sha256))
    }

    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs WHERE source_sha256 = ?1 LIMIT 1")?;
        let mut rows = stmt.query([source_sha256])?;
        Ok(match rows.next()? {
            Some(row) => Some(row.get(0)?),
            None => None,
        })
    }

    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            // A version-1 store read as it is has no bounds.
            if self.version >= 2 {
                "SELECT id, started_at, host, kernel, scenario, p99_9_ns, max_ns, verdict,
                     degraded, p99_9_bound
                 FROM runs ORDER BY started_at DESC, id DESC LIMIT ?1"
            } else {
                "SELECT id, started_at, host, kernel, scenario, p99_9_ns, max_ns, verdict,
                     degraded, 0
                 FROM runs ORDER BY started_at DESC, id DESC LIMIT ?1"
            },
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                started_at: r.get(1)?,
                host: r.get(2)?,
                kernel: r.get(3)?,
                scenario: r.get(4)?,
                p99_9: r.get::<_, Option<i64>>(5)?.map(|ns| {
                    if r.get::<_, bool>(9).unwrap_or(false) {
                        Percentile::AtLeast {
                            at_least_ns: Nanos(ns),
                        }
                    } else {
                        Percentile::Exact(Nanos(ns))
                    }
                }),
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
                    .map_err(|e| StoreError::BadRun {
                        path: self.path.clone(),
                        id: id.to_string(),
                        reason: e.to_string(),
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite_error(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn failures_are_named_by_their_real_cause() {
        let path = Path::new("/nonexistent/runs.sqlite");
        let full = classify(path, sqlite_error(rusqlite::ffi::SQLITE_FULL));
        assert!(matches!(full, StoreError::Full { .. }), "{full}");
        assert!(full.to_string().contains("disk is full"));
        let busy = classify(path, sqlite_error(rusqlite::ffi::SQLITE_BUSY));
        assert!(matches!(busy, StoreError::Locked { .. }), "{busy}");
        assert!(busy.to_string().contains("locked by another process"));
        let corrupt = classify(path, sqlite_error(rusqlite::ffi::SQLITE_NOTADB));
        assert!(matches!(corrupt, StoreError::Corrupt { .. }), "{corrupt}");
        let read_only = classify(path, sqlite_error(rusqlite::ffi::SQLITE_READONLY));
        assert!(
            matches!(read_only, StoreError::ReadOnly { .. }),
            "{read_only}"
        );
    }
}
