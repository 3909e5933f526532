//! The farm's store: PostgreSQL, shared by many rigs, behind the same [`RunStore`]
//! trait and with the same rules as the SQLite store — a run is never replaced, only
//! a running one is extended, a schema newer than this build is refused.
//!
//! The schema's version is the one row of `latlab_schema`; migrations are ordered SQL
//! strings applied in one transaction under an advisory lock, so rigs that start
//! together migrate once. Each run is kept whole (`run` as `jsonb`) beside the listing's
//! columns; `added_at` is the server's clock, so runs of rigs with skewed clocks still
//! list in the order they arrived.
//!
//! A store is named by a URL or a libpq connection string, whose service
//! (`service=`, or `PGSERVICE`; [`crate::pgservice`]) gives what it leaves out.
//! Credentials come from the URL, the service, else `PGPASSWORD`, else the password
//! file (`passfile=`, `PGPASSFILE` or `~/.pgpass`, see [`crate::pgpass`]); they are
//! never printed: every message names the store by its URL without the password
//! ([`redact`]). TLS is used
//! when the URL asks for it (`sslmode=require`, `verify-ca` or `verify-full`); the
//! server's certificate is then always verified, against the web's root certificates
//! and the file `sslrootcert=` names.
//!
//! No server can hang a command: connecting, every statement and every lock wait have
//! limits ([`timeouts`]), kept by driving the connection on a runtime of the store's
//! own ([`link`]); a server past them is [`StoreError::NotAnswering`] or
//! [`StoreError::TimedOut`], which a [`FarmStore`](crate::FarmStore) answers by keeping
//! the run locally.

mod connect;
mod link;
mod parameters;
pub(crate) mod timeouts;

pub use connect::{is_url, redact};

use crate::row::{IndexRow, ListingColumns};
use crate::{updatable, RunFilter, RunStore, RunSummary, StoreError};
use connect::{failed, Target};
use latlab_model::run::{Percentile, Run};
use latlab_model::series::SeriesFigures;
use latlab_model::Nanos;
use link::{Failure, Link};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row};

/// The schema version of the PostgreSQL store this build reads and writes.
pub const PG_SCHEMA_VERSION: i64 = 4;

/// The migrations, in order: the `n`-th brings the schema from version `n` to `n + 1`.
const MIGRATIONS: [&str; PG_SCHEMA_VERSION as usize] = [
    // 1: runs, as the SQLite store's version 4 keeps them.
    "CREATE TABLE runs (
         id text PRIMARY KEY,
         added_seq bigserial NOT NULL,
         added_at timestamptz NOT NULL DEFAULT clock_timestamp(),
         started_at text NOT NULL,
         host text NOT NULL,
         kernel text NOT NULL,
         scenario text,
         p99_9_ns bigint,
         p99_9_bound boolean NOT NULL,
         max_ns bigint,
         verdict text NOT NULL,
         degraded boolean NOT NULL,
         source_sha256 text,
         name text,
         tags jsonb,
         note text,
         probes jsonb,
         periods jsonb,
         cpus jsonb,
         duration_ns bigint,
         loads jsonb,
         state text,
         progress jsonb,
         run jsonb NOT NULL
     );
     CREATE INDEX runs_added ON runs (added_at);
     CREATE INDEX runs_host_kernel ON runs (host, kernel);
     CREATE INDEX runs_kernel ON runs (kernel);
     CREATE INDEX runs_scenario ON runs (scenario);
     CREATE INDEX runs_name ON runs (name);
     CREATE INDEX runs_state ON runs (state) WHERE state IS NOT NULL;
     CREATE INDEX runs_source ON runs (source_sha256) WHERE source_sha256 IS NOT NULL;",
    // 2: names unique by an index, so that rigs taking one name at once cannot both
    // store it. Runs that shared a name before stay as they were: the one added last
    // keeps the name's place in the index, the others are marked `name_shared` and
    // left out of it (a reference by that name stays ambiguous and lists them).
    "ALTER TABLE runs ADD COLUMN name_shared boolean NOT NULL DEFAULT false;
     UPDATE runs r SET name_shared = true
      WHERE name IS NOT NULL
        AND id <> (SELECT newest.id FROM runs newest
                    WHERE newest.name = r.name
                    ORDER BY newest.added_at DESC, newest.added_seq DESC
                    LIMIT 1);
     CREATE UNIQUE INDEX runs_name_unique ON runs (name)
      WHERE name IS NOT NULL AND NOT name_shared;",
    // 3: the store as an SQL interface: the versioned views of docs/sql.md, read from
    // each run's facts, which a trigger takes from the Run as it is written.
    include_str!("views_v1.sql"),
    // 4: each run's figures per series beside the index, as the SQLite store's version
    // 7 keeps them, so that serve's farm view reads them and not every Run whole. The
    // runs stored before have none, and are read whole when asked for them. Safe to run
    // again over a store a test (or a person) set back to an earlier version.
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS series jsonb;",
];

/// Work a migration leaves to statements of its own, each repeated until it changes
/// no row: over a large store, one statement would outlast the statement timeout.
/// Each is the version it belongs to and the statement.
const BATCHES: [(i64, &str); 1] = [(
    // The facts of the runs stored before schema 3, a hundred runs at a time (each
    // read whole once: well under a second).
    3,
    "UPDATE runs SET facts = coalesce(latlab_facts(run), '{}')
      WHERE id IN (SELECT id FROM runs WHERE facts IS NULL LIMIT 100)",
)];

/// The index that keeps names unique.
const NAME_INDEX: &str = "runs_name_unique";

/// The advisory lock migrations hold ("latlab" in ASCII), so that rigs starting
/// together migrate one after the other.
const MIGRATION_LOCK: i64 = 0x6c61_746c_6162;

/// The columns a summary is read from, in [`summary_of`]'s order.
const SUMMARY_COLUMNS: &str = "id, to_char(added_at AT TIME ZONE 'UTC',
         'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
     started_at, host, kernel, scenario, p99_9_ns, p99_9_bound, max_ns, verdict, degraded,
     name, tags::text, note, probes::text, periods::text, cpus::text, duration_ns,
     loads::text, progress::text";

/// The PostgreSQL store.
pub struct PostgresStore {
    /// The connection, every wait on it limited.
    link: Link,
    location: String,
    server: String,
    /// Read-only, on a database that holds no latlab schema yet: no runs.
    empty: bool,
    /// Whether its runs have the column of figures per series (schema 4 on).
    series_column: bool,
}

impl PostgresStore {
    /// Connects to the store at `url` and brings its schema to this build's version,
    /// for commands that write.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let target = Target::parse(url)?;
        let mut store = PostgresStore {
            link: target.connect()?,
            location: target.location,
            server: target.server,
            empty: false,
            series_column: true,
        };
        if store.version()? != Some(PG_SCHEMA_VERSION) {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Connects to the store at `url` for reading only: nothing is created or
    /// migrated. A database without latlab's schema reads as empty.
    pub fn open_read_only(url: &str) -> Result<PostgresStore, StoreError> {
        let target = Target::parse(url)?;
        let mut store = PostgresStore {
            link: target.connect()?,
            location: target.location,
            server: target.server,
            empty: false,
            series_column: false,
        };
        match store.version()? {
            None | Some(0) => store.empty = true,
            Some(v) => {
                store.refuse_newer(v)?;
                store.series_column = v >= 4;
            }
        }
        Ok(store)
    }

    /// From now on, a wait on the server ends within half a second once `stop` is set
    /// — a command asked to stop by Ctrl-C or SIGTERM — as
    /// [`StoreError::NotAnswering`]; the caller keeps what it was writing elsewhere.
    pub fn stop_when(&mut self, stop: Arc<AtomicBool>) {
        self.link.waiter.stop_when(stop);
    }

    fn client(&self) -> &Client {
        self.link.client()
    }

    /// Awaits the answer to one statement `work` sent.
    fn answer<T>(
        &self,
        work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        self.link
            .waiter
            .wait(work)
            .map_err(|f| failed(&self.location, &self.server, f))
    }

    fn refuse_newer(&self, found: i64) -> Result<(), StoreError> {
        match found > PG_SCHEMA_VERSION {
            true => Err(StoreError::TooNew {
                path: PathBuf::from(&self.location),
                found,
            }),
            false => Ok(()),
        }
    }

    /// The schema version, `None` when the database holds no latlab schema.
    fn version(&mut self) -> Result<Option<i64>, StoreError> {
        let exists = self.answer(
            self.client()
                .query_one("SELECT to_regclass('latlab_schema') IS NOT NULL", &[]),
        )?;
        if !exists.get::<_, bool>(0) {
            return Ok(None);
        }
        let row = self.answer(
            self.client()
                .query_opt("SELECT max(version) FROM latlab_schema", &[]),
        )?;
        Ok(row.and_then(|r| r.get::<_, Option<i64>>(0)))
    }

    /// Applies the migrations this database lacks, in one transaction under
    /// [`MIGRATION_LOCK`]; a newer schema is refused.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let (location, server) = (self.location.clone(), self.server.clone());
        let fail = |f| failed(&location, &server, f);
        let (client, waiter) = self.link.parts();
        let tx = waiter.wait(client.transaction()).map_err(fail)?;
        waiter
            .wait(tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]))
            .map_err(fail)?;
        waiter
            .wait(tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS latlab_schema (version bigint NOT NULL)",
            ))
            .map_err(fail)?;
        let found: i64 = waiter
            .wait(tx.query_one("SELECT coalesce(max(version), 0) FROM latlab_schema", &[]))
            .map_err(fail)?
            .get(0);
        if found > PG_SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: PathBuf::from(&location),
                found,
            });
        }
        for migration in &MIGRATIONS[found as usize..] {
            waiter.wait(tx.batch_execute(migration)).map_err(fail)?;
        }
        for (_, batch) in BATCHES.iter().filter(|(version, _)| *version > found) {
            while waiter.wait(tx.execute(*batch, &[])).map_err(fail)? > 0 {}
        }
        waiter
            .wait(tx.execute("DELETE FROM latlab_schema", &[]))
            .map_err(fail)?;
        waiter
            .wait(tx.execute(
                "INSERT INTO latlab_schema (version) VALUES ($1)",
                &[&PG_SCHEMA_VERSION],
            ))
            .map_err(fail)?;
        waiter.wait(tx.commit()).map_err(fail)
    }

    fn insert(&mut self, run: &Run, source_sha256: Option<&str>) -> Result<(), StoreError> {
        let c = IndexRow::of(run);
        let inserted = self.link.waiter.wait(self.client().execute(
            "INSERT INTO runs
                 (id, started_at, host, kernel, scenario, p99_9_ns, p99_9_bound, max_ns,
                  verdict, degraded, run, name, tags, note, probes, periods, cpus,
                  duration_ns, loads, state, progress, series, source_sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::text::jsonb, $12,
                     $13::text::jsonb, $14, $15::text::jsonb, $16::text::jsonb,
                     $17::text::jsonb, $18, $19::text::jsonb, $20, $21::text::jsonb,
                     $22::text::jsonb, $23)
             ON CONFLICT (id) DO NOTHING",
            &[&index_values(run, &c)[..], &[&source_sha256]].concat(),
        ));
        let inserted = match inserted {
            Err(Failure::Driver(e))
                if e.as_db_error().and_then(|db| db.constraint()) == Some(NAME_INDEX) =>
            {
                let name = c.listing.name.clone().unwrap_or_default();
                let holder = self
                    .answer(self.client().query_opt(
                        "SELECT id FROM runs WHERE name = $1 AND NOT name_shared",
                        &[&name],
                    ))
                    .ok()
                    .flatten()
                    .map(|r| r.get(0));
                return Err(StoreError::NameTaken {
                    location: self.location.clone(),
                    name,
                    holder,
                });
            }
            other => other.map_err(|f| failed(&self.location, &self.server, f))?,
        };
        match inserted {
            1 => Ok(()),
            _ => Err(StoreError::Duplicate {
                path: PathBuf::from(&self.location),
                id: run.id.clone(),
            }),
        }
    }

    /// The WHERE clause and parameters of `filter`'s conditions that SQL can judge;
    /// the rest is judged by [`RunFilter::matches`] on what it returns.
    fn filter_sql(filter: &RunFilter) -> (String, Vec<Box<dyn ToSql + Sync>>) {
        let mut conditions: Vec<String> = Vec::new();
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        let mut text = |column: &str, pattern: &Option<String>| {
            if let Some(p) = pattern {
                let like: String = p
                    .chars()
                    .map(|c| match c {
                        '*' => "%".to_string(),
                        '%' | '_' | '\\' => format!("\\{c}"),
                        c => c.to_string(),
                    })
                    .collect();
                params.push(Box::new(like));
                conditions.push(format!("{column} LIKE ${}", params.len()));
            }
        };
        text("host", &filter.host);
        text("kernel", &filter.kernel);
        text("scenario", &filter.scenario);
        for (key, value) in &filter.tags {
            match value {
                Some(v) => {
                    params.push(Box::new(serde_json::json!({ key: v }).to_string()));
                    conditions.push(format!("tags @> ${}::text::jsonb", params.len()));
                }
                None => {
                    params.push(Box::new(key.clone()));
                    conditions.push(format!("(tags -> ${}::text) IS NOT NULL", params.len()));
                }
            }
        }
        if let Some(since) = filter.added_since {
            params.push(Box::new(since));
            conditions.push(format!("added_at >= ${}", params.len()));
        }
        if let Some(before) = filter.added_before {
            params.push(Box::new(before));
            conditions.push(format!("added_at < ${}", params.len()));
        }
        let clause = match conditions.is_empty() {
            true => String::new(),
            false => format!("WHERE {}", conditions.join(" AND ")),
        };
        (clause, params)
    }
}

/// A summary from a row of [`SUMMARY_COLUMNS`].
fn summary_of(r: &Row) -> RunSummary {
    let known = |i: usize| r.get::<_, Option<String>>(i).filter(|t| !t.is_empty());
    let columns = ListingColumns {
        name: r.get(11),
        tags: r.get(12),
        note: r.get(13),
        probes: r.get(14),
        periods: r.get(15),
        cpus: r.get(16),
        duration_ns: r.get(17),
        loads: r.get(18),
    };
    let listing = columns.listing();
    let bound: bool = r.get(7);
    RunSummary {
        id: r.get(0),
        name: listing.name,
        tags: listing.tags,
        note: listing.note,
        added_at: r.get(1),
        started_at: known(2),
        host: known(3),
        kernel: known(4),
        scenario: r.get(5),
        probes: listing.probes,
        periods_ns: listing.periods_ns,
        cpus: listing.cpus,
        duration_ns: listing.duration_ns,
        loads: listing.loads,
        p99_9: r.get::<_, Option<i64>>(6).map(|ns| match bound {
            true => Percentile::AtLeast {
                at_least_ns: Nanos(ns),
            },
            false => Percentile::Exact(Nanos(ns)),
        }),
        max_ns: r.get(8),
        verdict: r.get(9),
        degraded: r.get(10),
        // A progress latlab did not write reads as unknown: the run as ended.
        progress: r
            .get::<_, Option<String>>(19)
            .and_then(|t| serde_json::from_str(&t).ok()),
    }
}

/// A run's index row as statement parameters, `$1` to `$22`, in the order of the
/// `runs` table's index columns that INSERT and UPDATE both name.
fn index_values<'a>(run: &'a Run, c: &'a IndexRow) -> Vec<&'a (dyn ToSql + Sync)> {
    vec![
        &run.id,
        &c.started_at,
        &c.host,
        &c.kernel,
        &run.scenario,
        &c.p99_9_ns,
        &c.p99_9_bound,
        &c.max_ns,
        &c.verdict,
        &run.degraded,
        &c.json,
        &c.listing.name,
        &c.listing.tags,
        &c.listing.note,
        &c.listing.probes,
        &c.listing.periods,
        &c.listing.cpus,
        &c.listing.duration_ns,
        &c.listing.loads,
        &c.progress.state,
        &c.progress.json,
        &c.series,
    ]
}

impl RunStore for PostgresStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn recover(
        &mut self,
        this_boot: Option<&str>,
        alive: &dyn Fn(&latlab_model::progress::Progress) -> bool,
    ) -> Result<Vec<(String, latlab_model::progress::DeathCause)>, StoreError> {
        self.recover_own(this_boot, alive)
    }

    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        self.insert(run, None)
    }

    fn save_imported(&mut self, run: &Run, source_sha256: &str) -> Result<(), StoreError> {
        self.insert(run, Some(source_sha256))
    }

    fn imported_from(&self, source_sha256: &str) -> Result<Option<String>, StoreError> {
        if self.empty {
            return Ok(None);
        }
        let row = self.answer(self.client().query_opt(
            "SELECT id FROM runs WHERE source_sha256 = $1 LIMIT 1",
            &[&source_sha256],
        ))?;
        Ok(row.map(|r| r.get(0)))
    }

    fn summaries(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.list(&RunFilter::default(), None)
    }

    fn list(
        &self,
        filter: &RunFilter,
        limit: Option<usize>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        if self.empty {
            return Ok(Vec::new());
        }
        let (clause, params) = PostgresStore::filter_sql(filter);
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM runs {clause}
             ORDER BY added_at DESC, added_seq DESC"
        );
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self.answer(self.client().query(&sql, &refs))?;
        // The patterns were judged by LIKE; the filter judges again, exactly as the
        // SQLite store's listing does.
        Ok(rows
            .iter()
            .map(summary_of)
            .filter(|s| filter.matches(s))
            .take(limit.unwrap_or(usize::MAX))
            .collect())
    }

    fn load(&self, id: &str) -> Result<Option<Run>, StoreError> {
        if self.empty {
            return Ok(None);
        }
        let row = self.answer(
            self.client()
                .query_opt("SELECT run::text FROM runs WHERE id = $1", &[&id]),
        )?;
        match row {
            None => Ok(None),
            Some(row) => Run::from_json(row.get(0))
                .map(Some)
                .map_err(|e| StoreError::BadRun {
                    path: PathBuf::from(&self.location),
                    id: id.to_string(),
                    reason: e.to_string(),
                }),
        }
    }

    fn update(&mut self, run: &Run) -> Result<(), StoreError> {
        let c = IndexRow::of(run);
        let (location, server) = (self.location.clone(), self.server.clone());
        let fail = |f| failed(&location, &server, f);
        let (client, waiter) = self.link.parts();
        let tx = waiter.wait(client.transaction()).map_err(fail)?;
        let state: Option<Option<String>> = waiter
            .wait(tx.query_opt(
                "SELECT state FROM runs WHERE id = $1 FOR UPDATE",
                &[&run.id],
            ))
            .map_err(fail)?
            .map(|r| r.get(0));
        updatable(state, &run.id, std::path::Path::new(&location))?;
        waiter
            .wait(tx.execute(
                "UPDATE runs SET started_at = $2, host = $3, kernel = $4, scenario = $5,
                     p99_9_ns = $6, p99_9_bound = $7, max_ns = $8, verdict = $9, degraded = $10,
                     run = $11::text::jsonb, name = $12, tags = $13::text::jsonb, note = $14,
                     probes = $15::text::jsonb, periods = $16::text::jsonb,
                     cpus = $17::text::jsonb, duration_ns = $18, loads = $19::text::jsonb,
                     state = $20, progress = $21::text::jsonb, series = $22::text::jsonb
                 WHERE id = $1",
                &index_values(run, &c),
            ))
            .map_err(fail)?;
        waiter.wait(tx.commit()).map_err(fail)
    }

    fn series_figures(
        &self,
        runs: &[RunSummary],
    ) -> Result<BTreeMap<String, Vec<SeriesFigures>>, StoreError> {
        if self.empty || !self.series_column {
            return crate::series_figures_of_runs(self, runs);
        }
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        let rows = self.answer(self.client().query(
            "SELECT id, series::text FROM runs WHERE id = ANY($1)",
            &[&ids],
        ))?;
        let rows = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        crate::series_figures_of_column(self, rows)
    }

    fn remove(&mut self, ids: &[String]) -> Result<usize, StoreError> {
        if self.empty {
            return Ok(0);
        }
        let removed = self.answer(
            self.client()
                .execute("DELETE FROM runs WHERE id = ANY($1)", &[&ids]),
        )?;
        Ok(removed as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_takes_the_connection_and_never_answers_is_given_up() {
        // Connections to a socket nobody accepts on are completed by the kernel, and
        // what is sent is acknowledged, but nothing ever answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let began = std::time::Instant::now();
        let e = PostgresStore::open(&format!(
            "postgres://lab:pw@127.0.0.1:{port}/latency?connect_timeout=2"
        ))
        .err()
        .unwrap();
        let waited = began.elapsed();
        assert!(
            matches!(
                e,
                StoreError::NotAnswering {
                    waited: crate::NoAnswer::Connecting(d),
                    ..
                } if d == std::time::Duration::from_secs(2)
            ),
            "{e}"
        );
        assert!(e.is_unavailable());
        // A hang guard, not a measurement.
        assert!(waited < std::time::Duration::from_secs(30), "{waited:?}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("server at 127.0.0.1:{port} is not answering"))
                && !text.contains("pw"),
            "{text}"
        );
    }

    #[test]
    fn an_unreachable_server_is_a_lost_connection_naming_its_address() {
        // Port 1 on loopback: nothing listens there.
        let e = PostgresStore::open("postgres://lab:pw@127.0.0.1:1/latency")
            .err()
            .unwrap();
        assert!(e.is_unavailable(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("127.0.0.1:1") && !text.contains("pw"),
            "{text}"
        );
    }
}
