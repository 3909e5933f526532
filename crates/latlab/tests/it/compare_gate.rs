//! `latlab compare` as a CI gate, on Runs made here and imported (no measuring): runs
//! that measured different things are refused, a new run without samples fails, the
//! missed-period rate is judged, a tolerance needs its unit, and the loads of both runs
//! stand beside the latency verdicts — in the text and in `--json`.

use crate::common::with_store;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{
    CpuTime, EncodedHistogram, ExactSums, LoadRecord, Phase, Run, Spikes, Statistics, Stream,
    Timeline,
};
use latlab_model::Nanos;
use serde_json::Value;
use std::path::Path;

/// `docs/example-run.json`, the documented real run.
fn example() -> Run {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/example-run.json");
    Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A deterministic spread of `n` values from `low` to `low + width` (a linear
/// congruential walk).
fn spread(low: i64, width: i64, n: usize, seed: u64) -> Vec<i64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            low + ((x >> 33) % width as u64) as i64
        })
        .collect()
}

/// `like` holding exactly `values`, with `missed` missed periods.
fn stream(like: &Stream, phase: &str, values: &[i64], missed: u64) -> Stream {
    let (mut sums, mut histogram) = (ExactSums::default(), LatencyHistogram::new());
    for &v in values {
        sums.add(v);
        histogram.record(v);
    }
    Stream {
        phase: phase.to_string(),
        samples: values.len() as u64,
        missed_periods: Some(missed),
        overrun_wakes: Some(0),
        early_wakes: Some(0),
        first_sample_ns: values.first().map(|&v| Nanos(v)),
        stats: Statistics::compute(&sums, &histogram),
        histogram: Some(EncodedHistogram::from_histogram(&histogram)),
        spikes: Spikes::default(),
        timeline: Timeline {
            interval_ns: Nanos::SECOND,
            max_ns: vec![values.iter().max().map(|&m| Nanos(m))],
            count: vec![values.len() as u64],
        },
        ..like.clone()
    }
}

/// The example's two CPUs, each with 20 000 samples from `low` µs to `low` + 2 µs and
/// `missed` missed periods, in each of `phases` (loads from `loads(phase)`).
fn run(
    id: &str,
    low_us: i64,
    missed: u64,
    phases: &[&str],
    loads: impl Fn(&str) -> Vec<LoadRecord>,
) -> Run {
    let mut run = example();
    run.id = id.to_string();
    run.scenario = Some("gate".to_string());
    let like = run.streams[0].clone();
    run.streams = phases
        .iter()
        .enumerate()
        .flat_map(|(i, phase)| {
            [0, 1].map(|cpu| {
                let values = spread(low_us * 1_000, 2_000, 20_000, (i * 2 + cpu + 1) as u64);
                Stream {
                    cpu: Some(cpu),
                    thread: cpu,
                    ..stream(&like, phase, &values, missed)
                }
            })
        })
        .collect();
    let started = run.phases[0].started_at.clone();
    run.phases = phases
        .iter()
        .map(|name| Phase {
            name: name.to_string(),
            started_at: started.clone(),
            elapsed_ns: Some(Nanos(20 * Nanos::SECOND.0)),
            loads: loads(name),
        })
        .collect();
    run
}

fn plain(id: &str, low_us: i64, missed: u64) -> Run {
    run(id, low_us, missed, &["main"], |_| Vec::new())
}

/// A load record: `rate` per second over 20 s.
fn load(spec: &str, rate: f64, unit: &str, rate_unit: &str, scale: f64) -> LoadRecord {
    LoadRecord {
        spec: spec.to_string(),
        name: spec.split(':').next().unwrap().to_string(),
        params: Default::default(),
        cpus: vec![0, 1],
        work: (rate * 20.0 / scale) as u64,
        unit: unit.to_string(),
        rate: Some(rate),
        rate_unit: rate_unit.to_string(),
        elapsed_ns: Nanos(20 * Nanos::SECOND.0),
        ended: "stopped".to_string(),
        stop_ns: Nanos(1_000_000),
        notes: Vec::new(),
        // An exec load's command: three quarters of its CPU time in user mode.
        cpu_time: (unit == "CPU ns").then_some(CpuTime {
            user_ns: Nanos((rate * 15.0 * 1e9) as i64),
            system_ns: Nanos((rate * 5.0 * 1e9) as i64),
        }),
    }
}

/// Imports `runs` into a new store in `dir`; returns the store.
fn store_of(dir: &Path, runs: &[Run]) -> std::path::PathBuf {
    let store = dir.join("runs.sqlite");
    for run in runs {
        let file = dir.join(format!("{}.json", run.id));
        std::fs::write(&file, run.to_json_pretty()).unwrap();
        let (code, _, err) = with_store(&store, &["import", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
    }
    store
}

const BASE: &str = "20261122T000000Z-0000b0";
const NEW: &str = "20261122T000100Z-0000c1";

fn json(store: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["compare", BASE, NEW, "--json"];
    args.extend(extra);
    let (code, out, err) = with_store(store, &args);
    let value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, value, err)
}

#[test]
fn runs_of_different_probes_are_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let mut msg = plain(NEW, 10, 0);
    for s in &mut msg.streams {
        s.probe = "msg".to_string();
        s.period_ns = Some(Nanos(200_000));
    }
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), msg]);
    let (code, out, err) = with_store(&store, &["compare", BASE, NEW]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "nothing judged: {out}");
    for said in [
        "probe: timer (base) vs msg",
        "period: 1 ms (base) vs 200 µs",
        "--force",
    ] {
        assert!(err.contains(said), "{said:?} in {err}");
    }
    let (code, value, err) = json(&store, &["--force"]);
    assert_eq!(code, 0, "{err}");
    let differences = &value["comparisons"][0]["differences"];
    assert_eq!(differences[0]["what"], "probe");
    assert_eq!(differences[1]["what"], "period");
}

#[test]
fn a_new_run_without_samples_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let mut empty = plain(NEW, 10, 0);
    let like = empty.streams[0].clone();
    empty.streams = [0, 1]
        .map(|cpu| Stream {
            cpu: Some(cpu),
            thread: cpu,
            timeline: Timeline::default(),
            ..stream(&like, "main", &[], 0)
        })
        .to_vec();
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), empty]);
    let (code, out, err) = with_store(&store, &["compare", BASE, NEW]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("has no samples to compare"), "{out}");
    let (code, value, _) = json(&store, &[]);
    assert_eq!(code, 1);
    assert_eq!(value["failures"], 1);
    assert_eq!(
        value["comparisons"][0]["verdicts"][0]["outcome"],
        "no-samples"
    );
}

#[test]
fn the_missed_period_rate_is_judged_with_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    // 0 of 20 000 periods missed per CPU, then 200 (1 %).
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 10, 200)]);
    let (code, value, err) = json(&store, &["--metric", "missed-rate"]);
    assert_eq!(code, 1, "{err}");
    let verdict = &value["comparisons"][0]["verdicts"][0];
    assert_eq!(verdict["metric"], "missed-rate");
    assert_eq!(verdict["unit"], "fraction");
    assert_eq!(verdict["outcome"], "regression");
    assert_eq!(verdict["base"]["value"], 0.0);
    // Wilson's upper end at 0 of n: z² / (n + z²), above 0.
    let high = verdict["base"]["interval"][1].as_f64().unwrap();
    let z2 = 1.959_964f64.powi(2);
    assert!((high - z2 / (40_000.0 + z2)).abs() < 1e-12, "{high}");
    let rate = verdict["new"]["value"].as_f64().unwrap();
    assert!((rate - 400.0 / 40_400.0).abs() < 1e-12, "{rate}");
    // Back the other way: an improvement, exit 0.
    let (code, out, err) = with_store(&store, &["compare", NEW, BASE, "--metric", "missed-rate"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("improvement"), "{out}");
}

#[test]
fn the_spike_rate_is_judged_with_its_poisson_interval_at_one_level() {
    let dir = tempfile::tempdir().unwrap();
    // Every sample of the new run is above 100 µs, none of the base's.
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 200, 0)]);
    let (code, value, err) = json(&store, &["--metric", "spike-rate:100us"]);
    assert_eq!(code, 1, "{err}");
    let verdict = &value["comparisons"][0]["verdicts"][0];
    assert_eq!(verdict["metric"], "spike-rate:100us");
    assert_eq!(verdict["unit"], "per hour");
    assert_eq!(verdict["outcome"], "regression");
    assert_eq!(verdict["base"]["value"], 0.0);
    assert!(verdict["base"]["interval"][1].as_f64().unwrap() > 0.0);
    // Without a level: the base run's spike level, named in the verdict.
    let (_, value, err) = json(&store, &["--metric", "spike-rate"]);
    let metric = value["comparisons"][0]["verdicts"][0]["metric"]
        .as_str()
        .unwrap();
    assert!(metric.starts_with("spike-rate:"), "{metric}: {err}");
    let (code, out, err) = with_store(
        &store,
        &["compare", BASE, NEW, "--metric", "spike-rate:100us"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("per hour [") && out.contains("REGRESSION"),
        "{out}"
    );
}

#[test]
fn a_tolerance_without_its_unit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 10, 0)]);
    let (code, out, err) = with_store(&store, &["compare", BASE, NEW, "--tolerance", "10"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("--tolerance: '10' has no unit: write 10% for a relative tolerance"),
        "{err}"
    );
    let (code, _, err) = with_store(&store, &["compare", BASE, NEW, "--tolerance", "5us"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_difference_inside_the_tolerance_is_within_tolerance_not_no_change() {
    let dir = tempfile::tempdir().unwrap();
    // 10–12 µs against 11–13 µs: the p50 intervals are apart, by about 1 µs (10 %).
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 11, 0)]);
    let verdict = |tolerance: &str| {
        let (code, value, err) = json(&store, &["--metric", "p50", "--tolerance", tolerance]);
        let outcome = value["comparisons"][0]["verdicts"][0]["outcome"].clone();
        (code, outcome, err)
    };
    let (code, outcome, err) = verdict("2us");
    assert_eq!(
        (code, outcome.as_str()),
        (0, Some("within-tolerance")),
        "{err}"
    );
    let (code, outcome, _) = verdict("20%");
    assert_eq!((code, outcome.as_str()), (0, Some("within-tolerance")));
    let (code, outcome, _) = verdict("500ns");
    assert_eq!((code, outcome.as_str()), (1, Some("regression")));
    let (_, out, _) = with_store(
        &store,
        &[
            "compare",
            BASE,
            NEW,
            "--metric",
            "p50",
            "--tolerance",
            "20%",
        ],
    );
    assert!(out.contains("within tolerance (20 %)"), "{out}");
    assert!(!out.contains("no significant change"), "{out}");
}

/// Two phases with the same loads: base 1000 and 1020 messages/s, new 800 and 810,
/// and an exec load; the new run's latencies are better.
fn with_loads() -> [Run; 2] {
    let loads = |rates: [f64; 2], cpu_s_per_s: f64| {
        move |phase: &str| {
            let rate = if phase == "one" { rates[0] } else { rates[1] };
            vec![
                load("hackbench", rate, "messages", "messages/s", 1.0),
                load("exec:make -j2", cpu_s_per_s, "CPU ns", "CPU s/s", 1e-9),
            ]
        }
    };
    [
        run(BASE, 20, 0, &["one", "two"], loads([1000.0, 1020.0], 1.9)),
        run(NEW, 10, 0, &["one", "two"], loads([800.0, 810.0], 1.5)),
    ]
}

#[test]
fn loads_stand_beside_the_latency_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), &with_loads());
    let (code, value, err) = json(&store, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(value["schema"], "latlab.comparison/1");
    assert_eq!(value["base"]["name"], "gate");
    let c = &value["comparisons"][0];
    // Phase by phase: both runs have the same two phases.
    let phases: Vec<&str> = c["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["one", "two"]);
    assert!(c["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["outcome"] == "improvement"));
    let loads = c["loads"].as_array().unwrap();
    let row = |phase: Value, spec: &str| {
        loads
            .iter()
            .find(|l| l["phase"] == phase && l["load"] == spec)
            .unwrap_or_else(|| panic!("{phase} {spec} in {loads:?}"))
    };
    let one = row("one".into(), "hackbench");
    assert_eq!(one["base"]["rate"], 1000.0);
    assert_eq!(one["new"]["rate"], 800.0);
    assert_eq!(one["change"], Value::Null, "one phase: no interval");
    // Pooled over the two phases: an interval each, apart.
    let pooled = row(Value::Null, "hackbench");
    assert_eq!(pooled["base"]["phases"], 2);
    let (low, high) = (
        pooled["base"]["interval"][0].as_f64().unwrap(),
        pooled["base"]["interval"][1].as_f64().unwrap(),
    );
    assert!(low < 1010.0 && 1010.0 < high, "{pooled}");
    assert_eq!(pooled["change"], "lower");
    // The exec load: its command's CPU time and the wall time.
    let exec = row("one".into(), "exec:make -j2");
    assert!(
        (exec["base"]["cpu_s"].as_f64().unwrap() - 38.0).abs() < 1e-6,
        "{exec}"
    );
    assert_eq!(exec["base"]["wall_s"], 20.0);
    assert!(
        (exec["base"]["user_s"].as_f64().unwrap() - 28.5).abs() < 1e-6,
        "{exec}"
    );
    assert!(
        (exec["base"]["system_s"].as_f64().unwrap() - 9.5).abs() < 1e-6,
        "{exec}"
    );
    assert_eq!(one["base"]["user_s"], Value::Null, "not recorded: unknown");
    // The text: both sides in one view.
    let (code, out, _) = with_store(&store, &["compare", BASE, NEW]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn the_json_goes_to_a_file_with_the_table_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 10, 0)]);
    let file = dir.path().join("comparison.json");
    let (code, out, err) = with_store(
        &store,
        &["compare", BASE, NEW, "--json", file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Comparison written to"), "{out}");
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(value["base"]["id"], BASE);
    assert_eq!(value["comparisons"][0]["new"]["id"], NEW);
    assert_eq!(value["tolerance"]["relative"], 0.1);
    // Nothing else left beside it.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") || n == "comparison.json")
        .filter(|n| !n.starts_with("runs.sqlite"))
        .collect();
    names.sort();
    assert_eq!(names, ["comparison.json"]);
}

#[test]
fn compare_report_and_serve_give_one_pair_one_verdict() {
    let dir = tempfile::tempdir().unwrap();
    // 10–12 µs against 11–13 µs: p99.9 about 8 % higher, inside the default 10 %.
    let store = store_of(dir.path(), &[plain(BASE, 10, 0), plain(NEW, 11, 0)]);
    // The one verdict: p99.9 within the 10 % tolerance (exit 0: no regression).
    let one = |text: &str| text.contains("p99.9: base") && text.contains("within tolerance (10 %)");
    let (code, compared, err) = with_store(&store, &["compare", BASE, NEW]);
    assert_eq!(code, 0, "{compared}{err}");
    assert!(one(&compared), "{compared}");
    let report = dir.path().join("pair.md");
    let (code, _, err) = with_store(
        &store,
        &["report", BASE, NEW, "-o", report.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let reported = std::fs::read_to_string(&report).unwrap();
    assert!(one(&reported), "{reported}");
    let mut served = crate::farm_views::Served::start(&store);
    let (status, page) = served.request("GET", &format!("/compare?base={BASE}&new={NEW}"));
    assert_eq!(status, 200, "{page}");
    assert!(one(&page), "serve's comparison: {page}");
    assert!(served.stop().success());
}

#[test]
fn runs_as_json_lists_every_run_and_the_table_says_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<Run> = (0..23)
        .map(|i| plain(&format!("20261122T0001{i:02}Z-0000{i:02}"), 10, 0))
        .collect();
    let store = store_of(dir.path(), &runs);
    let (code, listed, err) = with_store(&store, &["runs", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 23, "every run, not 20");
    let (_, listed, _) = with_store(&store, &["runs", "--json", "-n", "5"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 5, "as many as asked");
    let (_, table, _) = with_store(&store, &["runs"]);
    assert!(
        table.contains("20 runs shown") && table.contains("(23 match"),
        "{table}"
    );
}
