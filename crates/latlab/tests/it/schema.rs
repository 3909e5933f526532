//! The JSON Schemas of docs/schema/ against what latlab writes, with a real validator
//! (python-jsonschema, by `scripts/check-schemas`): the documented example, Runs of
//! every kind made here (measured, imported from every format, published, explained,
//! at a checkpoint) and comparisons; and a broken document of each kind refused, so
//! that the check can fail. scripts/test checks every Run the whole suite wrote the
//! same way ([`crate::common::KEEP_DIR`]).

use latlab_formats::import::{detect, import, Format, ImportContext};
use latlab_model::explain::{Explain, ExplainMode};
use latlab_model::progress::{Death, DeathCause, Progress, RunState};
use latlab_model::run::Run;
use latlab_model::seal::WarningCode;
use latlab_report::compare::{compare_runs, Judged, Tolerance};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> Run {
    let text = std::fs::read_to_string(top().join("docs/example-run.json")).unwrap();
    Run::from_json(&text).unwrap()
}

/// `scripts/check-schemas --closed --every-schema DIR`: whether every document
/// validated, and what it said.
fn check_schemas(dir: &Path) -> (bool, String) {
    let out = Command::new("python3")
        .arg(top().join("scripts/check-schemas"))
        .args(["--closed", "--every-schema"])
        .arg(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 is needed for this test ({e}): apt-get install python3")
        });
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // 3: the validator is missing, so nothing was checked.
    assert_ne!(out.status.code(), Some(3), "{said}");
    (out.status.success(), said)
}

/// Writes `document` into `dir` as `name`.json.
fn put(dir: &Path, name: &str, document: &Value) {
    let text = serde_json::to_string_pretty(document).unwrap();
    std::fs::write(dir.join(format!("{name}.json")), text).unwrap();
}

/// Writes `run` into `dir` as `name`.json, as latlab writes Runs.
fn put_run(dir: &Path, name: &str, run: &Run) {
    std::fs::write(dir.join(format!("{name}.json")), run.to_json_pretty()).unwrap();
}

/// Every import fixture (the real tools' files, not their README), in-process: one Run
/// per file, at least one of every format.
fn imported_runs() -> Vec<(String, Run)> {
    let fixtures = top().join("crates/latlab-formats/tests/fixtures/import");
    let mut runs = Vec::new();
    let mut formats = BTreeSet::new();
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Some(format) = detect(&bytes) else {
            continue;
        };
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let ctx = ImportContext::new(&name, "20261121T001012Z-3f9a2c", "2026-11-21T00:10:12.345Z");
        // A single-thread -v log does not state its period: it is given, as
        // `latlab import --period` gives it.
        let with_period = ImportContext {
            period: Some(latlab_model::Nanos::MILLISECOND),
            ..ctx.clone()
        };
        let run = import(format, bytes.as_slice(), &ctx)
            .or_else(|_| import(format, bytes.as_slice(), &with_period))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        formats.insert(format.name());
        runs.push((name, run));
    }
    let every: BTreeSet<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(formats, every, "a fixture of every import format");
    runs
}

/// `run`, one of latlab-model's fixtures, with the preemption model they leave empty
/// (latlab writes one of its list, `unknown` when it cannot tell).
fn with_preemption_model(mut run: Run) -> Run {
    if let Some(host) = run.host.as_mut() {
        host.preemption.model = "unknown".to_string();
    }
    run
}

/// The fixture Run as a checkpoint wrote it, or as the next latlab found it dead.
fn in_progress(state: RunState) -> Run {
    let mut run = with_preemption_model(latlab_model::fixture::run());
    run.progress = Some(Progress {
        state,
        pid: 4242,
        pid_start_ticks: Some(123_456),
        boot_id: None,
        rig: None,
        checkpoints: 3,
        checkpoint_at: Some("2026-11-21T00:10:42.345Z".to_string()),
        checkpoint_every_ns: 10_000_000_000,
        death: (state == RunState::Died).then(|| Death {
            cause: DeathCause::ProcessKilled,
            found_at: "2026-11-21T01:00:00.000Z".to_string(),
        }),
    });
    run
}

#[test]
fn what_latlab_writes_validates_against_the_schemas_closed() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::copy(
        top().join("docs/example-run.json"),
        dir.join("example.json"),
    )
    .unwrap();
    let fixture = with_preemption_model(latlab_model::fixture::run());
    put_run(dir, "fixture", &fixture);
    let explained = with_preemption_model(latlab_model::fixture::explained_run());
    put_run(dir, "explained", &explained);
    let mut untraced = fixture.clone();
    untraced.explain = Some(Explain {
        unavailable: Some(
            "tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing".into(),
        ),
        ..Explain::empty(ExplainMode::Deep)
    });
    put_run(dir, "untraced", &untraced);
    put_run(dir, "running", &in_progress(RunState::Running));
    put_run(dir, "died", &in_progress(RunState::Died));
    for name in latlab_model::published::names() {
        put_run(
            dir,
            name,
            &latlab_model::published::reference_run(name).unwrap(),
        );
    }
    for (name, run) in imported_runs() {
        put_run(dir, &name, &run);
    }

    let metrics = [Judged::DEFAULT, Judged::MissedRate];
    let runs = [example(), fixture];
    let compared = compare_runs(&runs, &metrics, Tolerance::DEFAULT, None).unwrap();
    put(dir, "comparison", &serde_json::to_value(&compared).unwrap());
    let imported = imported_runs().into_iter().map(|(_, run)| run);
    let runs: Vec<Run> = std::iter::once(example()).chain(imported).collect();
    let absolute = Tolerance::Absolute(latlab_model::Nanos(5_000));
    let compared = compare_runs(&runs, &metrics, absolute, None).unwrap();
    put(
        dir,
        "comparison-of-imports",
        &serde_json::to_value(&compared).unwrap(),
    );
    let references = ["rr-table3", "rr-table4"]
        .map(|name| latlab_model::published::reference_run(name).unwrap());
    let compared = compare_runs(&references, &metrics, Tolerance::DEFAULT, Some(100)).unwrap();
    assert!(compared.periods.is_some(), "tables 3 and 4 share periods");
    put(
        dir,
        "comparison-by-period",
        &serde_json::to_value(&compared).unwrap(),
    );

    let (valid, said) = check_schemas(dir);
    assert!(valid, "{said}");
}

#[test]
fn documents_that_break_the_format_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let example: Value = serde_json::to_value(example()).unwrap();
    let broken = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut document = example.clone();
        edit(&mut document);
        put(dir, name, &document);
    };
    broken("count-of-wrong-type", &|run| {
        run["streams"][0]["samples"] = "4998".into();
    });
    // Unknown is null, never left out.
    broken("unknown-left-out", &|run| {
        run["streams"][0]
            .as_object_mut()
            .unwrap()
            .remove("missed_periods");
    });
    broken("required-field-missing", &|run| {
        run.as_object_mut().unwrap().remove("verdict");
    });
    broken("bound-misshapen", &|run| {
        run["streams"][0]["stats"]["percentiles_ns"]["99.9"] = serde_json::json!({"at_least": 5});
    });
    broken("warning-degrading-against-its-code", &|run| {
        run["warnings"][0]["degrades"] = true.into();
    });
    broken("field-not-described", &|run| {
        run["host"]["mystery"] = 1.into();
    });
    broken("figures-without-samples", &|run| {
        run["streams"][0]["samples"] = 0.into();
    });
    let runs = [latlab_model::fixture::run(), latlab_model::fixture::run()];
    let compared = compare_runs(&runs, &[Judged::DEFAULT], Tolerance::DEFAULT, None).unwrap();
    let mut comparison = serde_json::to_value(&compared).unwrap();
    comparison["comparisons"][0]["verdicts"][0]["new"] = Value::Null;
    put(dir, "judged-without-estimate", &comparison);

    let (valid, said) = check_schemas(dir);
    assert!(!valid, "{said}");
    let refused: BTreeSet<String> = said
        .lines()
        .filter_map(|l| l.strip_suffix(" document:"))
        .filter_map(|l| l.split(": not a valid ").next())
        .map(|path| {
            Path::new(path)
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let written: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(refused, written, "{said}");
}

/// The closed lists the schema holds are latlab's own.
#[test]
fn the_schemas_lists_are_latlabs() {
    let text = std::fs::read_to_string(top().join("docs/schema/run.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let strings = |value: &Value| -> Vec<String> {
        let list = value
            .as_array()
            .unwrap_or_else(|| panic!("not a list: {value}"));
        list.iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let defs = &schema["$defs"];
    let names = |codes: &mut dyn Iterator<Item = WarningCode>| -> Vec<String> {
        codes.map(|c| c.as_str().to_string()).collect()
    };
    let branches = &defs["warning"]["oneOf"];
    assert_eq!(
        strings(&branches[0]["properties"]["code"]["enum"]),
        names(&mut WarningCode::ALL.into_iter().filter(|c| c.degrades())),
        "the degrading codes"
    );
    assert_eq!(branches[0]["properties"]["degrades"]["const"], true);
    assert_eq!(
        strings(&branches[1]["properties"]["code"]["enum"]),
        names(&mut WarningCode::ALL.into_iter().filter(|c| !c.degrades())),
        "the other codes"
    );
    assert_eq!(branches[1]["properties"]["degrades"]["const"], false);

    let checks: Vec<String> = latlab_measure::check::CHECKS
        .iter()
        .map(|c| c.id().to_string())
        .collect();
    let audit_ids = &defs["audit"]["properties"]["checks"]["items"]["properties"]["id"];
    assert_eq!(strings(&audit_ids["enum"]), checks, "the audit's checks");

    let formats: Vec<String> = Format::ALL.iter().map(|f| f.name().to_string()).collect();
    let import_formats = &defs["import"]["properties"]["format"]["enum"];
    assert_eq!(strings(import_formats), formats, "the import formats");
}
