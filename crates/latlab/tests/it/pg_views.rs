//! The store as an SQL interface (docs/sql.md) on a real PostgreSQL: the views' rows
//! are the stored Runs' figures — typed, NULL where a Run's source lacked a figure, a
//! bound in a column of its own — every query of docs/sql.md runs on them, the Grafana
//! dashboard's panels answer with them (`pg_dashboard`), and a store of schema 2 gets
//! the views of the runs it holds.

use crate::common::{fixture, latlab, text};
use crate::docs::{fenced_blocks, top};
use crate::pg::PgCluster;
use latlab_model::run::{Percentile, Run, Stream};
use latlab_store::{PostgresStore, RunStore};
use std::path::{Path, PathBuf};

/// The percentiles the views have a value and a bound column for: the Run's key, the
/// columns' prefix.
const PERCENTILES: [(&str, &str); 6] = [
    ("50", "p50"),
    ("90", "p90"),
    ("99", "p99"),
    ("99.9", "p99_9"),
    ("99.99", "p99_99"),
    ("99.999", "p99_999"),
];

/// A row as psql prints it: each value, `None` for NULL.
pub(crate) type Row = Vec<Option<String>>;

/// How the tests show a time: the Run's own shape.
const UTC_MS: &str = r#"'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'"#;

/// The role the dashboard and the documented queries run as: it may read the views
/// and nothing else (docs/sql.md says how to make it).
pub(crate) const READER: &str = "grafana";

/// A store on `pg` holding two real runs of the rigs `rig-a` and `rig-b` (samples above
/// 20 µs kept) and the imports of [`import_unknowns_and_bounds`]. Returns the Runs as
/// stored.
fn farm(pg: &PgCluster, dir: &Path) -> Vec<Run> {
    let url = pg.url();
    let outbox = dir.join("outbox.sqlite");
    {
        let _slot = crate::common::shared();
        for (rig, period) in [("rig-a", "1ms"), ("rig-b", "500us")] {
            let out = latlab()
                .env("LATLAB_RIG", rig)
                .env("LATLAB_OUTBOX", &outbox)
                .args(["run", "-c", "0", "-d", "300ms", "-p", period, "-q"])
                .args(["--no-audit", "--spike", "20us", "--store", &url])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
    }
    import_unknowns_and_bounds(&url, dir);
    let store = PostgresStore::open_read_only(&url).unwrap();
    let runs: Vec<Run> = store
        .summaries()
        .unwrap()
        .iter()
        .map(|s| store.load(&s.id).unwrap().unwrap())
        .collect();
    assert_eq!(runs.len(), 5);
    runs
}

/// Imports into the store at `url` (with its outbox and files in `dir`) two cyclictest
/// files — one without a host, a start or missed periods, whose percentiles are
/// bounds, one without percentiles — and a Run of the rig `rig-c` whose p99.9 is known
/// only as a lower bound.
fn import_unknowns_and_bounds(url: &str, dir: &Path) {
    for file in [
        fixture("cyclictest-overflow-ns.hist.txt"),
        fixture("cyclictest-nohist.json"),
        bound_run(dir),
    ] {
        let out = latlab()
            .env("LATLAB_OUTBOX", dir.join("outbox.sqlite"))
            .arg("import")
            .arg(&file)
            .args(["--store", url])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

/// A Run file of the rig `rig-c`: the documented example run, its second stream's
/// p99.9 known only as at least what it was.
fn bound_run(dir: &Path) -> PathBuf {
    let example = std::fs::read_to_string(top().join("docs/example-run.json")).unwrap();
    let mut run = Run::from_json(&example).unwrap();
    run.id = "20261120T000000Z-c00001".into();
    run.started_at = Some("2026-11-20T00:00:00.000Z".into());
    let host = run.host.as_mut().unwrap();
    host.hostname = "bench-c".into();
    host.rig = Some("rig-c".into());
    let stats = &mut run.streams[1].stats;
    let at_least_ns = stats.percentiles_ns["99.9"].value();
    stats
        .percentiles_ns
        .insert("99.9".into(), Percentile::AtLeast { at_least_ns });
    let file = dir.join("bound.json");
    std::fs::write(&file, run.to_json_pretty()).unwrap();
    file
}

/// A number of nanoseconds as psql prints it.
pub(crate) fn ns(value: Option<i64>) -> Option<String> {
    value.map(|n| n.to_string())
}

pub(crate) fn count(value: Option<u64>) -> Option<String> {
    value.map(|n| n.to_string())
}

/// A percentile's value and bound columns: the value or the bound, and `at_least`
/// for a bound; both NULL when the Run has no such percentile.
pub(crate) fn percentile_columns(p: Option<Percentile>) -> [Option<String>; 2] {
    match p {
        None => [None, None],
        Some(Percentile::Exact(v)) => [ns(Some(v.0)), None],
        Some(Percentile::AtLeast { at_least_ns }) => {
            [ns(Some(at_least_ns.0)), Some("at_least".into())]
        }
    }
}

/// The rig a view names: `host.rig`, else the host name; NULL when neither is known.
pub(crate) fn rig_of(run: &Run) -> Option<String> {
    let host = run.host.as_ref()?;
    host.rig
        .clone()
        .or_else(|| Some(host.hostname.clone()).filter(|h| !h.is_empty()))
}

/// Samples above a stream's spike level: those kept and those dropped; unknown
/// without a level.
pub(crate) fn spikes_of(s: &Stream) -> Option<u64> {
    s.spikes
        .threshold_ns
        .map(|_| s.spikes.above_threshold.len() as u64 + s.spikes.above_threshold_dropped)
}

/// A run's verdict as the store lists it: its outcome's word (`no-thresholds`).
pub(crate) fn verdict_of(run: &Run) -> String {
    run.exit_status()
        .word()
        .to_ascii_lowercase()
        .replace(' ', "-")
}

/// A run's percentile `key`: its worst stream's, over the streams that have it, and a
/// bound when any of theirs is one.
pub(crate) fn worst_percentile(run: &Run, key: &str) -> Option<Percentile> {
    let all: Vec<Percentile> = run
        .streams
        .iter()
        .filter_map(|s| s.stats.percentiles_ns.get(key).copied())
        .collect();
    let worst = all.iter().map(|p| p.value()).max()?;
    Some(match all.iter().any(|p| p.is_bound()) {
        true => Percentile::AtLeast { at_least_ns: worst },
        false => Percentile::Exact(worst),
    })
}

/// A run's spike level and the samples above it, when every stream kept them above
/// one level.
fn spikes_of_run(run: &Run) -> [Option<String>; 2] {
    let spikes: Option<u64> = run.streams.iter().map(spikes_of).sum();
    let mut levels: Vec<i64> = run
        .streams
        .iter()
        .filter_map(|s| s.spikes.threshold_ns.map(|t| t.0))
        .collect();
    levels.dedup();
    match (spikes, levels.as_slice()) {
        (Some(n), [level]) => [ns(Some(*level)), count(Some(n))],
        _ => [None, None],
    }
}

/// The runs in the order of their ids, as the checks' queries order them.
fn by_id(runs: &[Run]) -> Vec<&Run> {
    let mut sorted: Vec<&Run> = runs.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    sorted
}

/// The percentile and bound columns of a view, in [`PERCENTILES`]' order.
fn percentile_column_list() -> String {
    PERCENTILES
        .iter()
        .map(|(_, c)| format!("{c}_ns, {c}_bound"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every stream of every Run is a row of `latlab_streams`, with the Run's figures.
fn check_streams(pg: &PgCluster, runs: &[Run]) {
    let rows = pg.rows(&format!(
        "SELECT run_id, stream, to_char(started_at AT TIME ZONE 'UTC', {UTC_MS}), rig, host,
                probe, cpu, period_ns, samples, missed_periods, elapsed_ns, min_ns, max_ns,
                {}, spike_level_ns, spikes
           FROM latlab_streams ORDER BY run_id, stream",
        percentile_column_list()
    ));
    let mut expected: Vec<Row> = Vec::new();
    for run in by_id(runs) {
        for (i, s) in run.streams.iter().enumerate() {
            let mut row = vec![
                Some(run.id.clone()),
                Some(i.to_string()),
                run.started_at.clone(),
                rig_of(run),
                run.host.as_ref().map(|h| h.hostname.clone()),
                Some(s.probe.clone()),
                s.cpu.map(|c| c.to_string()),
                ns(s.period_ns.map(|p| p.0)),
                count(Some(s.samples)),
                count(s.missed_periods),
                ns(s.elapsed_ns.map(|e| e.0)),
                ns(s.stats.min_ns.map(|m| m.0)),
                ns(s.stats.max_ns.map(|m| m.0)),
            ];
            for (key, _) in PERCENTILES {
                row.extend(percentile_columns(s.stats.percentiles_ns.get(key).copied()));
            }
            row.push(ns(s.spikes.threshold_ns.map(|t| t.0)));
            row.push(count(spikes_of(s)));
            expected.push(row);
        }
    }
    assert_eq!(rows, expected);
    // The store exercises what the views promise: unknowns beside values, and bounds.
    let both: Vec<String> = ["missed_periods", "cpu", "started_at", "p99_ns", "spikes"]
        .iter()
        .map(|c| format!("count(*) FILTER (WHERE {c} IS NULL) > 0 AND count({c}) > 0"))
        .collect();
    assert_eq!(
        pg.rows(&format!(
            "SELECT {} AND count(*) FILTER (WHERE p99_9_bound = 'at_least') > 0
               FROM latlab_streams",
            both.join(" AND ")
        )),
        [[Some("t".to_string())]]
    );
}

/// Every Run is a row of `latlab_runs`: its worst stream's percentiles (a bound when
/// any stream's is one), its counts added up where every stream has them.
fn check_runs(pg: &PgCluster, runs: &[Run]) {
    let rows = pg.rows(&format!(
        "SELECT id, to_char(started_at AT TIME ZONE 'UTC', {UTC_MS}),
                to_char(ended_at AT TIME ZONE 'UTC', {UTC_MS}), rig, host, kernel, origin,
                state, verdict, stream_count, samples, missed_periods, min_ns, {}, max_ns,
                spike_level_ns, spikes
           FROM latlab_runs ORDER BY id",
        percentile_column_list()
    ));
    let expected: Vec<Row> = by_id(runs)
        .into_iter()
        .map(|run| {
            let host = run.host.as_ref();
            let mut row = vec![
                Some(run.id.clone()),
                run.started_at.clone(),
                run.ended_at.clone(),
                rig_of(run),
                host.map(|h| h.hostname.clone()),
                host.map(|h| h.kernel_release.clone()),
                Some(match &run.import {
                    Some(import) => format!("import:{}", import.format),
                    None => "latlab".into(),
                }),
                Some("ended".into()),
                Some(verdict_of(run)),
                count(Some(run.streams.len() as u64)),
                count(run.total_samples()),
                count(run.total_missed_periods()),
                ns(run
                    .streams
                    .iter()
                    .filter_map(|s| s.stats.min_ns)
                    .min()
                    .map(|m| m.0)),
            ];
            for (key, _) in PERCENTILES {
                row.extend(percentile_columns(worst_percentile(run, key)));
            }
            row.push(ns(run
                .streams
                .iter()
                .filter_map(|s| s.stats.max_ns)
                .max()
                .map(|m| m.0)));
            row.extend(spikes_of_run(run));
            row
        })
        .collect();
    assert_eq!(rows, expected);
    // The listing's own p99.9 (computed by latlab as it stores a run) agrees.
    assert_eq!(
        pg.rows(
            "SELECT count(*) FROM latlab_runs v JOIN runs r USING (id)
              WHERE v.p99_9_ns IS DISTINCT FROM r.p99_9_ns
                 OR (v.p99_9_bound IS NOT NULL) <> r.p99_9_bound"
        ),
        [[Some("0".to_string())]]
    );
}

/// The views' columns have the types docs/sql.md promises, and the plain names read
/// what version 1 reads.
fn check_types(pg: &PgCluster) {
    for view in ["latlab_runs_v1", "latlab_streams_v1"] {
        let columns = pg.rows(&format!(
            "SELECT column_name, data_type FROM information_schema.columns
              WHERE table_name = '{view}' ORDER BY ordinal_position"
        ));
        assert!(columns.len() > 30, "{view}: {columns:?}");
        for column in columns {
            let (name, kind) = (column[0].clone().unwrap(), column[1].clone().unwrap());
            let wanted = if name == "mean_ns" || name == "stddev_ns" {
                "double precision"
            } else if name.ends_with("_ns") || name == "samples" || name == "spikes" {
                "bigint"
            } else if name.ends_with("_at") {
                "timestamp with time zone"
            } else if name.ends_with("_bound") {
                "text"
            } else {
                continue;
            };
            assert_eq!(kind, wanted, "{view}.{name}");
        }
    }
    for (plain, v1) in [
        ("latlab_runs", "latlab_runs_v1"),
        ("latlab_streams", "latlab_streams_v1"),
    ] {
        let differ = pg.rows(&format!(
            "SELECT count(*) FROM ((TABLE {plain} EXCEPT ALL TABLE {v1})
                                  UNION ALL (TABLE {v1} EXCEPT ALL TABLE {plain})) d"
        ));
        assert_eq!(differ, [[Some("0".to_string())]], "{plain}");
    }
}

/// Runs every ```sql block of docs/sql.md: the role set-up (CREATE, GRANT) as the
/// superuser, every query as the role it makes, which must answer with rows.
fn check_documented_queries(pg: &PgCluster) {
    let page = top().join("docs/sql.md");
    let blocks = fenced_blocks(&page, "sql");
    assert!(
        blocks.len() >= 6,
        "{} has {} queries",
        page.display(),
        blocks.len()
    );
    for (line, lines) in blocks {
        let sql = lines.join("\n");
        let set_up = ["CREATE", "GRANT"]
            .iter()
            .any(|word| sql.trim_start().starts_with(word));
        let role = if set_up { "postgres" } else { READER };
        let rows = pg
            .rows_as(role, &sql)
            .unwrap_or_else(|e| panic!("docs/sql.md:{line}: {e}\n{sql}"));
        assert!(
            set_up || !rows.is_empty(),
            "docs/sql.md:{line}: no rows\n{sql}"
        );
    }
    // The role reads the views, not the table behind them.
    let refused = pg.rows_as(READER, "SELECT count(*) FROM runs").unwrap_err();
    assert!(refused.contains("permission denied"), "{refused}");
}

#[test]
fn the_views_the_documented_queries_and_the_dashboard_answer_from_real_runs() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let runs = farm(&pg, dir.path());
    check_types(&pg);
    check_streams(&pg, &runs);
    check_runs(&pg, &runs);
    // The documentation's set-up makes the role the dashboard reads as.
    check_documented_queries(&pg);
    crate::pg_dashboard::check_dashboard(&pg, &runs);
}

/// A run another program wrote into the store, not as latlab writes one: a start that
/// PostgreSQL would read as the present, numbers of the wrong kind, a stream that is
/// no object, warnings that are no list.
const ODD_RUN: &str = r#"{"schema": "latlab.run/2", "id": "20261101T000000Z-0dd000",
    "started_at": "now", "interrupted": "no", "warnings": "none",
    "host": {"hostname": "odd-host", "rig": 7, "kernel_release": "6.1"},
    "streams": [
        {"probe": "timer", "samples": 1.5, "cpu": "zero", "elapsed_ns": 1000000000,
         "stats": {"min_ns": -5, "percentiles_ns": {"99": 7000, "99.9": {"at_least_ns": "big"}}},
         "spikes": {"threshold_ns": 1000, "above_threshold": {}, "above_threshold_dropped": 0}},
        5]}"#;

#[test]
fn a_store_of_schema_2_gets_the_views_of_the_runs_it_holds() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let url = pg.url();
    import_unknowns_and_bounds(&url, dir.path());
    // More runs than one batch of the migration takes, and one latlab never wrote.
    pg.sql(
        "INSERT INTO runs (id, started_at, host, kernel, scenario, p99_9_ns, p99_9_bound,
                           max_ns, verdict, degraded, run)
         SELECT id || '-' || g, started_at, host, kernel, scenario, p99_9_ns, p99_9_bound,
                max_ns, verdict, degraded, run
           FROM runs, generate_series(1, 80) AS g",
    );
    pg.sql(&format!(
        "INSERT INTO runs (id, started_at, host, kernel, p99_9_bound, verdict, degraded, run)
         VALUES ('20261101T000000Z-0dd000', 'now', 'odd-host', '6.1', false, 'pass', false,
                 $odd${ODD_RUN}$odd$)"
    ));
    let streams = "SELECT * FROM latlab_streams ORDER BY run_id, stream";
    let runs = "SELECT * FROM latlab_runs ORDER BY id";
    let before = (pg.rows(streams), pg.rows(runs));
    assert_eq!(before.1.len(), 3 * 81 + 1);

    // Back to schema 2, as a latlab before the views left it.
    pg.sql(
        "DROP VIEW latlab_runs, latlab_streams, latlab_runs_v1, latlab_streams_v1;
         DROP TRIGGER runs_facts ON runs;
         DROP FUNCTION latlab_runs_facts, latlab_facts, latlab_stream_facts,
                       latlab_percentile_ns, latlab_percentile_bound, latlab_time,
                       latlab_string, latlab_float, latlab_integer;
         ALTER TABLE runs DROP COLUMN facts;
         UPDATE latlab_schema SET version = 2",
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_proc WHERE proname LIKE 'latlab%'"),
        "0"
    );
    PostgresStore::open(&url).unwrap();
    assert_eq!(
        pg.sql("SELECT version FROM latlab_schema"),
        latlab_store::PG_SCHEMA_VERSION.to_string()
    );
    assert_eq!((pg.rows(streams), pg.rows(runs)), before);

    // What does not check out is NULL, and the rest is read.
    let some = |v: &str| Some(v.to_string());
    assert_eq!(
        pg.rows(
            "SELECT started_at, rig, stream_count, samples, min_ns, p99_ns, p99_9_ns,
                    p99_9_bound, spikes, warnings, interrupted
               FROM latlab_runs WHERE id = '20261101T000000Z-0dd000'"
        ),
        [[
            None,
            some("odd-host"),
            some("2"),
            None,
            some("-5"),
            some("7000"),
            None,
            None,
            None,
            some("{}"),
            None
        ]]
    );
    assert_eq!(
        pg.rows(
            "SELECT stream, probe, cpu, samples, elapsed_ns, spike_level_ns, spikes
               FROM latlab_streams WHERE run_id = '20261101T000000Z-0dd000' ORDER BY stream"
        ),
        [
            vec![
                some("0"),
                some("timer"),
                None,
                None,
                some("1000000000"),
                some("1000"),
                None
            ],
            vec![some("1"), None, None, None, None, None, None],
        ]
    );
}
