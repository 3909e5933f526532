//! Published figures as reference runs: a short period sweep measured here, compared
//! with Rapid Reaction Linux's Table 3 (and the tick model), period by period, and
//! reported beside it; the reference is marked as published and what it lacks is
//! unknown.

use crate::common::{shared, with_store};
use latlab_model::published::{reference_run, NOT_MEASURED_HERE};
use latlab_model::run::Run;
use serde_json::Value;

/// Three phases at periods of Table 3, few periods each (well under a second).
const SWEEP: &str = r#"
name = "sweep-short"
description = "three periods of Rapid Reaction Linux's Table 3, a few periods each"

[timer]
method = "rel"

[[phase]]
name = "3.25ms"
period = "3.25ms"
periods = 30

[[phase]]
name = "4ms"
period = "4ms"
periods = 30

[[phase]]
name = "13.35ms"
period = "13.35ms"
periods = 10
"#;

#[test]
fn a_sweep_is_compared_with_table_3_period_by_period() {
    let dir = tempfile::tempdir().unwrap();
    let (store, scenario) = (
        dir.path().join("runs.sqlite"),
        dir.path().join("sweep.toml"),
    );
    std::fs::write(&scenario, SWEEP).unwrap();
    {
        let _measuring = shared();
        let (code, _, stderr) = with_store(&store, &["run", scenario.to_str().unwrap(), "-q"]);
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, json, stderr) =
        with_store(&store, &["compare", "last", "ref:rr-table3", "--json", "-"]);
    assert_eq!(code, 0, "published figures are not judged: {stderr}");
    let compared: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(compared["base"]["published"], false);
    let against = &compared["comparisons"][0];
    assert_eq!(against["new"]["id"], "ref:rr-table3");
    assert_eq!(against["new"]["published"], true);
    assert_eq!(against["verdicts"].as_array().unwrap().len(), 0);
    let periods = &compared["periods"];
    assert_eq!(periods["published"], serde_json::json!([false, true]));

    let (_, shown, _) = with_store(&store, &["show", "last", "--json", "-"]);
    let measured = Run::from_json(&shown).unwrap();
    let table3 = reference_run("rr-table3").unwrap();
    let rows = periods["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        8,
        "Table 3's eight periods, the sweep's among them"
    );
    let mut both = 0;
    for row in rows {
        let period = row["period_ns"].as_i64().unwrap();
        let at = |run| streams_at(run, period);
        let (mine, published) = (at(&measured), at(&table3));
        // The reference's figures are Table 3's as printed, converted to ns.
        let reference = &row["runs"][1];
        assert_eq!(reference["min_ns"], published[0].stats.min_ns.unwrap().0);
        assert_eq!(reference["max_ns"], published[0].stats.max_ns.unwrap().0);
        assert_eq!(reference["samples"], 1000);
        // The run's: its own phase at that period, or none.
        match mine.as_slice() {
            [] => assert!(row["runs"][0].is_null()),
            streams => {
                let samples: u64 = streams.iter().map(|s| s.samples).sum();
                let min = streams.iter().filter_map(|s| s.stats.min_ns).min().unwrap();
                assert_eq!(row["runs"][0]["samples"], samples);
                assert_eq!(row["runs"][0]["min_ns"], min.0);
                assert_eq!(row["runs"][0]["phase"], streams[0].phase.as_str());
                both += 1;
            }
        }
    }
    assert_eq!(both, 3);
    // The tick model's column: its rate from this kernel's configuration when readable.
    let hz = measured.host.as_ref().and_then(|h| h.hz);
    assert_eq!(periods["tick_model"]["hz"].as_u64(), hz.map(u64::from));

    // Given HZ=100, the model is Table 4's 2.4 kernel: 3.25 ms wakes 16.75 ms late.
    let (code, json, _) = with_store(
        &store,
        &[
            "compare",
            "last",
            "ref:rr-table4",
            "--hz",
            "100",
            "--json",
            "-",
        ],
    );
    assert_eq!(code, 0);
    let compared: Value = serde_json::from_str(&json).unwrap();
    let row = &compared["periods"]["rows"][1];
    assert_eq!(row["period_ns"], 3_250_000);
    assert_eq!(row["expected_without_hrtimers_ns"], 16_750_000);
    assert_eq!(row["runs"][1]["mean_ns"], 16_700_000.0);

    // The text shows the same, and the report puts the reference next to the run.
    let (code, _, stderr) = with_store(&store, &["compare", "last", "ref:rr-table3"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, report, stderr) = with_store(
        &store,
        &["report", "last", "ref:rr-table3", "--format", "markdown"],
    );
    assert_eq!(code, 0, "{stderr}");
    let title = &table3.published.as_ref().unwrap().title;
    assert!(report.contains(&format!("{NOT_MEASURED_HERE}: {title}")));
}

/// The streams of `run` at `period`.
fn streams_at(run: &Run, period: i64) -> Vec<&latlab_model::run::Stream> {
    run.streams
        .iter()
        .filter(|s| s.period_ns.map(|p| p.0) == Some(period))
        .collect()
}

#[test]
fn a_reference_is_marked_as_published_and_lacks_what_its_table_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // No store is needed to name a reference.
    let (code, json, stderr) = with_store(&store, &["show", "ref:rr-table3", "--json", "-"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!store.exists());
    let run = Run::from_json(&json).unwrap();
    let record = run.published.as_ref().unwrap();
    assert_eq!(record.note, NOT_MEASURED_HERE);
    assert_eq!(
        (record.unit.as_str(), record.table.as_str()),
        ("ms", "Table 3")
    );
    for s in &run.streams {
        assert_eq!(s.stats.stddev_ns, None);
        assert!(s.stats.percentiles_ns.is_empty() && s.histogram.is_none());
        assert_eq!((s.missed_periods, s.first_sample_ns), (None, None));
    }
    assert_eq!(run, reference_run("rr-table3").unwrap());
    // Its exports, without histogram or percentiles, are what Prometheus reads.
    crate::consumer_prometheus::assert_consumers_accept(&store, &run, "ref:rr-table3");
    // Shipped, not stored: importing one is refused, naming how to use it.
    let file = dir.path().join("table3.json");
    std::fs::write(&file, &json).unwrap();
    let (code, _, stderr) = with_store(&store, &["import", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(!store.exists());

    let (code, json, _) = with_store(&store, &["runs", "--references", "--json", "-"]);
    assert_eq!(code, 0);
    let listed: Vec<Value> = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|r| r["reference"].as_str())
        .collect();
    let expected: Vec<String> = latlab_model::published::names()
        .into_iter()
        .map(|n| format!("ref:{n}"))
        .collect();
    assert_eq!(names, expected);

    let (code, _, stderr) = with_store(&store, &["compare", "ref:rr-table3", "ref:rr-table9"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("ref:rr-table9") || stderr.contains("rr-table9"),
        "{stderr}"
    );
}

/// Table 5 gives no sample counts, so its Run has no streams: a format of stream rows
/// would be an empty file that reads as a run that measured nothing; each refuses and
/// names the format that holds the figures.
#[test]
fn a_reference_without_streams_is_refused_by_the_formats_of_streams() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    for format in [
        "csv",
        "prometheus",
        "openmetrics",
        "cyclictest-json",
        "cyclictest",
    ] {
        let (code, out, stderr) =
            with_store(&store, &["export", "ref:rr-table5", "--format", format]);
        assert_eq!((code, out.as_str()), (2, ""), "{format}: {stderr}");
        assert!(stderr.contains("--format json"), "{format}: {stderr}");
    }
    let (code, json, stderr) = with_store(&store, &["export", "ref:rr-table5", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        Run::from_json(&json).unwrap(),
        reference_run("rr-table5").unwrap()
    );
    // Compared, its samples and missed periods are unknown, not 0.
    let (code, json, stderr) = with_store(
        &store,
        &["compare", "ref:rr-table3", "ref:rr-table5", "--json", "-"],
    );
    assert_eq!(code, 0, "{stderr}");
    let compared: Value = serde_json::from_str(&json).unwrap();
    let new = &compared["comparisons"][0]["new"];
    assert_eq!(
        (&new["samples"], &new["missed_periods"]),
        (&Value::Null, &Value::Null)
    );
    assert!(!store.exists());
}

/// A reference's JUnit says it is published (a `published` property, the measurement
/// skipped as such, no exit status) and is what Jenkins' schema and junitparser read;
/// its csv, as Python's csv module reads it, says so in every row.
#[test]
fn a_references_exports_say_it_is_published_and_their_readers_accept_them() {
    use crate::consumer_ci::{consumer, python, tool};
    use std::path::{Path, PathBuf};
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let xsd = consumer("junit-10.xsd");
    let mut pairs: Vec<PathBuf> = Vec::new();
    for name in ["rr-table3", "rr-table5"] {
        let id = format!("ref:{name}");
        let (code, junit, stderr) = with_store(&store, &["export", &id, "--format", "junit"]);
        assert_eq!(code, 0, "{stderr}");
        let properties: Vec<&str> = junit
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<property name=\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert_eq!(properties, ["run", "published", "verdict"], "{junit}");
        let file = dir.path().join(format!("{name}.xml"));
        std::fs::write(&file, &junit).unwrap();
        let (code, said) = tool(
            "xmllint",
            &[Path::new("--noout"), Path::new("--schema"), &xsd, &file],
            "apt-get install libxml2-utils (scripts/test does)",
        );
        assert_eq!(code, 0, "{id}: xmllint: {said}");
        let json = dir.path().join(format!("{name}.json"));
        let (code, text, _) = with_store(&store, &["export", &id, "--format", "json"]);
        assert_eq!(code, 0);
        std::fs::write(&json, text).unwrap();
        pairs.extend([file, json]);
    }
    let args: Vec<&Path> = pairs.iter().map(PathBuf::as_path).collect();
    let (code, said) = python("junit_check.py", &args);
    assert_eq!(code, 0, "junitparser: {said}");

    // Python's csv module reads a row per stream, each saying whose figures they are.
    let (code, csv, stderr) = with_store(&store, &["export", "ref:rr-table3", "--format", "csv"]);
    assert_eq!(code, 0, "{stderr}");
    let file = dir.path().join("rr-table3.csv");
    std::fs::write(&file, csv).unwrap();
    let (code, said) = python("csv_rows.py", &[&file]);
    assert_eq!(code, 0, "{said}");
    let rows: Vec<serde_json::Map<String, Value>> = serde_json::from_str(&said).unwrap();
    let reference = reference_run("rr-table3").unwrap();
    let published = reference.published.as_ref().unwrap();
    assert_eq!(rows.len(), reference.streams.len());
    for (row, stream) in rows.iter().zip(&reference.streams) {
        let source = format!("{NOT_MEASURED_HERE}: {}", published.citation());
        assert_eq!(row["source"], source.as_str(), "{row:?}");
        assert_eq!(row["run"], "ref:rr-table3");
        let max = stream
            .stats
            .max_ns
            .map(|n| n.0.to_string())
            .unwrap_or_default();
        assert_eq!(row["max_ns"], max.as_str(), "{row:?}");
    }
    assert!(!store.exists());
}
