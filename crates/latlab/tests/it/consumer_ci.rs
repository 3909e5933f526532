//! latlab's exports read by their real consumers: Jenkins' JUnit schema (xmllint) and
//! junitparser, LAVA's rt-tests parser, OSADL's plot script and rteval's cyclictest
//! module (the parts of them that read the file, written anew in `tests/consumers/`,
//! whose README names their sources), and CSV read back against the Run.

use crate::common::{fixture, latlab, shared, text, with_store};

use latlab_model::run::Run;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A file of `tests/consumers/`.
pub(crate) fn consumer(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/consumers")
        .join(name)
}

/// Runs a program the test needs, which must be installed: its exit code and output.
pub(crate) fn tool(program: &str, args: &[&Path], install: &str) -> (i32, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed for this test ({e}): {install}"));
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    if said.contains("No module named") {
        panic!("{said}\nthis test needs it: {install}");
    }
    (out.status.code().unwrap_or(-1), said)
}

/// `python3 tests/consumers/SCRIPT ARGS`.
pub(crate) fn python(script: &str, args: &[&Path]) -> (i32, String) {
    let script = consumer(script);
    let mut all = vec![script.as_path()];
    all.extend_from_slice(args);
    tool(
        "python3",
        &all,
        "apt-get install python3; python3 -m pip install junitparser (scripts/test does)",
    )
}

/// `latlab run ARGS -q --store STORE`, holding the measuring slot: its exit code.
fn run_into(store: &Path, args: &[&str]) -> i32 {
    let _guard = shared();
    let (code, _, err) = with_store(store, &[&["run", "-q"], args].concat());
    assert!((0..=1).contains(&code), "latlab run {args:?}: {err}");
    code
}

/// `latlab export RUN --format FORMAT EXTRA -o FILE`: exit code and stderr.
fn export_to(store: &Path, run: &str, format: &str, extra: &[&str], file: &Path) -> (i32, String) {
    let file = file.to_str().unwrap();
    let args = [&["export", run, "--format", format, "-o", file], extra].concat();
    let (code, _, err) = with_store(store, &args);
    (code, err)
}

/// The stored Run `run`.
fn load(store: &Path, run: &str) -> Run {
    let (code, json, err) = with_store(store, &["export", run, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    Run::from_json(&json).unwrap()
}

/// The id `latlab import` gave each file.
fn import(store: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, said, err) = with_store(store, &args);
    assert_eq!(code, 0, "{err}");
    said.lines()
        .filter(|l| l.starts_with("imported "))
        .filter_map(|l| l.split(" as ").nth(1))
        .map(|rest| rest.split(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn junit_of_every_kind_of_run_validates_against_jenkins_schema_and_junitparser_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // Failing and degraded (memory not locked), passing, a primitive probe.
    let load_dir = dir.path().to_str().unwrap();
    let measured = [
        &["-c", "0", "-d", "300ms", "--max", "1ns", "--no-mlock"][..],
        &["-c", "0,1", "-d", "300ms", "--max", "10s", "--p99", "10s"][..],
        &["--probe", "msg", "-c", "0", "-d", "300ms", "--max", "10s"][..],
        &[
            "osadl",
            "-c",
            "0",
            "-d",
            "300ms",
            "--max",
            "10s",
            "--load-dir",
            load_dir,
        ][..],
    ];
    let mut ids = Vec::new();
    for args in measured {
        run_into(&store, args);
        ids.push(load(&store, "last").id);
    }
    // Imports: no thresholds, conditions unknown.
    ids.extend(import(
        &store,
        &[
            fixture("cyclictest-2t.json"),
            fixture("rtla-timerlat-hist.txt"),
        ],
    ));
    let xsd = consumer("junit-10.xsd");
    let mut pairs = Vec::new();
    for id in &ids {
        let junit = dir.path().join(format!("{id}.xml"));
        let (code, err) = export_to(&store, id, "junit", &[], &junit);
        assert_eq!(code, 0, "{id}: {err}");
        let (code, said) = tool(
            "xmllint",
            &[Path::new("--noout"), Path::new("--schema"), &xsd, &junit],
            "apt-get install libxml2-utils (scripts/test does)",
        );
        assert_eq!(code, 0, "{id}: xmllint: {said}");
        let json = dir.path().join(format!("{id}.json"));
        assert_eq!(export_to(&store, id, "json", &[], &json).0, 0);
        pairs.push(junit);
        pairs.push(json);
    }
    // One junitparser reading of every file: counts against each Run, and no two
    // cases of the merged files alike.
    let args: Vec<&Path> = pairs.iter().map(PathBuf::as_path).collect();
    let (code, said) = python("junit_check.py", &args);
    assert_eq!(code, 0, "junitparser: {said}");
    assert_eq!(said.lines().count(), ids.len(), "{said}");
    let failing = load(&store, &ids[0]);
    assert!(failing.degraded && failing.verdict.checks.iter().all(|c| c.failed()));
}

#[test]
fn lava_reads_a_failed_run_as_failed_and_a_passed_one_as_passed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    for (limit, exit, verdict) in [("1ns", 1, "fail"), ("10s", 0, "pass")] {
        let code = run_into(&store, &["-c", "0,1", "-d", "300ms", "--max", limit]);
        assert_eq!(code, exit, "--max {limit}");
        let file = dir.path().join(format!("{verdict}.json"));
        let (code, err) = export_to(&store, "last", "cyclictest-json", &[], &file);
        assert_eq!(code, 0, "{err}");
        let data: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            data["return_code"], exit,
            "return_code is latlab's exit code"
        );
        let (code, said) = python("lava_parse_rt_tests.py", &[Path::new("cyclictest"), &file]);
        assert_eq!(code, 0, "{said}");
        let last = said.lines().last().unwrap();
        assert_eq!(last, format!("cyclictest {verdict}"), "{said}");
        // Each thread's maximum as LAVA records it is the stream's, in whole µs.
        let run = load(&store, "last");
        for (i, s) in run.streams.iter().enumerate() {
            let max_us = s.stats.max_ns.unwrap().0 / 1_000;
            let line = format!("t{i}-max-latency pass {max_us} us");
            assert!(said.lines().any(|l| l == line), "{line} in {said}");
        }
    }
}

/// The streams of `phase`, as (samples, min µs, max µs), in order.
fn phase_figures(run: &Run, phase: &str) -> Vec<(u64, i64, i64)> {
    run.streams
        .iter()
        .filter(|s| s.phase == phase)
        .map(|s| {
            let us = |n: Option<latlab_model::Nanos>| n.unwrap().0.max(0) / 1_000;
            (s.samples, us(s.stats.min_ns), us(s.stats.max_ns))
        })
        .collect()
}

#[test]
fn osadl_and_rteval_read_one_phase_of_a_multi_phase_scenario_as_its_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let load_dir = dir.path().to_str().unwrap();
    run_into(
        &store,
        &["osadl", "-c", "0,1", "-d", "500ms", "--load-dir", load_dir],
    );
    let run = load(&store, "last");
    let phases: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(phases, ["idle", "load"]);

    // Without --phase both formats refuse, naming the phases.
    for format in ["cyclictest", "cyclictest-json"] {
        let file = dir.path().join("refused");
        let (code, err) = export_to(&store, "last", format, &[], &file);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(
            err.contains("(idle, load)") && err.contains("--phase"),
            "{err}"
        );
        assert!(!file.exists(), "a refused export writes nothing");
    }

    for phase in phases {
        let figures = phase_figures(&run, phase);
        let hist = dir.path().join(format!("{phase}.hist"));
        let (code, err) = export_to(&store, "last", "cyclictest", &["--phase", phase], &hist);
        assert_eq!(code, 0, "{err}");

        // OSADL: one series per CPU of this phase, labelled CPU0.., the phase's max.
        let (code, said) = python("osadl_plot.py", &[&hist]);
        assert_eq!(code, 0, "{said}");
        let plot: Value = serde_json::from_str(&said).unwrap();
        let series = plot["series"].as_array().unwrap();
        assert_eq!(series.len(), figures.len(), "{phase}: {said}");
        let phase_max = figures.iter().map(|f| f.2).max().unwrap();
        assert_eq!(plot["max_us"], phase_max, "{phase}");
        for (i, (s, f)) in series.iter().zip(&figures).enumerate() {
            assert_eq!(s["label"], format!("CPU{i}"));
            let counts = s["counts"].as_object().unwrap();
            let total: u64 = counts.values().map(|c| c.as_u64().unwrap()).sum();
            assert_eq!(total, f.0, "{phase} CPU{i}: every sample plotted");
        }

        // rteval: per core the samples, min and max of the phase's streams.
        let cores = figures.len().to_string();
        let (code, said) = python("rteval_cyclictest.py", &[&hist, Path::new(&cores)]);
        assert_eq!(code, 0, "{said}");
        let report: Value = serde_json::from_str(&said).unwrap();
        for (core, f) in report["cores"].as_array().unwrap().iter().zip(&figures) {
            assert_eq!(core["samples"], f.0, "{phase}: {said}");
            assert_eq!(core["min"], f.1, "{phase}: {said}");
            assert_eq!(core["max"], f.2, "{phase}: {said}");
        }

        // LAVA: the phase's threads.
        let json = dir.path().join(format!("{phase}.json"));
        let (code, err) = export_to(
            &store,
            "last",
            "cyclictest-json",
            &["--phase", phase],
            &json,
        );
        assert_eq!(code, 0, "{err}");
        let (code, said) = python("lava_parse_rt_tests.py", &[Path::new("cyclictest"), &json]);
        assert_eq!(code, 0, "{said}");
        for (i, f) in figures.iter().enumerate() {
            let line = format!("t{i}-max-latency pass {} us", f.2);
            assert!(said.lines().any(|l| l == line), "{phase}: {line} in {said}");
        }
        assert!(!said.contains(&format!("t{}-", figures.len())), "{said}");
    }
}

#[test]
fn cyclictest_formats_refuse_a_primitive_probe_and_other_formats_refuse_phase() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    run_into(&store, &["--probe", "msg", "-c", "0", "-d", "300ms"]);
    let file = dir.path().join("out");
    for format in ["cyclictest", "cyclictest-json"] {
        let (code, err) = export_to(&store, "last", format, &[], &file);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(
            err.contains("msg probe") && err.contains("not wake-up latencies"),
            "{err}"
        );
    }
    for format in ["csv", "json", "junit"] {
        let (code, err) = export_to(&store, "last", format, &["--phase", "main"], &file);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(err.contains("--phase"), "{err}");
    }
    assert!(!file.exists());
    let latlab_help = latlab().args(["export", "--help"]).output().unwrap();
    assert!(text(&latlab_help.stdout).contains("--phase"));
}

/// A CSV row's cells by column name.
fn rows(csv: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            header
                .iter()
                .zip(cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn csv_of_imported_runs_is_empty_wherever_the_source_lacked_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let files = [
        "cyclictest-2t.hist.txt",
        "cyclictest-2t.verbose.txt",
        "cyclictest-nohist.json",
        "oslat.txt",
        "jitterdebugger.json",
        "rtla-timerlat-hist.txt",
    ];
    let ids = import(&store, &files.map(fixture));
    assert_eq!(ids.len(), files.len());
    let mut unknown_cells = 0;
    for (id, file) in ids.iter().zip(files) {
        let run = load(&store, id);
        let (code, csv, err) = with_store(&store, &["export", id, "--format", "csv"]);
        assert_eq!(code, 0, "{err}");
        let rows = rows(&csv);
        assert_eq!(rows.len(), run.streams.len(), "{file}");
        for (row, s) in rows.iter().zip(&run.streams) {
            let known = |v: Option<String>| v.unwrap_or_default();
            let expected = [
                ("cpu", known(s.cpu.map(|c| c.to_string()))),
                ("method", known(s.method.clone())),
                ("period_ns", known(s.period_ns.map(|n| n.0.to_string()))),
                ("policy", known(s.policy.map(|p| p.to_string()))),
                (
                    "missed_periods",
                    known(s.missed_periods.map(|n| n.to_string())),
                ),
                ("early_wakes", known(s.early_wakes.map(|n| n.to_string()))),
                ("min_ns", known(s.stats.min_ns.map(|n| n.0.to_string()))),
                ("max_ns", known(s.stats.max_ns.map(|n| n.0.to_string()))),
            ];
            for (column, value) in expected {
                assert_eq!(row[column], value, "{file}: {column}");
                unknown_cells += usize::from(value.is_empty());
            }
            assert_eq!(row["stddev_ns"].is_empty(), s.stats.stddev_ns.is_none());
            assert_eq!(row["mean_ns"].is_empty(), s.stats.mean_ns.is_none());
        }
    }
    // The sources lack these: no period, policy or missed periods in a histogram.
    assert!(unknown_cells > 0);
    let hist = rows(&with_store(&store, &["export", &ids[0], "--format", "csv"]).1);
    for column in ["cpu", "period_ns", "policy", "missed_periods", "stddev_ns"] {
        assert!(hist.iter().all(|r| r[column].is_empty()), "{column}");
    }
}

#[test]
fn csv_of_a_version_1_run_leaves_its_stand_ins_empty() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let id = &import(&store, &[fixture("cyclictest-2t.hist.txt")])[0];
    // The same Run as latlab.run/1 wrote it: stand-ins, listed as unknown.
    let mut v1: Value =
        serde_json::from_str(&with_store(&store, &["export", id, "--format", "json"]).1).unwrap();
    v1["schema"] = "latlab.run/1".into();
    v1["id"] = "20200101T000000Z-0a0b0c".into();
    for s in v1["streams"].as_array_mut().unwrap() {
        s["period_ns"] = 0.into();
        s["policy"] = "other:0".into();
        s["missed_periods"] = 0.into();
    }
    v1["import"]["unknown_fields"] = serde_json::json!([
        "streams[].period_ns",
        "streams[].policy",
        "streams[].missed_periods"
    ]);
    let file = dir.path().join("v1.json");
    std::fs::write(&file, serde_json::to_string(&v1).unwrap()).unwrap();
    let other = dir.path().join("other.sqlite");
    let ids = import(&other, &[file]);
    let (code, csv, err) = with_store(&other, &["export", &ids[0], "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    for row in rows(&csv) {
        for column in ["period_ns", "policy", "missed_periods"] {
            assert_eq!(row[column], "", "{column}: {csv}");
        }
    }
}

/// `latlab run ARGS -q --store STORE`, stopped by SIGINT once it measures when `stop`:
/// its exit code.
fn gated(store: &Path, args: &[&str], stop: bool) -> i32 {
    let _guard = shared();
    let mut child = Command::new(crate::common::latlab_path())
        .args(["run", "-q", "--store"])
        .arg(store)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if stop {
        crate::common::await_handler(child.id(), libc::SIGINT);
        // Stopped once it measures, a few hundred periods in: a signal before the first
        // phase leaves a Run without a stream, which no cyclictest format can hold.
        crate::common::await_measuring(child.id());
        std::thread::sleep(std::time::Duration::from_millis(300));
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
    child.wait().unwrap().code().unwrap_or(-1)
}

#[test]
fn a_degraded_or_cut_short_run_that_met_its_thresholds_fails_every_gate_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let xsd = consumer("junit-10.xsd");
    // (run flags, stopped mid-way, exit code, the JUnit failure's type)
    let cases: [(&[&str], bool, i32, Option<&str>); 4] = [
        (&["-d", "300ms", "--no-mlock"], false, 5, Some("degraded")),
        (
            &["-d", "300ms", "--no-mlock", "--accept", "untrusted"],
            false,
            0,
            None,
        ),
        (&["-d", "30s"], true, 4, Some("incomplete")),
        (&["-d", "30s", "--accept", "incomplete"], true, 0, None),
    ];
    for (flags, stop, exit, failure) in cases {
        let mut args = vec!["-c", "0", "--max", "10s"];
        args.extend_from_slice(flags);
        let code = gated(&store, &args, stop);
        assert_eq!(code, exit, "{flags:?}");
        let run = load(&store, "last");
        assert_eq!(
            run.verdict.status.word(),
            "PASS",
            "{flags:?}: the thresholds held"
        );
        let junit = dir.path().join("gate.xml");
        assert_eq!(export_to(&store, "last", "junit", &[], &junit).0, 0);
        let (code, said) = tool(
            "xmllint",
            &[Path::new("--noout"), Path::new("--schema"), &xsd, &junit],
            "apt-get install libxml2-utils (scripts/test does)",
        );
        assert_eq!(code, 0, "xmllint: {said}");
        let xml = std::fs::read_to_string(&junit).unwrap();
        match failure {
            Some(kind) => assert!(
                xml.contains(&format!("<failure type=\"{kind}\"")),
                "{flags:?}: {xml}"
            ),
            None => {
                assert!(!xml.contains("<failure"), "{flags:?}: {xml}");
                // Accepted, and said so: a skipped case, not a silent pass.
                assert!(
                    xml.contains("<skipped type=\"accepted\""),
                    "{flags:?}: {xml}"
                );
            }
        }
        let file = dir.path().join("gate.json");
        assert_eq!(
            export_to(&store, "last", "cyclictest-json", &[], &file).0,
            0
        );
        let data: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(data["return_code"], exit, "{flags:?}");
        let (code, said) = python("lava_parse_rt_tests.py", &[Path::new("cyclictest"), &file]);
        assert_eq!(code, 0, "{said}");
        let verdict = if exit == 0 { "pass" } else { "fail" };
        assert_eq!(
            said.lines().last().unwrap(),
            format!("cyclictest {verdict}"),
            "{flags:?}: {said}"
        );
    }
}
