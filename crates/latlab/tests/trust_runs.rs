//! Never lose a run, never leave anything behind: saves that fail, outputs that cannot
//! be written, signals, and what a killed latlab left. Real measurements here last a
//! second or two and assert ground truths the tests create (files, pids, ids), never
//! latencies.

use assert_cmd::Command;
use latlab_model::run::Run;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Measurements share two CPUs; running them one at a time keeps each within its span.
static MEASURING: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

fn latlab() -> Command {
    Command::cargo_bin("latlab").expect("binary built")
}

fn latlab_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("latlab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// True while process `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Waits up to `limit` for `path` to hold a line; returns it.
fn wait_for_line(path: &Path, limit: Duration) -> Option<String> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Ok(t) = std::fs::read_to_string(path) {
            if t.ends_with('\n') {
                return Some(t.trim().to_string());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Ends a process the test started (by its pid) if it is still there.
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            if running(*pid) {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
        }
    }
}

/// Measures for about a second on CPU 1 with `load`, its directories under `dir`, the
/// Run written to `dir/run.json`; returns the exit code, the Run and the output.
fn run_with_load(dir: &Path, load: &str) -> (i32, Run, String) {
    let _guard = serial();
    let json = dir.join("run.json");
    let out = latlab()
        .args([
            "run",
            "-c",
            "1",
            "-d",
            "1s",
            "-q",
            "--no-store",
            "--load",
            load,
        ])
        .arg("--load-dir")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let run =
        Run::from_json(&std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {all}")))
            .unwrap();
    (out.status.code().unwrap_or(-1), run, all)
}

#[test]
fn load_directories_are_private_to_their_owner() {
    let dir = tempfile::tempdir().unwrap();
    // The command runs inside its load's directory and writes that directory's mode
    // into the parent, which the test owns.
    let (code, _, out) = run_with_load(dir.path(), "exec:stat -c %a . > ../mode; sleep 30");
    assert_eq!(code, 0, "{out}");
    let mode = std::fs::read_to_string(dir.path().join("mode")).unwrap();
    assert_eq!(mode.trim(), "700");
}

#[test]
fn an_exec_load_that_ends_with_status_0_is_not_called_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = run_with_load(dir.path(), "exec:sleep 0.4");
    assert_eq!(code, 0, "{out}");
    let ended = &run.phases[0].loads[0].ended;
    assert_eq!(ended, "ended early: finished (exit status 0)");
    let warning = run
        .warnings
        .iter()
        .find(|w| w.code == "load-ended-early")
        .expect("the early end is a warning");
    assert!(!warning.message.contains("failed"), "{}", warning.message);
}

#[test]
fn an_exec_loads_whole_process_tree_ends_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    // A grandchild in a session (and so a process group) of its own, out of reach of
    // the load's process group.
    let load = format!(
        "exec:setsid sleep 300 & echo $! > {}; sleep 300",
        pid_file.display()
    );
    let (code, _, out) = run_with_load(dir.path(), &load);
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _cleanup = KillOnDrop(vec![grandchild]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !running(grandchild),
        "the exec load's grandchild {grandchild} outlived the run"
    );
}
