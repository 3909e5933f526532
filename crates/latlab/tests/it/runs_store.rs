//! Runs you can find and tell apart: the added time and `last`, names, tags and notes,
//! `latlab runs` with its filters and `--json`, `latlab rm` and `latlab prune`, and
//! `latlab show --json`. Imports of fixtures fill the stores: fast, and each import
//! is added at a known point.

use crate::common::{fixture, latlab, shared, text, with_store};
use latlab_model::run::Run;
use serde_json::Value;
use std::path::Path;

/// Imports `file` (a fixture's name) with `extra` flags; returns the new run's id.
fn import(store: &Path, file: &str, extra: &[&str]) -> String {
    let path = fixture(file).display().to_string();
    let mut args = vec!["import", path.as_str()];
    args.extend(extra);
    let (code, out, err) = with_store(store, &args);
    assert_eq!(code, 0, "{err}");
    out.split(" as ")
        .nth(1)
        .and_then(|t| t.split(':').next())
        .unwrap_or_else(|| panic!("no id in {out}"))
        .to_string()
}

/// `latlab show RUN --json -`: the Run.
fn show(store: &Path, reference: &str) -> Run {
    let (code, out, err) = with_store(store, &["show", reference, "--json", "-"]);
    assert_eq!(code, 0, "{reference}: {err}");
    Run::from_json(&out).unwrap()
}

/// `latlab runs --json` with `extra` flags: the objects listed.
fn listed(store: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["runs", "--json"];
    args.extend(extra);
    let (code, out, err) = with_store(store, &args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<Value>>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn ids(list: &[Value]) -> Vec<&str> {
    list.iter().map(|r| r["id"].as_str().unwrap()).collect()
}

#[test]
fn an_import_without_a_start_time_is_last_when_it_was_added_last() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let with_start = import(&store, "cyclictest-2t.json", &[]);
    for file in ["cyclictest-1t.hist.txt", "oslat.txt", "jitterdebugger.json"] {
        let without = import(&store, file, &[]);
        let run = show(&store, "last");
        assert_eq!(run.id, without, "{file}");
        assert_eq!(
            run.started_at, None,
            "{file}: an import without a start time"
        );
    }
    assert_eq!(show(&store, "last~3").id, with_start);
    // The listing's order is the same: newest added first, within the default 20.
    let list = listed(&store, &[]);
    assert_eq!(list.len(), 4);
    assert_eq!(ids(&list)[3], with_start);
    let (_, table, _) = with_store(&store, &["runs", "-n", "1"]);
    let first_row = table.lines().nth(1).unwrap();
    assert!(
        first_row.starts_with(&format!(" {}", ids(&list)[0])),
        "{table}"
    );
    assert!(
        table.contains("1 run shown from ") && table.contains("(4 match"),
        "{table}"
    );
}

#[test]
fn runs_json_has_every_field_and_unknown_is_null() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let hist = import(&store, "cyclictest-1t.hist.txt", &[]);
    let json = import(&store, "cyclictest-2t.json", &["--tag", "env=lab"]);
    let list = listed(&store, &[]);
    let fields = [
        "id",
        "name",
        "tags",
        "note",
        "added_at",
        "started_at",
        "host",
        "kernel",
        "scenario",
        "probes",
        "periods_ns",
        "cpus",
        "duration_ns",
        "loads",
        "p99_9_ns",
        "max_ns",
        "verdict",
        "degraded",
        "state",
        "state_detail",
    ];
    for run in &list {
        let keys: Vec<&str> = run
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = fields.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected, "{run}");
    }
    let by_id = |id: &str| list.iter().find(|r| r["id"] == id).unwrap();
    // cyclictest -h text says no start, host, kernel, CPU or period, nor what ran
    // beside it: unknown, never a stand-in.
    let h = by_id(&hist);
    for unknown in [
        "started_at",
        "host",
        "kernel",
        "cpus",
        "periods_ns",
        "loads",
        // Ended: no state.
        "state",
        "state_detail",
    ] {
        assert_eq!(h[unknown], Value::Null, "{unknown}: {h}");
    }
    assert!(h["added_at"].is_string());
    // cyclictest --json does say them.
    let j = by_id(&json);
    assert_eq!(j["probes"], serde_json::json!(["timer abs"]));
    assert_eq!(j["periods_ns"], serde_json::json!([1_000_000]));
    assert_eq!(j["cpus"], serde_json::json!([0, 1]));
    assert_eq!(j["host"], "vm");
    assert_eq!(j["tags"], serde_json::json!({"env": "lab"}));
    assert_eq!(j["name"], Value::Null);
    // An empty store is an empty list.
    let empty = dir.path().join("empty.sqlite");
    assert_eq!(listed(&empty, &[]), Vec::<Value>::new());
}

#[test]
fn names_tags_and_notes_find_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let base = import(
        &store,
        "cyclictest-2t.json",
        &[
            "--name",
            "baseline",
            "--tag",
            "env=lab",
            "--tag",
            "bios=2.1",
            "--note",
            "before the update",
        ],
    );
    let other = import(&store, "oslat.txt", &["--tag", "env=ci"]);
    let run = show(&store, "baseline");
    assert_eq!(run.id, base);
    assert_eq!(run.name.as_deref(), Some("baseline"));
    assert_eq!(run.tags.get("bios").map(String::as_str), Some("2.1"));
    assert_eq!(run.note.as_deref(), Some("before the update"));
    // The summary says them too.
    let (_, summary, _) = with_store(&store, &["show", "baseline"]);
    assert!(
        summary.contains("Name: baseline\nTags: bios=2.1, env=lab\nNote: before the update\n"),
        "{summary}"
    );
    // The id's random suffix is a reference too.
    let suffix = other.rsplit_once('-').unwrap().1;
    assert_eq!(show(&store, suffix).id, other);
    // Filters.
    assert_eq!(ids(&listed(&store, &["--tag", "env=lab"])), [base.as_str()]);
    assert_eq!(ids(&listed(&store, &["--tag", "env"])).len(), 2);
    assert_eq!(
        ids(&listed(&store, &["--tag", "env=lab", "--tag", "bios=9"])).len(),
        0
    );
    assert_eq!(ids(&listed(&store, &["--host", "vm"])), [base.as_str()]);
    assert_eq!(
        ids(&listed(&store, &["--kernel", "6.18.*"])),
        [base.as_str()]
    );
    assert_eq!(
        ids(&listed(&store, &["--kernel", "6.18"])).len(),
        0,
        "exact unless *"
    );
    assert_eq!(ids(&listed(&store, &["--since", "1h"])).len(), 2);
    assert_eq!(ids(&listed(&store, &["--since", "2099-01-01"])).len(), 0);
    assert_eq!(
        ids(&listed(&store, &["--scenario", "*"])).len(),
        0,
        "no scenario"
    );
    // A name stands for one run: a second one is refused before anything is stored.
    let (code, _, err) = with_store(
        &store,
        &[
            "import",
            fixture("jitterdebugger.json").to_str().unwrap(),
            "--name",
            "baseline",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--name: ") && err.contains(&base), "{err}");
    assert_eq!(listed(&store, &[]).len(), 2);
    // A name that is another run's suffix makes that reference ambiguous: both listed.
    let third = import(&store, "jitterdebugger.json", &["--name", suffix]);
    let (code, _, err) = with_store(&store, &["show", suffix]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("could mean 2 runs") && err.contains(&other) && err.contains(&third),
        "{err}"
    );
}

#[test]
fn bad_labels_and_filters_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let hist = fixture("cyclictest-1t.hist.txt").display().to_string();
    let json = fixture("cyclictest-2t.json").display().to_string();
    let cases: [(&[&str], &str); 8] = [
        (&["import", &hist, "--name", "last~1"], "--name: "),
        (&["import", &hist, "--name", "two words"], "--name: "),
        (
            &["import", &hist, &json, "--name", "both"],
            "--name: a name stands for one run",
        ),
        (&["import", &hist, "--tag", "novalue"], "--tag: "),
        (&["import", &hist, "--note", "\u{1b}[2J"], "--note: "),
        (&["runs", "--since", "yesterday"], "--since: "),
        (&["runs", "--tag", "bad key"], "--tag: "),
        (&["prune", "--older-than", "soon"], "--older-than: "),
    ];
    for (args, message) in cases {
        let (code, _, err) = with_store(&store, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
    }
    assert_eq!(listed(&store, &[]).len(), 0, "nothing was imported");
}

#[test]
fn rm_needs_a_yes_off_a_terminal_and_says_what_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let first = import(&store, "cyclictest-2t.json", &["--name", "first"]);
    let second = import(&store, "oslat.txt", &[]);
    let third = import(&store, "jitterdebugger.json", &[]);
    let (code, _, err) = with_store(&store, &["rm", "first"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--yes") && err.contains(&first), "{err}");
    assert_eq!(
        listed(&store, &[]).len(),
        3,
        "nothing removed without --yes"
    );
    // References are resolved before anything is removed: last and last~1 are the two
    // runs added last when the command was given.
    let (code, out, err) = with_store(&store, &["rm", "last", "last~1", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("removed {third}")), "{out}");
    assert!(out.contains(&format!("removed {second}")), "{out}");
    assert!(out.contains("2 runs removed from "), "{out}");
    assert_eq!(ids(&listed(&store, &[])), [first.as_str()]);
    let (code, _, err) = with_store(&store, &["rm", "nosuch", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("RUN: no run 'nosuch'"), "{err}");
}

/// `latlab ARGS` on a terminal (util-linux `script` gives it one) with `input` typed.
fn on_a_terminal(args: &[&str], input: &str) -> String {
    let command = std::iter::once(crate::common::latlab_path().display().to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("script: {e}; install it with: apt-get install bsdutils"));
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    text(&out.stdout)
}

#[test]
fn rm_and_prune_ask_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store_arg = store.display().to_string();
    let id = import(&store, "cyclictest-2t.json", &[]);
    let said = on_a_terminal(&["rm", &id, "--store", &store_arg], "n\n");
    assert!(
        said.contains("Remove 1 run from ") && said.contains("[y/N]"),
        "{said}"
    );
    assert!(said.contains("nothing removed"), "{said}");
    assert_eq!(listed(&store, &[]).len(), 1);
    let said = on_a_terminal(
        &["prune", "--older-than", "0s", "--store", &store_arg],
        "y\n",
    );
    assert!(said.contains(&format!("removed {id}")), "{said}");
    assert_eq!(listed(&store, &[]).len(), 0);
}

#[test]
fn prune_removes_what_was_added_before_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    import(&store, "cyclictest-2t.json", &[]);
    import(&store, "oslat.txt", &[]);
    let (code, out, err) = with_store(&store, &["prune", "--older-than", "30d", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("nothing removed"), "{out}");
    assert_eq!(listed(&store, &[]).len(), 2);
    let (code, out, err) = with_store(&store, &["prune", "--older-than", "0s", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 runs removed from "), "{out}");
    assert_eq!(listed(&store, &[]).len(), 0);
}

#[test]
fn show_json_writes_the_run_as_run_json_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let id = import(&store, "cyclictest-2t.json", &["--name", "j"]);
    let (_, exported, _) = with_store(&store, &["export", "j", "--format", "json"]);
    let to_stdout = show(&store, &id);
    assert_eq!(to_stdout, crate::common::written_run(&exported).unwrap());
    // To a file: the summary still, and where the Run went.
    let file = dir.path().join("run.json");
    let (code, out, err) = with_store(&store, &["show", "j", "--json", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("Run {id}")), "{out}");
    assert!(
        out.ends_with(&format!("Run written to {}\n", file.display())),
        "{out}"
    );
    assert_eq!(
        crate::common::written_run(&std::fs::read_to_string(&file).unwrap()).unwrap(),
        to_stdout
    );
    // Never over the store it reads.
    let (code, _, err) = with_store(&store, &["show", "j", "--json", store.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--json: ") && err.contains("the run store"),
        "{err}"
    );
    assert_eq!(listed(&store, &[]).len(), 1, "the store is whole");
}

#[test]
fn check_json_is_never_written_over_the_run_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("latlab/runs.sqlite");
    import(&store, "cyclictest-2t.json", &[]);
    let out = latlab()
        .env("XDG_DATA_HOME", dir.path())
        .args(["check", "--json"])
        .arg(&store)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--json: ") && err.contains("the run store"),
        "{err}"
    );
    assert_eq!(listed(&store, &[]).len(), 1, "the store is whole");
}

#[test]
fn a_measured_run_takes_a_name_tags_and_a_note() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let labels = ["--name", "m1", "--tag", "env=lab", "--note", "a note"];
    let mut args = vec!["run", "-c", "0", "-d", "200ms", "-q", "--no-audit"];
    args.extend(labels);
    let (code, _, err) = with_store(&store, &args);
    assert_eq!(code, 0, "{err}");
    let run = show(&store, "m1");
    assert_eq!(run.name.as_deref(), Some("m1"));
    assert_eq!(run.tags.get("env").map(String::as_str), Some("lab"));
    assert_eq!(run.note.as_deref(), Some("a note"));
    let list = listed(&store, &[]);
    let listed_run = &list[0];
    assert_eq!(listed_run["name"], "m1");
    assert_eq!(listed_run["cpus"], serde_json::json!([0]));
    assert_eq!(listed_run["periods_ns"], serde_json::json!([1_000_000]));
    assert_eq!(
        listed_run["loads"],
        serde_json::json!([]),
        "none ran: known"
    );
    assert_eq!(listed_run["started_at"].as_str(), run.started_at.as_deref());
    let measured: i64 = run.phases.iter().map(|p| p.elapsed_ns.unwrap().0).sum();
    assert_eq!(listed_run["duration_ns"], measured);
    // The same name again is refused before measuring.
    let (code, out, err) = with_store(&store, &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--name: ") && err.contains(&run.id), "{err}");
    assert!(out.is_empty(), "nothing measured: {out}");
    assert_eq!(listed(&store, &[]).len(), 1);
}
