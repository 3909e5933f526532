//! A name stands for one run, in SQLite and PostgreSQL alike, kept so by a unique index:
//! runs started at once with one name store one, the others are refused at their start
//! with the clear error (exit 2); a store that held a name twice before still opens; a
//! run owed to the central store under a name taken there meanwhile stays owed, with
//! the reason.

use crate::common::{latlab_path, shared, text};
use crate::pg::PgCluster;
use latlab_model::run::Run;
use latlab_store::{FarmStore, PostgresStore, RunStore, SqliteStore, StoreError};
use std::process::{Command, Stdio};

/// Starts `count` runs named `name` on `store` at once and waits for them all: each
/// one's exit code and standard error.
fn at_once(store: &str, name: &str, count: usize, outbox: &std::path::Path) -> Vec<(i32, String)> {
    let _slot = shared();
    let children: Vec<_> = (0..count)
        .map(|_| {
            Command::new(latlab_path())
                .env("LATLAB_OUTBOX", outbox)
                .args([
                    "run",
                    "-d",
                    "1s",
                    "-c",
                    "0",
                    "-q",
                    "--no-audit",
                    "--name",
                    name,
                ])
                .args(["--store", store])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            (out.status.code().unwrap_or(-1), text(&out.stderr))
        })
        .collect()
}

/// One of `outcomes` stored its run; every other was refused with the clear error.
fn one_stored_the_others_refused(outcomes: &[(i32, String)], name: &str) {
    let stored = outcomes.iter().filter(|(code, _)| *code == 0).count();
    assert_eq!(stored, 1, "{outcomes:#?}");
    for (code, err) in outcomes.iter().filter(|(code, _)| *code != 0) {
        assert_eq!(*code, 2, "{err}");
        assert!(
            err.contains("--name: the run store at ")
                && err.contains(&format!("already has a run named {name}")),
            "{err}"
        );
    }
}

#[test]
fn runs_started_at_once_with_one_name_store_one_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let outcomes = at_once(store.to_str().unwrap(), "together", 6, &store);
    one_stored_the_others_refused(&outcomes, "together");
    let runs = SqliteStore::open_read_only(&store)
        .unwrap()
        .summaries()
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].name.as_deref(), Some("together"));
}

#[test]
fn runs_started_at_once_with_one_name_store_one_in_postgres() {
    let pg = PgCluster::start();
    drop(PostgresStore::open(&pg.url()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    let outcomes = at_once(&pg.url(), "together", 6, &outbox);
    one_stored_the_others_refused(&outcomes, "together");
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "1");
    assert_eq!(pg.sql("SELECT name FROM runs"), "together");
    // Nothing kept locally either: the refused runs measured nothing.
    let local = SqliteStore::open_read_only(&outbox).unwrap();
    assert!(local.summaries().unwrap().is_empty());
}

/// A Run to save directly, named `name`.
fn named(id: &str, name: &str) -> Run {
    let mut run =
        Run::from_json(include_str!("../../../../docs/example-run.json")).expect("the example");
    run.id = id.to_string();
    run.name = Some(name.to_string());
    run
}

#[test]
fn a_farm_store_that_held_a_name_twice_still_opens_and_keeps_both() {
    let pg = PgCluster::start();
    let mut store = PostgresStore::open(&pg.url()).unwrap();
    store
        .save(&named("20261201T100000Z-aaaaaa", "twice"))
        .unwrap();
    // As a store of version 1 could: the same name again.
    pg.sql(
        "DROP INDEX runs_name_unique; ALTER TABLE runs DROP COLUMN name_shared; \
         UPDATE latlab_schema SET version = 1",
    );
    store
        .save(&named("20261201T100001Z-bbbbbb", "twice"))
        .unwrap();
    drop(store);
    // Migrated: both kept, the one added last keeps the name's place.
    let mut store = PostgresStore::open(&pg.url()).unwrap();
    assert_eq!(
        pg.sql("SELECT version FROM latlab_schema"),
        latlab_store::PG_SCHEMA_VERSION.to_string()
    );
    assert_eq!(
        pg.sql("SELECT string_agg(id || ':' || name_shared, ' ' ORDER BY id) FROM runs"),
        "20261201T100000Z-aaaaaa:true 20261201T100001Z-bbbbbb:false"
    );
    match store.save(&named("20261201T100002Z-cccccc", "twice")) {
        Err(StoreError::NameTaken { holder, .. }) => {
            assert_eq!(holder.as_deref(), Some("20261201T100001Z-bbbbbb"))
        }
        other => panic!("not refused: {other:?}"),
    }
    assert!(matches!(
        store.resolve("twice"),
        Err(StoreError::Ambiguous { .. })
    ));
}

#[test]
fn a_run_owed_under_a_name_taken_centrally_meanwhile_stays_owed() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    // The central store away: kept locally, owed.
    pg.stop_server();
    let mut farm = FarmStore::open(&pg.url(), &outbox).unwrap();
    assert!(!farm.is_central());
    farm.save(&named("20261201T110000Z-aaaaaa", "nightly"))
        .unwrap();
    drop(farm);
    pg.start_server();
    // Meanwhile another rig stored a run by that name.
    let mut central = PostgresStore::open(&pg.url()).unwrap();
    central
        .save(&named("20261201T110001Z-bbbbbb", "nightly"))
        .unwrap();
    let mut local = SqliteStore::open(&outbox).unwrap();
    let (pushed, failed) = latlab_store::push(&mut local, Some(&pg.url()), &|_| false).unwrap();
    assert!(pushed.is_empty(), "{pushed:?}");
    assert_eq!(failed.len(), 1);
    assert!(
        matches!(&failed[0].1, StoreError::NameTaken { name, .. } if name == "nightly"),
        "{}",
        failed[0].1
    );
    assert_eq!(local.owed().unwrap().len(), 1);
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "1");
}
