//! Bad input gets a clear usage error (exit 2) naming what is wrong — never a hang, a
//! runaway read, a silent choice between conflicting values, or raw terminal escapes.

use crate::common::shared;
use assert_cmd::Command;
use std::time::Duration;

fn bounded_latlab() -> Command {
    let mut command = crate::common::latlab();
    // A refusal takes milliseconds; a hang or a runaway read must not stall the suite.
    command.timeout(Duration::from_secs(20));
    command
}

/// Runs latlab; returns the exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = bounded_latlab().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_scenario_that_is_a_device_a_fifo_or_huge_is_refused_without_reading_it() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("scenario.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let huge = dir.path().join("huge.toml");
    std::fs::write(&huge, "# padding\n".repeat(100_000)).unwrap();
    let cases = [
        (
            "/dev/zero".to_string(),
            "not a regular file (a character device)",
        ),
        (fifo.display().to_string(), "not a regular file (a FIFO)"),
        (
            dir.path().display().to_string(),
            "not a regular file (a directory)",
        ),
        (huge.display().to_string(), "larger than 64 KiB"),
    ];
    for (path, says) in cases {
        let (code, stderr) = refused(&["run", &path, "-d", "1s", "--no-store"]);
        assert_eq!(code, Some(2), "{path}: {stderr}");
        assert!(stderr.contains(says), "{path}: {stderr}");
    }
}

#[test]
fn a_probe_that_cannot_run_at_the_policy_is_a_usage_error_naming_what_it_accepts() {
    let _guard = shared();
    let deadline = "d:100us:1ms";
    // A SCHED_DEADLINE thread cannot start partner tasks: these failed with exit 3
    // ("start the partner thread: Resource temporarily unavailable").
    for probe in [
        "msg",
        "msg:task=process",
        "sem",
        "signal:kind=queue",
        "preempt",
        "pi",
    ] {
        let (code, stderr) = refused(&[
            "run",
            "-c",
            "0",
            "-d",
            "200ms",
            "-q",
            "--no-store",
            "--no-audit",
            "-P",
            deadline,
            "--probe",
            probe,
        ]);
        assert_eq!(code, Some(2), "{probe}: {stderr}");
        assert!(
            stderr.contains("--priority: probe") && stderr.contains("it accepts -P f:"),
            "{probe}: {stderr}"
        );
    }
    let (code, stderr) = refused(&[
        "run", "-c", "0", "-d", "200ms", "-P", "f:2", "--probe", "pi",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("it accepts -P f:3 to f:99"), "{stderr}");
    // Those that start no partner run at it (degraded where it is not permitted).
    for probe in ["signal:kind=timer", "clock"] {
        let out = bounded_latlab()
            .args([
                "run",
                "-c",
                "0",
                "-d",
                "200ms",
                "-q",
                "--no-store",
                "--no-audit",
            ])
            .args(["-P", deadline, "--probe", probe])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{probe}: {out:?}");
    }
}

/// A tmpfs mounted read-only, unmounted on drop.
struct ReadOnlyMount(tempfile::TempDir);

impl ReadOnlyMount {
    /// `size` as tmpfs takes it (`4k`: no room for any load either).
    fn new(size: &str) -> ReadOnlyMount {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("ro,size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount a read-only tmpfs (needs root)");
        ReadOnlyMount(dir)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

#[test]
fn loads_in_a_read_only_directory_are_refused_as_read_only_not_as_out_of_space() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    // Full and read-only: the free-space check used to speak first ("no space").
    let full = ReadOnlyMount::new("4k");
    let roomy = ReadOnlyMount::new("200m");
    for mount in [&full, &roomy] {
        for load in ["disk", "cpu"] {
            let dir = mount.0.path().to_str().unwrap();
            let (code, stderr) = refused(&[
                "run",
                "-c",
                "0",
                "-d",
                "1s",
                "--no-store",
                "--load",
                load,
                "--load-dir",
                dir,
            ]);
            assert_eq!(code, Some(2), "{load} in {dir}: {stderr}");
            assert!(
                stderr.contains("--load-dir:") && stderr.contains("is on a read-only file system"),
                "{load} in {dir}: {stderr}"
            );
        }
    }
}

/// True when `text` holds anything that acts on a terminal (C0/C1 controls but line
/// breaks).
fn has_terminal_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n')
}

#[test]
fn terminal_escapes_in_scenario_phase_and_run_ids_never_reach_the_terminal() {
    use latlab_store::RunStore;
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store_arg = store.to_str().unwrap();
    let scenario = dir.path().join("evil.toml");
    std::fs::write(
        &scenario,
        "name = \"evil\\u001b[2Jname\"\ndescription = \"d\"\nduration = \"200ms\"\n\
         [[phase]]\nname = \"ph\\u001b]0;title\\u0007ase\"\n",
    )
    .unwrap();
    let run = bounded_latlab()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "-c",
            "0",
            "-q",
            "--no-audit",
        ])
        .args(["--store", store_arg])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{text}");
    assert!(text.contains("evil\u{FFFD}[2Jname"), "{text}");
    assert!(!has_terminal_control(&text), "{text:?}");
    // A stored run whose texts carry escapes (written by another tool, or before
    // imports were checked): listing and showing it print none of them.
    let mut stored =
        latlab_model::run::Run::from_json(include_str!("../../../../docs/example-run.json"))
            .unwrap();
    stored.id = "20260101T000000Z-\u{1b}[31mred".to_string();
    stored.host.as_mut().unwrap().hostname = "host\u{1b}[2J".to_string();
    stored.host.as_mut().unwrap().kernel_release = "6.1\u{9b}0m".to_string();
    latlab_store::SqliteStore::open(&store)
        .unwrap()
        .save(&stored)
        .unwrap();
    // Such a run is listed; showing it is refused (its id is not one latlab writes),
    // naming the field, and no escape reaches the terminal either way. It was added
    // last: the measured run is last~1.
    for (args, code) in [
        (vec!["runs", "--store", store_arg], 0),
        (vec!["show", "--store", store_arg, "last~1"], 0),
        (vec!["show", "--store", store_arg, "20260101"], 3),
    ] {
        let out = bounded_latlab().args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {text}{err}");
        assert!(!has_terminal_control(&text), "{args:?}: {text:?}");
        assert!(!has_terminal_control(&err), "{args:?}: {err:?}");
        if code == 3 {
            assert!(err.contains("id: "), "{err}");
        }
    }
}

#[test]
fn one_stream_and_one_run_are_counted_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../latlab-formats/tests/fixtures/import/cyclictest-1t.hist.txt");
    let import = bounded_latlab()
        .args(["import", "--store", store.to_str().unwrap()])
        .arg(&fixture)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&import.stdout);
    assert!(text.contains(": 1 stream, 500 samples"), "{text}");
    let runs = bounded_latlab()
        .args(["runs", "--store", store.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&runs.stdout);
    assert!(text.contains("\n1 run shown from "), "{text}");
}
