//! Bad input gets a clear usage error (exit 2) naming what is wrong — never a hang, a
//! runaway read, a silent choice between conflicting values, or raw terminal escapes.

use assert_cmd::Command;
use std::time::Duration;

fn latlab() -> Command {
    let mut command = Command::cargo_bin("latlab").expect("binary built");
    // A refusal takes milliseconds; a hang or a runaway read must not stall the suite.
    command.timeout(Duration::from_secs(20));
    command
}

/// Runs latlab; returns the exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = latlab().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_scenario_that_is_a_device_a_fifo_or_huge_is_refused_without_reading_it() {
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
