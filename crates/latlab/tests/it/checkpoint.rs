//! Long runs that survive a kill: a run is in the store from its start, extended at
//! every checkpoint, and a run whose process is gone is found died by the next latlab
//! that opens the store, with everything up to its last checkpoint.

use crate::common::{latlab, latlab_path, shared, text};
use latlab_model::progress::{DeathCause, RunState};
use latlab_model::run::Run;
use latlab_model::stamp::parse_rfc3339;
use latlab_store::{RunStore, SqliteStore};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Kills the child on every way out of the test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The one run in the store at `path`, as read without writing.
fn the_run(path: &Path) -> Option<Run> {
    let store = SqliteStore::open_read_only(path).ok()?;
    let summary = store.summaries().ok()?.into_iter().next()?;
    store.load(&summary.id).ok()?
}

/// Copies the store (database and write-ahead log) as a crash would leave it.
fn crash_image(from: &Path, to: &Path) {
    for suffix in ["", "-wal"] {
        let source = format!("{}{suffix}", from.display());
        if Path::new(&source).exists() {
            std::fs::copy(&source, format!("{}{suffix}", to.display())).unwrap();
        }
    }
}

#[test]
fn a_run_killed_mid_way_is_kept_as_died_up_to_its_last_checkpoint() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let json = dir.path().join("run.json");
    // The shortest interval allowed: the test waits a few of them, not minutes.
    let every = Duration::from_secs(1);
    let child = std::process::Command::new(latlab_path())
        .args([
            "run",
            "-d",
            "30s",
            "-c",
            "0",
            "-p",
            "1ms",
            "--checkpoint",
            "1s",
            "-q",
        ])
        .arg("--store")
        .arg(&store)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);

    // In the store from its start, as running.
    let waiting = Instant::now();
    let begun = loop {
        if let Some(run) = the_run(&store) {
            break run;
        }
        assert!(waiting.elapsed() < Duration::from_secs(10), "never stored");
        std::thread::sleep(Duration::from_millis(50));
    };
    let progress = begun.progress.expect("a run kept from its start");
    assert_eq!(progress.state, RunState::Running);
    assert_eq!(progress.pid, child.0.id());
    assert_eq!(progress.checkpoints, 0);
    assert!(begun.streams.is_empty(), "nothing measured yet");

    // A crash image mid-run holds the last checkpoint.
    std::thread::sleep(Duration::from_millis(2500));
    let image = dir.path().join("image.sqlite");
    crash_image(&store, &image);
    let copied = the_run(&image).expect("the crash image opens and holds the run");
    let copied_progress = copied.progress.clone().unwrap();
    assert!(copied_progress.checkpoints >= 1, "{copied_progress:?}");
    assert!(copied.streams[0].samples > 0);

    std::thread::sleep(Duration::from_secs(2));
    child.0.kill().unwrap();
    let killed_at = SystemTime::now();
    child.0.wait().unwrap();

    // Any command that opens the store finds it died.
    let out = latlab()
        .args(["runs", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("died"), "{listed}");
    let run = the_run(&store).unwrap();
    let progress = run.progress.clone().unwrap();
    assert_eq!(progress.state, RunState::Died);
    assert_eq!(
        progress.death.as_ref().unwrap().cause,
        DeathCause::ProcessKilled
    );
    assert!(progress.checkpoints >= 3, "{progress:?}");

    // Everything up to the last checkpoint, counts that add up.
    let phase = &run.phases[0];
    let started = parse_rfc3339(phase.started_at.as_deref().unwrap()).unwrap();
    let lived = killed_at.duration_since(started).unwrap();
    let s = &run.streams[0];
    let period = s.period_ns.unwrap().0;
    let elapsed = s.elapsed_ns.unwrap().0;
    assert_eq!(elapsed % period, 0, "the span ends at a deadline");
    assert_eq!(
        s.samples + s.missed_periods.unwrap(),
        (elapsed / period) as u64,
        "every deadline up to the checkpoint is a sample or missed"
    );
    let kept = Duration::from_nanos(elapsed as u64);
    assert!(
        kept + every + Duration::from_secs(1) >= lived,
        "kept {kept:?} of {lived:?} (checkpoints every {every:?})"
    );
    assert_eq!(s.histogram.as_ref().unwrap().total, s.samples);

    // Shown, reported and exported, saying so.
    let out = latlab()
        .args(["show", "last", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("DIED: died at"),
        "{}",
        text(&out.stdout)
    );
    let report = dir.path().join("r.html");
    let out = latlab()
        .args(["report", "last", "-o"])
        .arg(&report)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&report).unwrap().contains("DIED"));

    // The --json file holds the last checkpoint too.
    let file = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(file.progress.unwrap().checkpoints >= 3);
}
