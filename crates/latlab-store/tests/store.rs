//! The SQLite store: round trips, migrations refused from the future, corrupt files,
//! and several writers at once.

use latlab_model::hist::LatencyHistogram;
use latlab_model::run::*;
use latlab_model::series::SeriesFigures;
use latlab_model::spec::{ClockName, SchedSpec, TimerMethod};
use latlab_model::threshold::{Status, Verdict};
use latlab_model::Nanos;
use latlab_store::{RunFilter, RunStore, SqliteStore, StoreError};

fn sample_run(id: &str, started_at: &str, max: i64) -> Run {
    let mut sums = ExactSums::default();
    let mut hist = LatencyHistogram::new();
    for v in [1_000, 2_000, max] {
        sums.add(v);
        hist.record(v);
    }
    Run {
        schema: SCHEMA.to_string(),
        id: id.to_string(),
        tool: Tool {
            name: "latlab".into(),
            version: Some("0.0.0".into()),
        },
        started_at: Some(started_at.to_string()),
        ended_at: Some(started_at.to_string()),
        command_line: Some(vec!["latlab".into(), "run".into()]),
        scenario: None,
        name: None,
        tags: Default::default(),
        note: None,
        plan: Plan {
            duration_ns: Some(Nanos::SECOND),
            warm_up_ns: Nanos::ZERO,
            cpus: vec![0],
            cpu_choice: None,
            probes: vec![ProbePlan::Timer(TimerSettings {
                method: TimerMethod::Abs,
                period_ns: Nanos::MILLISECOND,
                clock: ClockName::Monotonic,
                policy: SchedSpec::DEFAULT,
                hybrid_margin_ns: Nanos(50_000),
                timer_slack_ns: None,
                top_spikes: 10,
                spike_threshold_ns: None,
                spike_capacity: 0,
                timeline_interval_ns: Nanos::SECOND,
                breaktrace_ns: None,
            })],
            dma_latency_us: Some(0),
            memory_lock: Some(MemoryLockPlan::Touched),
            phases: Vec::new(),
        },
        host: Some(HostFacts {
            hostname: "rig".into(),
            rig: None,
            kernel_release: "6.18.0".into(),
            ..HostFacts::default()
        }),
        audit: None,
        conditions: Some(Conditions::default()),
        degraded: false,
        interrupted: false,
        warnings: vec![],
        phases: vec![],
        streams: vec![Stream {
            probe: "timer".into(),
            method: Some("abs".into()),
            phase: "main".into(),
            thread: 0,
            cpu: Some(0),
            policy: Some(SchedSpec::DEFAULT),
            period_ns: Some(Nanos::MILLISECOND),
            samples: 3,
            missed_periods: Some(0),
            overrun_wakes: Some(0),
            early_wakes: Some(0),
            first_sample_ns: Some(Nanos(1_000)),
            warm_up_samples: 0,
            drift_ns: None,
            elapsed_ns: Some(Nanos(3_000_000)),
            timer_slack_ns: Some(50_000),
            page_faults: Some(0),
            stats: Statistics::compute(&sums, &hist),
            histogram: Some(EncodedHistogram::from_histogram(&hist)),
            spikes: Spikes::default(),
            timeline: Timeline::default(),
        }],
        events: vec![],
        thresholds: vec![],
        accepted: vec![],
        verdict: Verdict {
            status: Status::None,
            checks: vec![],
        },
        import: None,
        published: None,
        explain: None,
        progress: None,
        telemetry: None,
    }
}

#[test]
fn saves_lists_and_loads_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/runs.sqlite");
    let mut store = SqliteStore::open(&path).unwrap();
    let a = sample_run(
        "20261120T100000Z-00000a",
        "2026-11-20T10:00:00.000Z",
        50_000,
    );
    let b = sample_run(
        "20261121T100000Z-00000b",
        "2026-11-21T10:00:00.000Z",
        70_000,
    );
    store.save(&a).unwrap();
    store.save(&b).unwrap();
    let list = store.list(&RunFilter::default(), Some(10)).unwrap();
    assert_eq!(
        list.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["20261121T100000Z-00000b", "20261120T100000Z-00000a"]
    );
    assert_eq!(list[0].max_ns, Some(70_000));
    assert_eq!(list[0].verdict, "no-thresholds");
    assert_eq!(store.load("20261120T100000Z-00000a").unwrap(), Some(a));
    assert_eq!(store.load("nope").unwrap(), None);
    // Reopening keeps everything and does not migrate twice.
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store.list(&RunFilter::default(), Some(10)).unwrap().len(),
        2
    );
}

#[test]
fn a_database_from_a_newer_latlab_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    match SqliteStore::open(&path) {
        Err(e @ StoreError::TooNew { found: 99, .. }) => {
            assert!(e.to_string().contains("upgrade latlab"))
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("opened a newer database"),
    }
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let err = SqliteStore::open(&path).err().expect("refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("--store"));
}

#[test]
fn concurrent_writers_do_not_corrupt_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    SqliteStore::open(&path).unwrap();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = SqliteStore::open(&path).unwrap();
                for i in 0..25 {
                    let run = sample_run(
                        &format!("w{w}-{i}"),
                        &format!("2026-11-20T10:{w:02}:{i:02}.000Z"),
                        1_000_000,
                    );
                    store.save(&run).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list(&RunFilter::default(), None).unwrap().len(), 100);
}

#[test]
fn a_new_store_opened_by_several_at_once_opens_for_each() {
    // Creating the file, switching it to WAL and its first recovery return BUSY at once
    // (without SQLite's busy handler) to the others opening it at the same moment.
    let dir = tempfile::tempdir().unwrap();
    for round in 0..40 {
        let path = dir.path().join(format!("runs-{round}.sqlite"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(4));
        let openers: Vec<_> = (0..4)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    SqliteStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for opener in openers {
            if let Err(e) = opener.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
}

#[test]
fn references_resolve_to_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.sqlite")).unwrap();
    for (id, at) in [
        ("20261120T100000Z-aaaaaa", "2026-11-20T10:00:00.000Z"),
        ("20261121T100000Z-bbbbbb", "2026-11-21T10:00:00.000Z"),
        ("20261121T110000Z-cccccc", "2026-11-21T11:00:00.000Z"),
    ] {
        store.save(&sample_run(id, at, 1_000)).unwrap();
    }
    assert_eq!(store.resolve("last").unwrap().id, "20261121T110000Z-cccccc");
    assert_eq!(
        store.resolve("last~1").unwrap().id,
        "20261121T100000Z-bbbbbb"
    );
    assert_eq!(
        store.resolve("20261120").unwrap().id,
        "20261120T100000Z-aaaaaa"
    );
    let ambiguous = store.resolve("20261121").unwrap_err();
    assert!(
        matches!(&ambiguous, StoreError::Ambiguous { candidates, .. } if candidates.len() == 2),
        "{ambiguous}"
    );
    assert!(store
        .resolve("last~3")
        .unwrap_err()
        .to_string()
        .contains("holds 3 run(s)"));
    assert!(store.resolve("last~x").is_err());
    assert!(store
        .resolve("nope")
        .unwrap_err()
        .to_string()
        .contains("latlab runs"));
}

#[test]
fn a_stored_run_is_never_replaced_by_one_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.sqlite")).unwrap();
    let measured = sample_run(
        "20261120T100000Z-00000a",
        "2026-11-20T10:00:00.000Z",
        50_000,
    );
    store.save(&measured).unwrap();
    let mut edited = measured.clone();
    edited.host.as_mut().unwrap().hostname = "edited".into();
    for attempt in [store.save(&edited), store.save_imported(&edited, "00ff")] {
        match attempt {
            Err(StoreError::Duplicate { id, .. }) => assert_eq!(id, "20261120T100000Z-00000a"),
            other => panic!("replaced or failed otherwise: {other:?}"),
        }
    }
    assert_eq!(
        store.load("20261120T100000Z-00000a").unwrap(),
        Some(measured)
    );
}

#[test]
fn an_imported_source_is_recognised_by_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let mut store = SqliteStore::open(&path).unwrap();
    let run = sample_run(
        "20261120T100000Z-00000e",
        "2026-11-20T10:00:00.000Z",
        50_000,
    );
    store.save_imported(&run, "c0ffee").unwrap();
    store
        .save(&sample_run(
            "20261120T110000Z-00000f",
            "2026-11-20T11:00:00.000Z",
            1,
        ))
        .unwrap();
    drop(store);
    let store = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(
        store.imported_from("c0ffee").unwrap(),
        Some("20261120T100000Z-00000e".to_string())
    );
    assert_eq!(store.imported_from("beef").unwrap(), None);
}

#[test]
fn a_version_1_store_is_migrated_with_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let run = sample_run(
        "20261120T100000Z-000001",
        "2026-11-20T10:00:00.000Z",
        50_000,
    );
    // The version 1 schema, as the first latlab wrote it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, started_at TEXT NOT NULL, host TEXT NOT NULL,
             kernel TEXT NOT NULL, scenario TEXT, p99_9_ns INTEGER, max_ns INTEGER,
             verdict TEXT NOT NULL, degraded INTEGER NOT NULL, run_json TEXT NOT NULL);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO runs VALUES ('20261120T100000Z-000001', ?1, 'rig', '6.18.0', NULL, NULL, NULL, 'none', 0, ?2)",
        rusqlite::params![run.started_at, serde_json::to_string(&run).unwrap()],
    )
    .unwrap();
    drop(conn);
    // Read as it is, without migrating; then migrated by a writer.
    let reader = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(
        reader.load("20261120T100000Z-000001").unwrap(),
        Some(run.clone())
    );
    drop(reader);
    let mut store = SqliteStore::open(&path).unwrap();
    store
        .save_imported(
            &sample_run("20261121T100000Z-000002", "2026-11-21T10:00:00.000Z", 1),
            "aa",
        )
        .unwrap();
    assert_eq!(
        store.load("20261120T100000Z-000001").unwrap(),
        Some(run.clone())
    );
    // Its figures per series, filled in from the Run by the migration.
    let figures = store.series_figures(&store.summaries().unwrap()).unwrap();
    assert_eq!(figures.len(), 2);
    assert_eq!(
        figures["20261120T100000Z-000001"],
        SeriesFigures::of_run(&run)
    );
    assert_eq!(
        store.imported_from("aa").unwrap(),
        Some("20261121T100000Z-000002".to_string())
    );
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, latlab_store::SCHEMA_VERSION);
}

#[test]
fn reading_needs_no_write_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none/runs.sqlite");
    let store = SqliteStore::open_read_only(&missing).unwrap();
    assert_eq!(store.list(&RunFilter::default(), Some(10)).unwrap(), vec![]);
    assert!(
        !dir.path().join("none").exists(),
        "a reader created the store"
    );
}

/// A run of `sample_run` with the user's labels.
fn labelled(id: &str, name: Option<&str>, tags: &[(&str, &str)]) -> Run {
    let mut run = sample_run(id, "2026-11-20T10:00:00.000Z", 1_000);
    run.name = name.map(str::to_string);
    run.tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    run
}

/// Makes the store at `path` (of this version) one of version 5, whose names were not
/// unique: the index and the column of version 6 go, and the column of version 7.
fn back_to_version_5(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "DROP INDEX runs_name_unique;
         ALTER TABLE runs DROP COLUMN name_shared;
         ALTER TABLE runs DROP COLUMN series_json;
         PRAGMA user_version = 5;",
    )
    .unwrap();
}

#[test]
fn a_name_is_one_runs_and_the_store_refuses_it_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let mut store = SqliteStore::open(&path).unwrap();
    store
        .save(&labelled("20261120T100000Z-aaaaaa", Some("baseline"), &[]))
        .unwrap();
    match store.save(&labelled("20261121T100000Z-bbbbbb", Some("baseline"), &[])) {
        Err(e @ StoreError::NameTaken { .. }) => assert_eq!(
            e.to_string(),
            format!(
                "the run store at {} already has a run named baseline \
                 (20261120T100000Z-aaaaaa); choose another name, or remove that run first \
                 (latlab rm baseline)",
                path.display()
            )
        ),
        other => panic!("not refused: {other:?}"),
    }
    // Unnamed runs are many.
    for id in ["20261121T100000Z-cccccc", "20261121T100000Z-dddddd"] {
        store.save(&labelled(id, None, &[])).unwrap();
    }
    // Removed, the name is free again.
    store
        .remove(&["20261120T100000Z-aaaaaa".to_string()])
        .unwrap();
    store
        .save(&labelled("20261121T100000Z-bbbbbb", Some("baseline"), &[]))
        .unwrap();
}

#[test]
fn names_and_id_suffixes_are_references_and_ambiguity_lists_the_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let mut store = SqliteStore::open(&path).unwrap();
    store
        .save(&labelled("20261120T100000Z-aaaaaa", Some("baseline"), &[]))
        .unwrap();
    store
        .save(&labelled("20261121T100000Z-bbbbbb", Some("twice"), &[]))
        .unwrap();
    // A store of version 5 could hold one name twice; it still opens, migrated, with
    // both runs as they were.
    back_to_version_5(&path);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let twice = labelled("20261122T100000Z-cccccc", Some("twice"), &[]);
    conn.execute(
        "INSERT INTO runs (id, started_at, host, kernel, verdict, degraded, run_json,
             added_at, name)
         VALUES (?1, ?2, '', '', 'none', 0, ?3, '2099-01-01T00:00:00.000Z', 'twice')",
        rusqlite::params![twice.id, twice.started_at, twice.to_json_pretty()],
    )
    .unwrap();
    drop(conn);
    let mut store = SqliteStore::open(&path).unwrap();
    // The one added last keeps the name's place: a third is refused, naming it.
    match store.save(&labelled("20261123T100000Z-dddddd", Some("twice"), &[])) {
        Err(StoreError::NameTaken { holder, .. }) => {
            assert_eq!(holder.as_deref(), Some("20261122T100000Z-cccccc"))
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(
        store.resolve("baseline").unwrap().id,
        "20261120T100000Z-aaaaaa"
    );
    assert_eq!(
        store.resolve("bbbbbb").unwrap().id,
        "20261121T100000Z-bbbbbb"
    );
    match store.resolve("twice") {
        Err(e @ StoreError::Ambiguous { .. }) => {
            let text = e.to_string();
            assert!(text.contains("could mean 2 runs"), "{text}");
            assert!(
                text.contains("20261121T100000Z-bbbbbb (named twice")
                    && text.contains("20261122T100000Z-cccccc (named twice"),
                "{text}"
            );
        }
        other => panic!("not ambiguous: {other:?}"),
    }
    // A full id is that run, whatever else it is a prefix or name of.
    assert_eq!(
        store
            .resolve("20261122T100000Z-cccccc")
            .unwrap()
            .name
            .as_deref(),
        Some("twice")
    );
}

#[test]
fn runs_are_listed_by_when_they_were_added_and_removed_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.sqlite")).unwrap();
    // Added in this order; the second has no start time (an import of a cyclictest -h
    // file), the third was measured long before the others.
    let mut first = sample_run("20261121T100000Z-000001", "2026-11-21T10:00:00.000Z", 1);
    first.tags.insert("env".into(), "lab".into());
    let mut no_start = sample_run("20261122T100000Z-000002", "2026-11-22T10:00:00.000Z", 1);
    no_start.started_at = None;
    no_start.ended_at = None;
    let old = sample_run("20201122T100000Z-000003", "2020-11-22T10:00:00.000Z", 1);
    for run in [&first, &no_start, &old] {
        store.save(run).unwrap();
    }
    let all = store.list(&RunFilter::default(), None).unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20201122T100000Z-000003",
            "20261122T100000Z-000002",
            "20261121T100000Z-000001"
        ]
    );
    assert!(all.iter().all(|r| r.added_at.is_some()));
    assert_eq!(all[1].started_at, None, "unknown, not a stand-in");
    assert_eq!(store.resolve("last").unwrap(), old);
    assert_eq!(store.resolve("last~1").unwrap(), no_start);
    // What the listing shows of each run.
    let listed = &all[2];
    assert_eq!(
        listed.probes.as_deref(),
        Some(&["timer abs".to_string()][..])
    );
    assert_eq!(listed.periods_ns.as_deref(), Some(&[1_000_000][..]));
    assert_eq!(listed.cpus.as_deref(), Some(&[0][..]));
    assert_eq!(listed.loads.as_deref(), Some(&[][..]), "none ran, known");
    assert_eq!(listed.duration_ns, None, "no phase recorded its span");
    let tagged = RunFilter {
        tags: vec![("env".into(), Some("lab".into()))],
        ..RunFilter::default()
    };
    let found = store.list(&tagged, None).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, first.id);
    let none_yet = RunFilter {
        added_before: Some(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)),
        ..RunFilter::default()
    };
    assert!(store.list(&none_yet, None).unwrap().is_empty());
    assert_eq!(
        store
            .remove(&[first.id.clone(), "20261121T100000Z-ffffff".into()])
            .unwrap(),
        1
    );
    assert_eq!(store.load(&first.id).unwrap(), None);
    assert_eq!(store.list(&RunFilter::default(), None).unwrap().len(), 2);
}

#[test]
fn a_version_2_store_is_read_in_added_order_and_migrated_with_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let measured = labelled("20261120T100000Z-000001", Some("kept"), &[("k", "v")]);
    let mut imported = sample_run("20261119T100000Z-000002", "2026-11-19T10:00:00.000Z", 1);
    // Imported after the measured run, from a file without a start time.
    imported.started_at = None;
    imported.ended_at = None;
    imported.import = Some(ImportRecord {
        format: "cyclictest-hist".into(),
        file: "h.txt".into(),
        imported_at: "2026-11-21T08:00:00.000Z".into(),
        lacks: vec!["no start or end time".into()],
    });
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, started_at TEXT NOT NULL, host TEXT NOT NULL,
             kernel TEXT NOT NULL, scenario TEXT, p99_9_ns INTEGER, max_ns INTEGER,
             verdict TEXT NOT NULL, degraded INTEGER NOT NULL, run_json TEXT NOT NULL,
             source_sha256 TEXT, p99_9_bound INTEGER NOT NULL DEFAULT 0);
         PRAGMA user_version = 2;",
    )
    .unwrap();
    for run in [&measured, &imported] {
        conn.execute(
            "INSERT INTO runs VALUES (?1, ?2, 'rig', '6.18.0', NULL, NULL, NULL, 'none', 0, ?3, NULL, 0)",
            rusqlite::params![
                run.id,
                run.started_at.clone().unwrap_or_default(),
                serde_json::to_string(run).unwrap()
            ],
        )
        .unwrap();
    }
    drop(conn);
    let expect = |store: &SqliteStore| {
        let all = store.list(&RunFilter::default(), None).unwrap();
        let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [imported.id.as_str(), measured.id.as_str()]);
        assert_eq!(all[0].added_at.as_deref(), Some("2026-11-21T08:00:00.000Z"));
        assert_eq!(all[0].loads, None, "an import does not say");
        assert_eq!(all[1].added_at, measured.ended_at);
        assert_eq!(all[1].name.as_deref(), Some("kept"));
        assert_eq!(store.resolve("kept").unwrap(), measured);
    };
    expect(&SqliteStore::open_read_only(&path).unwrap());
    expect(&SqliteStore::open(&path).unwrap());
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, latlab_store::SCHEMA_VERSION);
}

fn running(run: &mut Run, pid: u32, boot: &str, checkpoints: u64) {
    run.progress = Some(latlab_model::progress::Progress {
        state: latlab_model::progress::RunState::Running,
        pid,
        pid_start_ticks: None,
        boot_id: Some(boot.to_string()),
        rig: None,
        checkpoints,
        checkpoint_at: Some("2026-11-23T10:00:10Z".to_string()),
        checkpoint_every_ns: 10_000_000_000,
        death: None,
    });
}

#[test]
fn a_running_run_is_extended_until_it_ends_and_then_never_replaced() {
    use latlab_model::progress::RunState;
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.sqlite")).unwrap();
    let mut run = sample_run("20261123T100000Z-aaaaaa", "2026-11-23T10:00:00Z", 3_000);
    running(&mut run, 4242, "boot-a", 0);
    store.save(&run).unwrap();
    let listed = store.summaries().unwrap();
    assert_eq!(
        listed[0].progress.as_ref().unwrap().state,
        RunState::Running
    );

    let mut checkpoint = sample_run("20261123T100000Z-aaaaaa", "2026-11-23T10:00:00Z", 9_000);
    running(&mut checkpoint, 4242, "boot-a", 1);
    store.update(&checkpoint).unwrap();
    let loaded = store.load(&run.id).unwrap().unwrap();
    assert_eq!(loaded.progress.as_ref().unwrap().checkpoints, 1);
    assert_eq!(store.summaries().unwrap()[0].max_ns, Some(9_000));

    let mut ended = checkpoint.clone();
    ended.progress = None;
    store.update(&ended).unwrap();
    assert_eq!(store.summaries().unwrap()[0].progress, None);
    assert!(matches!(
        store.update(&checkpoint),
        Err(StoreError::NotRunning { .. })
    ));
    let unknown = sample_run("20261123T110000Z-bbbbbb", "2026-11-23T11:00:00Z", 1);
    assert!(matches!(
        store.update(&unknown),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn runs_whose_process_or_boot_is_gone_are_found_dead_once() {
    use latlab_model::progress::{DeathCause, RunState};
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("runs.sqlite")).unwrap();
    let ids = [
        "20261123T100000Z-aaaaaa",
        "20261123T100001Z-bbbbbb",
        "20261123T100002Z-cccccc",
    ];
    for (i, (id, boot)) in ids.iter().zip(["old", "now", "now"]).enumerate() {
        let mut run = sample_run(id, "2026-11-23T10:00:00Z", 3_000);
        running(&mut run, 100 + i as u32, boot, 2);
        store.save(&run).unwrap();
    }
    // Process 101 is gone, 102 lives.
    let alive = |p: &latlab_model::progress::Progress| p.pid != 101;
    let mut found = store.recover(Some("now"), &alive).unwrap();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        found,
        vec![
            (ids[0].to_string(), DeathCause::MachineRebooted),
            (ids[1].to_string(), DeathCause::ProcessKilled),
        ]
    );
    let died = store.load(ids[1]).unwrap().unwrap();
    let progress = died.progress.unwrap();
    assert_eq!(progress.state, RunState::Died);
    assert_eq!(progress.checkpoints, 2, "kept up to its last checkpoint");
    assert_eq!(died.streams.len(), 1);
    let still = store.load(ids[2]).unwrap().unwrap();
    assert_eq!(still.progress.unwrap().state, RunState::Running);
    assert!(store.recover(Some("now"), &alive).unwrap().is_empty());
}

#[test]
fn latlabs_opening_a_new_store_at_once_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                barrier.wait();
                SqliteStore::open(&path).expect("each open migrates or finds it migrated");
            });
        }
    });
    let store = SqliteStore::open_read_only(&path).unwrap();
    assert!(store.summaries().unwrap().is_empty());
}

/// The farm view reads each run's figures per series from the index, as they were at
/// its last write (a checkpoint, its end), without the Run.
#[test]
fn each_runs_figures_per_series_are_kept_beside_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let mut store = SqliteStore::open(&path).unwrap();
    let mut running = sample_run("20261120T100000Z-000001", "2026-11-20T10:00:00.000Z", 5);
    running.progress = Some(latlab_model::fixture::progress(
        latlab_model::progress::RunState::Running,
    ));
    store.save(&running).unwrap();
    let other = sample_run("20261121T100000Z-000002", "2026-11-21T10:00:00.000Z", 7);
    store.save(&other).unwrap();
    let mut ended = running.clone();
    ended.progress = None;
    ended.streams[0].samples += 1_000;
    store.update(&ended).unwrap();
    let reader = SqliteStore::open_read_only(&path).unwrap();
    let listed = reader.summaries().unwrap();
    let figures = reader.series_figures(&listed).unwrap();
    assert_eq!(figures[&ended.id], SeriesFigures::of_run(&ended));
    assert_eq!(figures[&other.id], SeriesFigures::of_run(&other));
    // Only the runs asked for.
    let one = reader.series_figures(&listed[..1]).unwrap();
    assert_eq!(one.keys().collect::<Vec<_>>(), [&listed[0].id]);
}
