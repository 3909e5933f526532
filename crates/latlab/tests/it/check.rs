//! `latlab check` end to end: exit codes, the JSON and the table, on the fixture trees
//! of latlab-measure (a tuned PREEMPT_RT box, a stock desktop, a VM) and on this
//! machine (invariants only).

use crate::common::latlab;
use latlab_model::audit::{Audit, CheckVerdict};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../latlab-measure/tests/fixtures/check")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Runs `latlab check ARGS`: exit code, stdout, stderr.
fn check(args: &[&str]) -> (i32, String, String) {
    // A wide table, so no value the tests look for is wrapped.
    let out = latlab()
        .arg("check")
        .args(args)
        .env("COLUMNS", "220")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn audit_of(stdout: &str) -> Audit {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not an audit ({e}): {stdout}"))
}

#[test]
fn json_exit_codes_follow_failures() {
    let (code, out, err) = check(&["--root", &fixture("rt-tuned"), "-c", "2-3", "--json"]);
    assert_eq!(code, 0, "{err}");
    let audit = audit_of(&out);
    assert_eq!(audit.cpus, vec![2, 3]);
    assert_eq!(audit.priority, 95);
    assert!(!audit.failed());

    for name in ["desktop", "vm"] {
        let (code, out, err) = check(&["--root", &fixture(name), "--json"]);
        assert_eq!(code, 1, "{name}: {err}");
        let audit = audit_of(&out);
        assert!(audit.failed());
        assert_eq!(
            audit.check("preemption").map(|c| c.verdict),
            Some(CheckVerdict::Fail)
        );
    }
}

#[test]
fn the_priority_flag_changes_which_threads_outrank_the_task() {
    let desktop = fixture("desktop");
    let (_, out, _) = check(&["--root", &desktop, "--json"]);
    assert_eq!(
        audit_of(&out).check("rt-tasks").unwrap().verdict,
        CheckVerdict::Info
    );
    let (_, out, _) = check(&["--root", &desktop, "-P", "f:80", "--json"]);
    let audit = audit_of(&out);
    assert_eq!(audit.priority, 80);
    assert_eq!(audit.check("rt-tasks").unwrap().verdict, CheckVerdict::Warn);
}

#[test]
fn the_table_has_a_row_per_check_with_verdicts_and_fixes() {
    let (code, out, _) = check(&["--root", &fixture("vm")]);
    assert_eq!(code, 1);
    for text in [
        "check",
        "verdict",
        "evidence",
        "fix",
        "Preemption model",
        "FAIL",
        "WARN",
        "RT throttling",
        "HZ 250",
        "sysctl kernel.sched_rt_runtime_us=-1",
        "no isolated CPUs",
        "virtualised",
        "checks: 1 fail",
    ] {
        assert!(out.contains(text), "'{text}' missing from:\n{out}");
    }
}

#[test]
fn json_to_a_file_keeps_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.json");
    let (code, out, _) = check(&[
        "--root",
        &fixture("rt-tuned"),
        "-c",
        "3",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("Audit written to"), "{out}");
    assert!(out.contains("verdict"), "{out}");
    let audit = audit_of(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(audit.cpus, vec![3]);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let vm = fixture("vm");
    for (args, flag) in [
        (vec!["--root", vm.as_str(), "-c", "7"], "--cpus"),
        (vec!["--root", vm.as_str(), "-c", "1-x"], "--cpus"),
        (vec!["--root", vm.as_str(), "-P", "f:120"], "--priority"),
        (vec!["--root", "/nonexistent/latlab-root"], "--root"),
    ] {
        let (code, out, err) = check(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
    }
}

#[test]
fn this_machine_gets_a_verdict_for_every_check() {
    let (code, out, err) = check(&["--json"]);
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    let audit = audit_of(&out);
    assert_eq!(code == 1, audit.failed());
    assert!(audit.checks.len() > 20);
    for c in &audit.checks {
        assert!(!c.finding.is_empty(), "{c:#?}");
        if matches!(c.verdict, CheckVerdict::Warn | CheckVerdict::Fail) {
            assert!(c.fix.is_some(), "{c:#?}");
        }
    }
    let (code, table, _) = check(&[]);
    assert!(code == 0 || code == 1);
    assert!(table.contains("Preemption model"), "{table}");
}
