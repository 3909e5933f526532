//! The embedded back-end: SQLite at `$XDG_DATA_HOME/latlab/runs.sqlite` by default, its
//! schema version in `user_version`, several latlab processes writing at once (WAL, a
//! busy timeout), read-only opens for the reading commands.

pub(crate) mod outbox;

use crate::row::{series_json, IndexRow, ListingColumns};
use crate::summary::{added_before_it_was_kept, Listing};
use crate::{updatable, RunStore, RunSummary, StoreError, BUSY_TIMEOUT, SCHEMA_VERSION};
use latlab_model::progress::Progress;
use latlab_model::run::{Percentile, Run};
use latlab_model::series::SeriesFigures;
use latlab_model::stamp::rfc3339;
use latlab_model::Nanos;
use rusqlite::{params, Connection, OpenFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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
pub(crate) fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    let path = path.to_path_buf();
    // The WAL index's shared map could not be opened, sized, locked or mapped.
    use rusqlite::ffi::{
        SQLITE_IOERR_SHMLOCK, SQLITE_IOERR_SHMMAP, SQLITE_IOERR_SHMOPEN, SQLITE_IOERR_SHMSIZE,
    };
    const SHARED_MAP_ERRORS: [i32; 4] = [
        SQLITE_IOERR_SHMOPEN,
        SQLITE_IOERR_SHMSIZE,
        SQLITE_IOERR_SHMLOCK,
        SQLITE_IOERR_SHMMAP,
    ];
    if e.sqlite_error()
        .is_some_and(|f| SHARED_MAP_ERRORS.contains(&f.extended_code))
    {
        return StoreError::NoSharedMaps { path };
    }
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
    // Holding the write lock from the start: two latlabs opening a new store at once
    // both read version 0; the second migrates from what the first left, not again.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let from = tx
        .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))?
        .max(from);
    if from >= SCHEMA_VERSION {
        return Ok(());
    }
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
    if from < 3 {
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN added_at TEXT;
             ALTER TABLE runs ADD COLUMN name TEXT;
             ALTER TABLE runs ADD COLUMN tags_json TEXT;
             ALTER TABLE runs ADD COLUMN note TEXT;
             ALTER TABLE runs ADD COLUMN probes_json TEXT;
             ALTER TABLE runs ADD COLUMN periods_json TEXT;
             ALTER TABLE runs ADD COLUMN cpus_json TEXT;
             ALTER TABLE runs ADD COLUMN duration_ns INTEGER;
             ALTER TABLE runs ADD COLUMN loads_json TEXT;
             CREATE INDEX IF NOT EXISTS runs_added ON runs(added_at);
             CREATE INDEX IF NOT EXISTS runs_name ON runs(name);",
        )?;
        fill_listing_columns(&tx)?;
    }
    if from < 4 {
        // NULL: the run ended (every run stored before version 4 did).
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN state TEXT;
             ALTER TABLE runs ADD COLUMN progress_json TEXT;
             CREATE INDEX IF NOT EXISTS runs_state ON runs(state);",
        )?;
    }
    if from < 5 {
        tx.execute_batch(outbox::MIGRATION)?;
    }
    if from < 6 {
        // Names unique by an index, so that two latlabs taking one name at once cannot
        // both store it. Runs that shared a name before stay as they were: the one
        // added last keeps the name's place in the index, the others are marked
        // `name_shared` and left out of it (a reference by that name stays ambiguous
        // and lists them).
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN name_shared INTEGER NOT NULL DEFAULT 0;
             UPDATE runs SET name_shared = 1
              WHERE name IS NOT NULL
                AND rowid <> (SELECT newest.rowid FROM runs newest
                               WHERE newest.name = runs.name
                               ORDER BY newest.added_at DESC, newest.rowid DESC
                               LIMIT 1);
             CREATE UNIQUE INDEX runs_name_unique ON runs(name)
              WHERE name IS NOT NULL AND name_shared = 0;",
        )?;
    }
    if from < 7 {
        tx.execute_batch("ALTER TABLE runs ADD COLUMN series_json TEXT;")?;
        fill_series_column(&tx)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// Fills the columns version 3 added for the runs stored before: each from its Run,
/// the added time from its import or its end ([`added_before_it_was_kept`]). A run
/// that cannot be read keeps them unknown, its added time its start where known.
fn fill_listing_columns(tx: &rusqlite::Transaction) -> Result<(), rusqlite::Error> {
    let rows: Vec<(i64, String, String)> = tx
        .prepare("SELECT rowid, run_json, started_at FROM runs")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (rowid, json, started_at) in rows {
        let (listing, added_at) = match Run::from_json(&json) {
            Ok(run) => (Listing::of(&run), added_before_it_was_kept(&run)),
            Err(_) => (
                Listing::default(),
                Some(started_at).filter(|s| !s.is_empty()),
            ),
        };
        let columns = ListingColumns::of(&listing);
        tx.execute(
            "UPDATE runs SET added_at = ?1, name = ?2, tags_json = ?3, note = ?4,
                 probes_json = ?5, periods_json = ?6, cpus_json = ?7, duration_ns = ?8,
                 loads_json = ?9
             WHERE rowid = ?10",
            params![
                added_at,
                columns.name,
                columns.tags,
                columns.note,
                columns.probes,
                columns.periods,
                columns.cpus,
                columns.duration_ns,
                columns.loads,
                rowid
            ],
        )?;
    }
    Ok(())
}

/// Fills the column version 7 added for the runs stored before, each from its Run; a
/// run that cannot be read keeps it `NULL` (its figures are read from the Run then,
/// and found unreadable there).
fn fill_series_column(tx: &rusqlite::Transaction) -> Result<(), rusqlite::Error> {
    let rows: Vec<(i64, String)> = tx
        .prepare("SELECT rowid, run_json FROM runs")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (rowid, json) in rows {
        if let Ok(run) = Run::from_json(&json) {
            tx.execute(
                "UPDATE runs SET series_json = ?1 WHERE rowid = ?2",
                params![series_json(&run), rowid],
            )?;
        }
    }
    Ok(())
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
        // Latlabs opening a new store at once can find it busy without SQLite's busy
        // handler waiting (the switch to WAL, the log's first recovery): tried again
        // until the same bound a write waits.
        let began = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match SqliteStore::open_once(path) {
                Err(StoreError::Locked { .. }) if began.elapsed() + pause < BUSY_TIMEOUT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &Path) -> Result<SqliteStore, StoreError> {
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| classify(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let version = schema_version(path, &conn)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(|e| classify(path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| classify(path, e))?;
        }
        // Every commit synced to disk (SQLite's default, said here because a
        // checkpoint relies on it): a crash loses nothing committed.
        conn.pragma_update(None, "synchronous", "FULL")
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
        let row = IndexRow::of(run);
        let added_at = rfc3339(SystemTime::now());
        let inserted = self.conn.execute(
            "INSERT INTO runs
                 (id, started_at, host, kernel, scenario, p99_9_ns, p99_9_bound, max_ns,
                  verdict, degraded, run_json, source_sha256, added_at, name, tags_json,
                  note, probes_json, periods_json, cpus_json, duration_ns, loads_json,
                  state, progress_json, series_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                     ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params![
                run.id,
                row.started_at,
                row.host,
                row.kernel,
                run.scenario,
                row.p99_9_ns,
                row.p99_9_bound,
                row.max_ns,
                row.verdict,
                run.degraded,
                row.json,
                source_sha256,
                added_at,
                row.listing.name,
                row.listing.tags,
                row.listing.note,
                row.listing.probes,
                row.listing.periods,
                row.listing.cpus,
                row.listing.duration_ns,
                row.listing.loads,
                row.progress.state,
                row.progress.json,
                row.series,
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
            // The only unique index besides the id's: the name's.
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
            {
                let name = row.listing.name.clone().unwrap_or_default();
                let holder = self
                    .conn
                    .query_row(
                        "SELECT id FROM runs WHERE name = ?1 AND name_shared = 0",
                        [&name],
                        |r| r.get(0),
                    )
                    .ok();
                Err(StoreError::NameTaken {
                    location: self.location(),
                    name,
                    holder,
                })
            }
            Err(e) => Err(classify(&self.path, e)),
        }
    }
}

/// The listing's columns every schema version has, in [`base_summary`]'s order.
const BASE_COLUMNS: &str = "rowid, id, started_at, host, kernel, scenario, p99_9_ns, max_ns,
     verdict, degraded, p99_9_bound";

/// A summary from a row starting with [`BASE_COLUMNS`] (a version-1 store, read as it
/// is, has 0 for `p99_9_bound`: no bounds), with the rest given.
fn base_summary(
    r: &rusqlite::Row,
    added_at: Option<String>,
    listing: Listing,
    progress: Option<Progress>,
) -> Result<RunSummary, rusqlite::Error> {
    // The index's text columns hold "" for what an imported Run does not know.
    let known = |i: usize| -> Result<Option<String>, rusqlite::Error> {
        Ok(r.get::<_, String>(i).ok().filter(|t| !t.is_empty()))
    };
    let bound: bool = r.get::<_, bool>(10).unwrap_or(false);
    Ok(RunSummary {
        id: r.get(1)?,
        name: listing.name,
        tags: listing.tags,
        note: listing.note,
        added_at,
        started_at: known(2)?,
        host: known(3)?,
        kernel: known(4)?,
        scenario: r.get(5)?,
        probes: listing.probes,
        periods_ns: listing.periods_ns,
        cpus: listing.cpus,
        duration_ns: listing.duration_ns,
        loads: listing.loads,
        p99_9: r.get::<_, Option<i64>>(6)?.map(|ns| match bound {
            true => Percentile::AtLeast {
                at_least_ns: Nanos(ns),
            },
            false => Percentile::Exact(Nanos(ns)),
        }),
        max_ns: r.get(7)?,
        verdict: r.get(8)?,
        degraded: r.get(9)?,
        progress,
    })
}

impl SqliteStore {
    /// The summaries of a store of an older version, read as it is: what version 3
    /// keeps in columns is taken from each Run, ordered as version 3 orders it.
    fn summaries_before_version_3(&self) -> Result<Vec<RunSummary>, StoreError> {
        let bound = if self.version >= 2 {
            "p99_9_bound"
        } else {
            "0"
        };
        let columns = BASE_COLUMNS.replace("p99_9_bound", bound);
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {columns}, run_json FROM runs"))?;
        let rows = stmt.query_map([], |r| {
            let json: String = r.get(11)?;
            let run = Run::from_json(&json).ok();
            let listing = run.as_ref().map(Listing::of).unwrap_or_default();
            let added_at = run.as_ref().and_then(added_before_it_was_kept);
            Ok((
                r.get::<_, i64>(0)?,
                base_summary(r, added_at, listing, None)?,
            ))
        })?;
        let mut rows: Vec<(i64, RunSummary)> = rows.collect::<Result<_, _>>()?;
        // Newest added first; unknown last, as SQLite orders NULL.
        rows.sort_by(|(a_row, a), (b_row, b)| (&b.added_at, b_row).cmp(&(&a.added_at, a_row)));
        Ok(rows.into_iter().map(|(_, summary)| summary).collect())
    }
}

impl RunStore for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

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

    fn summaries(&self) -> Result<Vec<RunSummary>, StoreError> {
        if self.version < 3 {
            return self.summaries_before_version_3();
        }
        // Before version 4 every run had ended.
        let progress = match self.version >= 4 {
            true => "progress_json",
            false => "NULL",
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {BASE_COLUMNS}, added_at, name, tags_json, note, probes_json,
                 periods_json, cpus_json, duration_ns, loads_json, {progress}
             FROM runs ORDER BY added_at DESC, rowid DESC"
        ))?;
        let rows = stmt.query_map([], |r| {
            let columns = ListingColumns {
                name: r.get(12)?,
                tags: r.get(13)?,
                note: r.get(14)?,
                probes: r.get(15)?,
                periods: r.get(16)?,
                cpus: r.get(17)?,
                duration_ns: r.get(18)?,
                loads: r.get(19)?,
            };
            // A progress latlab did not write reads as unknown: the run as ended.
            let progress = r
                .get::<_, Option<String>>(20)?
                .and_then(|t| serde_json::from_str(&t).ok());
            base_summary(r, r.get(11)?, columns.listing(), progress)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn update(&mut self, run: &Run) -> Result<(), StoreError> {
        let row = IndexRow::of(run);
        let path = self.path.clone();
        // The write lock from the start: a deferred transaction that read first finds
        // the store busy, without waiting, when another latlab wrote in between.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| classify(&path, e))?;
        let state: Option<Option<String>> = tx
            .query_row("SELECT state FROM runs WHERE id = ?1", [&run.id], |r| {
                r.get(0)
            })
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .map_err(|e| classify(&path, e))?;
        updatable(state, &run.id, &path)?;
        tx.execute(
            "UPDATE runs SET started_at = ?2, host = ?3, kernel = ?4, scenario = ?5,
                 p99_9_ns = ?6, p99_9_bound = ?7, max_ns = ?8, verdict = ?9, degraded = ?10,
                 run_json = ?11, name = ?12, tags_json = ?13, note = ?14, probes_json = ?15,
                 periods_json = ?16, cpus_json = ?17, duration_ns = ?18, loads_json = ?19,
                 state = ?20, progress_json = ?21, series_json = ?22
             WHERE id = ?1",
            params![
                run.id,
                row.started_at,
                row.host,
                row.kernel,
                run.scenario,
                row.p99_9_ns,
                row.p99_9_bound,
                row.max_ns,
                row.verdict,
                run.degraded,
                row.json,
                row.listing.name,
                row.listing.tags,
                row.listing.note,
                row.listing.probes,
                row.listing.periods,
                row.listing.cpus,
                row.listing.duration_ns,
                row.listing.loads,
                row.progress.state,
                row.progress.json,
                row.series,
            ],
        )
        .map_err(|e| classify(&path, e))?;
        tx.commit().map_err(|e| classify(&path, e))
    }

    fn series_figures(
        &self,
        runs: &[RunSummary],
    ) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
        if self.version < 7 {
            return crate::series_figures_of_runs(self, runs);
        }
        let wanted: BTreeSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let mut stmt = self.conn.prepare("SELECT id, series_json FROM runs")?;
        let mut rows = stmt.query([])?;
        let mut columns = Vec::new();
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            if wanted.contains(id.as_str()) {
                columns.push((id, row.get(1)?));
            }
        }
        drop(rows);
        drop(stmt);
        crate::series_figures_of_column(self, columns)
    }

    fn remove(&mut self, ids: &[String]) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| classify(&path, e))?;
        let mut removed = 0;
        for id in ids {
            removed += tx
                .execute("DELETE FROM runs WHERE id = ?1", [id])
                .map_err(|e| classify(&path, e))?;
            if self.version >= 5 {
                tx.execute("DELETE FROM outbox WHERE id = ?1", [id])
                    .map_err(|e| classify(&path, e))?;
            }
        }
        tx.commit().map_err(|e| classify(&path, e))?;
        Ok(removed)
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
        let unmappable = classify(path, sqlite_error(rusqlite::ffi::SQLITE_IOERR_SHMMAP));
        assert!(
            matches!(unmappable, StoreError::NoSharedMaps { .. }),
            "{unmappable}"
        );
        let read_only = classify(path, sqlite_error(rusqlite::ffi::SQLITE_READONLY));
        assert!(
            matches!(read_only, StoreError::ReadOnly { .. }),
            "{read_only}"
        );
    }
}
