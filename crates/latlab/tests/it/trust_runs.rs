//! Never lose a run, never leave anything behind: saves that fail, outputs that cannot
//! be written, signals, and what a killed latlab left. Real measurements here last a
//! second or two and assert ground truths the tests create (files, pids, ids), never
//! latencies.

use crate::common::{fixture, latlab, latlab_path, serial, shared, text, RmdirOnDrop};

use latlab_model::run::Run;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

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
    let run = crate::common::written_run(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {all}")),
    )
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

/// A process as observed: its pid and start time (so a pid taken again later by
/// another process is not mistaken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Observed {
    pid: u32,
    start: u64,
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    // Field 22 of stat, the 20th after the command name.
    after.split_whitespace().nth(19)?.parse().ok()
}

fn observe(pid: u32) -> Option<Observed> {
    Some(Observed {
        pid,
        start: start_time(pid)?,
    })
}

/// True while the observed process (not a later one with its pid) exists and is not a
/// zombie.
fn still_there(p: Observed) -> bool {
    running(p.pid) && start_time(p.pid) == Some(p.start)
}

/// `pid` and every descendant of it, now.
fn process_tree(pid: u32) -> Vec<Observed> {
    let mut found = Vec::new();
    let mut pending = vec![pid];
    while let Some(pid) = pending.pop() {
        found.extend(observe(pid));
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pending.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    found
}

/// The SysV message queues and semaphore sets that the processes `pids` used last
/// (`msg 5`, `sem 7`): a message queue names its last sender and receiver in
/// /proc/sysvipc/msg, a semaphore its last operator in `ipcs -s -i`.
fn sysv_objects_of(pids: &[u32]) -> Vec<String> {
    let mut found = Vec::new();
    let msg = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
    for line in msg.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let by = |i: usize| f.get(i).and_then(|p| p.parse::<u32>().ok());
        if [by(5), by(6)]
            .into_iter()
            .flatten()
            .any(|p| pids.contains(&p))
        {
            found.push(format!("msg {}", f[1]));
        }
    }
    let sem = std::fs::read_to_string("/proc/sysvipc/sem").unwrap_or_default();
    for line in sem.lines().skip(1) {
        let Some(id) = line.split_whitespace().nth(1) else {
            continue;
        };
        let detail = std::process::Command::new("ipcs")
            .args(["-s", "-i", id])
            .output()
            .map(|o| text(&o.stdout))
            .unwrap_or_default();
        // The per-semaphore table's last column is the pid of the last operation.
        let last_pids: Vec<u32> = detail
            .lines()
            .skip_while(|l| !l.starts_with("semnum"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().last()?.parse().ok())
            .collect();
        if last_pids.iter().any(|p| pids.contains(p)) {
            found.push(format!("sem {id}"));
        }
    }
    found
}

/// Removes the SysV objects a failed test saw latlab use (`msg 5`, `sem 7`), if the
/// processes `pids` were still their last users.
struct RemoveSysvOnDrop {
    objects: Vec<String>,
    pids: Vec<u32>,
}

impl Drop for RemoveSysvOnDrop {
    fn drop(&mut self) {
        for object in sysv_objects_of(&self.pids) {
            if !self.objects.contains(&object) {
                continue;
            }
            if let Some((kind, id)) = object.split_once(' ') {
                let flag = if kind == "msg" { "-q" } else { "-s" };
                let _ = std::process::Command::new("ipcrm")
                    .args([flag, id])
                    .status();
            }
        }
    }
}

/// Starts a 30 s run with loads (one an exec: whose grandchild leaves its process
/// group) and `probe`, whose partner is a forked process; hangs it up once every part
/// runs; the run must be saved and nothing it started may be left.
fn hang_up_a_run_with(probe: &str) {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let loads = dir.path().join("loads");
    std::fs::create_dir(&loads).unwrap();
    let grandchild_file = dir.path().join("grandchild.pid");
    let exec = format!(
        "exec:setsid sleep 300 & echo $! > {}; sleep 300",
        grandchild_file.display()
    );
    let child = std::process::Command::new(latlab_path())
        .args(["run", "-c", "1", "-d", "30s", "--probe", probe])
        .args([
            "--load",
            "hackbench:groups=2,fds=4",
            "--load",
            "disk:size=16M",
        ])
        .args(["--load", "launch", "--load", &exec])
        .arg("--load-dir")
        .arg(&loads)
        .arg("--store")
        .arg(&store)
        // A session of its own, as `setsid` gives it: the hang-up reaches only latlab.
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let latlab_pid = child.id();
    let mut cleanup = KillOnDrop(vec![latlab_pid]);
    let grandchild: u32 = wait_for_line(&grandchild_file, Duration::from_secs(15))
        .expect("the exec load starts")
        .parse()
        .unwrap();
    cleanup.0.push(grandchild);
    // Loads run; give the probe's partner a second of messages.
    crate::common::await_handler(latlab_pid, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(1200));
    let mut observed = process_tree(latlab_pid);
    observed.extend(observe(grandchild));
    let pids: Vec<u32> = observed.iter().map(|p| p.pid).collect();
    cleanup.0.extend(&pids);
    let ipc = sysv_objects_of(&pids);
    let _ipc_cleanup = RemoveSysvOnDrop {
        objects: ipc.clone(),
        pids: pids.clone(),
    };
    assert!(
        !ipc.is_empty(),
        "{probe}: the probe's SysV object is not visible"
    );
    assert!(
        observed.len() > 6,
        "{probe}: latlab, its 4 load workers, their processes and the partner: {observed:?}"
    );

    let rc = std::process::Command::new("kill")
        .args(["-HUP", &latlab_pid.to_string()])
        .status()
        .unwrap();
    assert!(rc.success());
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    // Hung up before its 30 s: incomplete (exit 4), and kept.
    assert_eq!(out.status.code(), Some(4), "{probe}: {said}");

    let left: Vec<Observed> = observed
        .iter()
        .copied()
        .filter(|p| p.pid != latlab_pid && still_there(*p))
        .collect();
    assert_eq!(left, vec![], "{probe}: processes left behind");
    let ipc_left: Vec<String> = sysv_objects_of(&pids)
        .into_iter()
        .filter(|o| ipc.contains(o))
        .collect();
    assert_eq!(ipc_left, Vec::<String>::new(), "{probe}: SysV objects left");
    let dirs: Vec<_> = std::fs::read_dir(&loads)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        dirs,
        Vec::<std::ffi::OsString>::new(),
        "{probe}: load directories left"
    );

    let export = latlab()
        .args(["export", "last", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(export.status.success(), "{probe}: no run saved: {said}");
    let run = crate::common::written_run(&text(&export.stdout)).unwrap();
    assert!(run.interrupted, "{probe}");
    assert_eq!(run.phases[0].loads.len(), 4, "{probe}");
    assert!(run.streams[0].samples > 0, "{probe}");
}

#[test]
fn sighup_saves_the_run_and_leaves_nothing_behind() {
    hang_up_a_run_with("msg:transport=sysv,task=process");
    hang_up_a_run_with("sem:kind=sysv,task=process");
}

#[test]
fn sigquit_stops_cleanly_and_keeps_the_run() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let child = std::process::Command::new(latlab_path())
        .args(["run", "-c", "0", "-d", "30s", "-q", "--no-store", "--json"])
        .arg(&json)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _cleanup = KillOnDrop(vec![child.id()]);
    crate::common::await_handler(child.id(), libc::SIGQUIT);
    std::thread::sleep(Duration::from_millis(1000));
    let rc = std::process::Command::new("kill")
        .args(["-QUIT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(rc.success());
    let out = child.wait_with_output().unwrap();
    // Stopped before its 30 s: incomplete (exit 4).
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
}

#[test]
fn a_display_nobody_reads_does_not_end_the_run() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let mut child = std::process::Command::new(latlab_path())
        .args(["run", "-c", "0", "-d", "1s", "--store"])
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _cleanup = KillOnDrop(vec![child.id()]);
    // The reader goes away before latlab writes a word.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = latlab()
        .args(["export", "last", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "the run was not saved: {}",
        text(&listed.stderr)
    );
    let run = crate::common::written_run(&text(&listed.stdout)).unwrap();
    assert!(!run.interrupted);
}

/// A store in `dir` holding one short run.
fn store_with_a_run(dir: &Path) -> PathBuf {
    let _guard = shared();
    let store = dir.join("runs.sqlite");
    let out = latlab()
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "200ms",
            "-q",
            "--no-audit",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    store
}

fn stored_ids(store: &Path) -> Vec<String> {
    let out = latlab()
        .args(["export", "last", "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the store is unusable: {}",
        text(&out.stderr)
    );
    vec![crate::common::written_run(&text(&out.stdout)).unwrap().id]
}

#[test]
fn an_output_path_that_is_the_store_is_refused() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let before = stored_ids(&store);
    let wal = dir.path().join("runs.sqlite-wal");
    let attempts: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "export".into(),
            "last".into(),
            "--format".into(),
            "json".into(),
            "-o".into(),
            store.clone().into(),
        ],
        vec![
            "export".into(),
            "last".into(),
            "--format".into(),
            "csv".into(),
            "-o".into(),
            wal.clone().into(),
        ],
        vec![
            "report".into(),
            "last".into(),
            "--format".into(),
            "html".into(),
            "-o".into(),
            store.clone().into(),
        ],
        vec![
            "run".into(),
            "-c".into(),
            "0".into(),
            "-d".into(),
            "100ms".into(),
            "-q".into(),
            "--json".into(),
            store.clone().into(),
        ],
        vec![
            "compare".into(),
            "last".into(),
            "last".into(),
            "--json".into(),
            store.clone().into(),
        ],
        vec!["runs".into(), "--json".into(), wal.clone().into()],
        vec![
            "show".into(),
            "last".into(),
            "--json".into(),
            store.clone().into(),
        ],
    ];
    for args in attempts {
        let out = latlab()
            .args(&args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("run store"), "{args:?}: {err}");
        assert_eq!(stored_ids(&store), before, "{args:?} touched the store");
    }
}

#[test]
fn a_report_that_cannot_be_written_whole_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let report = dir.path().join("report.html");
    std::fs::write(&report, "the report reviewed yesterday\n").unwrap();
    // No file may grow past 40 kB (SQLite's shared-memory index needs 32 kB): the
    // report, larger, is cut short by the kernel, which kills latlab (SIGXFSZ).
    const LIMIT: u64 = 40_000;
    let whole = latlab()
        .args(["report", "last", "--format", "html", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        whole.stdout.len() as u64 > LIMIT,
        "the report must exceed the limit"
    );
    let out = std::process::Command::new("prlimit")
        .arg(format!("--fsize={LIMIT}"))
        .arg(latlab_path())
        .args(["report", "last", "-o"])
        .arg(&report)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        std::fs::read_to_string(&report).unwrap(),
        "the report reviewed yesterday\n"
    );
}

fn export_json(store: &Path) -> String {
    let out = latlab()
        .args(["export", "last", "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn importing_an_edited_run_never_replaces_the_stored_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let measured = export_json(&store);
    let id = crate::common::written_run(&measured).unwrap().id;
    let mut edited = crate::common::written_run(&measured).unwrap();
    edited.host.as_mut().unwrap().hostname = "edited".into();
    let file = dir.path().join("edited.json");
    std::fs::write(&file, edited.to_json_pretty()).unwrap();
    let out = latlab()
        .arg("import")
        .arg(&file)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&id) && err.contains("edited.json"), "{err}");
    assert_eq!(export_json(&store), measured, "the stored run changed");
}

#[test]
fn importing_the_same_content_twice_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    // The stored run, exported and imported unchanged, and a foreign file twice.
    let exported = dir.path().join("run.json");
    std::fs::write(&exported, export_json(&store)).unwrap();
    let foreign = fixture("cyclictest-2t.json");
    let copy = dir.path().join("copy-of-cyclictest.json");
    std::fs::copy(&foreign, &copy).unwrap();
    let import = |files: &[&Path]| {
        let out = latlab()
            .arg("import")
            .args(files)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let first = import(&[&exported, &foreign]);
    assert!(
        first.contains("which the store holds already: skipped"),
        "{first}"
    );
    let foreign_id = first
        .lines()
        .find(|l| l.starts_with(&format!("imported {}", foreign.display())))
        .and_then(|l| l.split(" as ").nth(1))
        .and_then(|l| l.split(':').next())
        .expect("the foreign file is imported")
        .to_string();
    let again = import(&[&copy]);
    assert!(
        again.contains(&format!(
            "imported before (same content) as run {foreign_id}"
        )),
        "{again}"
    );
    let listed = latlab()
        .args(["runs", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    // A row starts with a run id (`20261123T090534Z-1be77d`); the footer names the
    // store's path, which may contain a `Z` too.
    let ids = text(&listed.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|id| id.len() > 16 && id.as_bytes()[8] == b'T' && id.contains("Z-"))
        })
        .count();
    assert_eq!(
        ids,
        2,
        "the measured run and one import: {}",
        text(&listed.stdout)
    );
}

/// Runs latlab as the unprivileged user nobody; `None` when this test cannot switch
/// users (not root).
fn as_nobody(args: &[&std::ffi::OsStr]) -> Option<std::process::Output> {
    if effective_uid() != 0 {
        return None;
    }
    Some(
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(latlab_path())
            .args(args)
            .output()
            .unwrap(),
    )
}

/// The test's effective user id, from /proc (no unsafe code here).
fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

#[test]
fn a_store_that_cannot_be_written_is_still_read_and_says_why() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    // Owned by root, readable by all: nobody may read it, not write it, nor its directory.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let store = store_with_a_run(dir.path());
    let store_arg = store.as_os_str();
    let Some(listed) = as_nobody(&["runs".as_ref(), "--store".as_ref(), store_arg]) else {
        eprintln!("skipped: switching to an unprivileged user needs root");
        return;
    };
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).contains("1 run shown"),
        "{}",
        text(&listed.stdout)
    );
    let reported = as_nobody(&[
        "report".as_ref(),
        "last".as_ref(),
        "--store".as_ref(),
        store_arg,
    ])
    .unwrap();
    assert_eq!(
        reported.status.code(),
        Some(0),
        "{}",
        text(&reported.stderr)
    );
    let measured = as_nobody(&[
        "run".as_ref(),
        "-d".as_ref(),
        "100ms".as_ref(),
        "--store".as_ref(),
        store_arg,
    ])
    .unwrap();
    let err = text(&measured.stderr);
    assert_eq!(measured.status.code(), Some(2), "{err}");
    assert!(err.contains("not writable for this user"), "{err}");
    assert!(!err.contains("not a usable"), "{err}");
}

/// The one `latlab-run-*.json` file in `dir`.
fn fallback_in(dir: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("latlab-run-")
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one fallback file in {}: {found:?}",
        dir.display()
    );
    found[0].clone()
}

#[test]
fn a_failed_save_keeps_the_run_in_a_file_to_import() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    // A store that refuses every new run, as a full disk or a lock held too long does.
    latlab()
        .args(["import"])
        .arg(fixture("cyclictest-2t.json"))
        .arg("--store")
        .arg(&store)
        .assert()
        .success();
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON runs
             BEGIN SELECT RAISE(ABORT, 'no room for another run'); END;",
        )
        .unwrap();
    let out = {
        let _guard = shared();
        latlab()
            .args([
                "run",
                "-c",
                "0",
                "-d",
                "300ms",
                "-q",
                "--no-audit",
                "--store",
            ])
            .arg(&store)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let fallback = fallback_in(dir.path());
    assert!(
        err.contains(&format!("latlab import {}", fallback.display())),
        "{err}"
    );
    let run = crate::common::written_run(&std::fs::read_to_string(&fallback).unwrap()).unwrap();
    assert!(run.streams[0].samples > 0);
    // The way out the message gives works once the store takes runs again.
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch("DROP TRIGGER refuse;")
        .unwrap();
    latlab()
        .arg("import")
        .arg(&fallback)
        .arg("--store")
        .arg(&store)
        .assert()
        .success();
    assert_eq!(
        crate::common::written_run(&export_json(&store)).unwrap().id,
        run.id
    );
}

/// `latlab run --no-store --json -` in `dir`, its standard output a pipe to this test.
fn json_to_a_pipe(dir: &Path) -> std::process::Child {
    std::process::Command::new(latlab_path())
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "300ms",
            "-q",
            "--no-audit",
            "--no-store",
        ])
        .args(["--json", "-"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_run_neither_stored_nor_written_whole_is_an_error_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let _guard = shared();
    let mut child = json_to_a_pipe(dir.path());
    let _cleanup = KillOnDrop(vec![child.id()]);
    // The reader takes nothing and goes away, as `head -c1` does after one byte.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("neither stored nor written whole"), "{err}");
    let fallback = fallback_in(dir.path());
    crate::common::written_run(&std::fs::read_to_string(fallback).unwrap()).unwrap();
}

#[test]
fn a_json_pipe_whose_reader_leaves_after_one_byte_keeps_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let _guard = shared();
    // `latlab run --no-store --json - | head -c1`: the whole Run fits in the pipe's
    // buffer, so writing it succeeds; the reader takes one byte and leaves.
    let mut child = json_to_a_pipe(dir.path());
    let _cleanup = KillOnDrop(vec![child.id()]);
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    assert_eq!(&first, b"{");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("left without reading the whole Run"), "{err}");
    let fallback = fallback_in(dir.path());
    crate::common::written_run(&std::fs::read_to_string(fallback).unwrap()).unwrap();
}

#[test]
fn what_a_killed_run_left_is_swept_at_the_next_start() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let loads = dir.path().join("loads");
    std::fs::create_dir(&loads).unwrap();
    let json = dir.path().join("out.json");
    let child = std::process::Command::new(latlab_path())
        .args(["run", "-c", "1", "-d", "30s", "-q", "--no-store"])
        .args(["--probe", "msg:transport=sysv,task=process"])
        .args(["--load", "disk:size=16M", "--load-dir"])
        .arg(&loads)
        .arg("--json")
        .arg(&json)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let latlab_pid = child.id();
    let mut cleanup = KillOnDrop(vec![latlab_pid]);
    let until = Instant::now() + Duration::from_secs(10);
    let mut ipc = Vec::new();
    let mut pids = Vec::new();
    while ipc.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
        pids = process_tree(latlab_pid).iter().map(|p| p.pid).collect();
        ipc = sysv_objects_of(&pids);
    }
    cleanup.0.extend(&pids);
    let _ipc_cleanup = RemoveSysvOnDrop {
        objects: ipc.clone(),
        pids: pids.clone(),
    };
    assert!(!ipc.is_empty(), "the probe's queue is not visible");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &latlab_pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = child.wait_with_output();
    // What it left: its load directory, its queue, the temporary file beside --json.
    let temp = dir
        .path()
        .join(format!(".out.json.latlab-{latlab_pid}.tmp"));
    assert!(temp.exists(), "the --json temporary file");
    assert_eq!(
        std::fs::read_dir(&loads).unwrap().count(),
        1,
        "the load directory"
    );
    assert_eq!(sysv_objects_of(&pids), ipc);

    let next = latlab()
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "100ms",
            "-q",
            "--no-store",
            "--no-audit",
        ])
        .arg("--load-dir")
        .arg(&loads)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = text(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{err}");
    assert!(
        err.contains("removed what latlab runs that were killed left"),
        "{err}"
    );
    assert!(!temp.exists(), "{err}");
    assert_eq!(std::fs::read_dir(&loads).unwrap().count(), 0, "{err}");
    assert_eq!(sysv_objects_of(&pids), Vec::<String>::new(), "{err}");
}

#[test]
fn a_temporary_file_a_killed_report_left_is_swept_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let report = dir.path().join("report.html");
    // Killed by the kernel while writing (SIGXFSZ past 40 kB), as by a SIGKILL.
    let killed = std::process::Command::new("prlimit")
        .arg("--fsize=40000")
        .arg(latlab_path())
        .args(["report", "last", "-o"])
        .arg(&report)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(!killed.status.success());
    let temps = || -> Vec<PathBuf> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".tmp"))
            .collect()
    };
    assert_eq!(temps().len(), 1, "the killed report's temporary file");
    let next = latlab()
        .args(["report", "last", "-o"])
        .arg(&report)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let err = text(&next.stderr);
    assert!(next.status.success(), "{err}");
    assert!(
        err.contains("removed what latlab runs that were killed left"),
        "{err}"
    );
    assert_eq!(temps(), Vec::<PathBuf>::new());
}

#[test]
fn a_json_output_that_fails_is_an_error_even_when_the_run_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let out = {
        let _guard = shared();
        latlab()
            .args([
                "run",
                "-c",
                "0",
                "-d",
                "200ms",
                "-q",
                "--no-audit",
                "--store",
            ])
            .arg(&store)
            .args(["--json", "/dev/full"])
            .output()
            .unwrap()
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--json"), "{err}");
    crate::common::written_run(&export_json(&store)).unwrap();
}

#[test]
fn the_tracefs_instance_of_a_killed_run_is_removed_by_the_next() {
    let _guard = serial();
    let instances = latlab_rt::tracefs::tracefs_root()
        .expect("tracefs is not mounted: run the tests as root after `mount -t tracefs nodev /sys/kernel/tracing`")
        .join("instances");
    // Made as a latlab run makes it, named after the pid of its maker, then SIGKILLed.
    let mut child = std::process::Command::new("sh")
        .args(["-c", "mkdir \"$0/latlab-$$\" && exec sleep 60"])
        .arg(&instances)
        .spawn()
        .unwrap();
    let left = RmdirOnDrop(instances.join(format!("latlab-{}", child.id())));
    let mut cleanup = KillOnDrop(vec![child.id()]);
    let until = Instant::now() + Duration::from_secs(5);
    while !left.0.is_dir() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(left.0.is_dir(), "the child made no {}", left.0.display());
    child.kill().unwrap();
    child.wait().unwrap();
    cleanup.0.clear();

    let next = latlab()
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "100ms",
            "-q",
            "--no-store",
            "--no-audit",
        ])
        .output()
        .unwrap();
    let err = text(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{err}");
    assert!(
        err.contains("removed what latlab runs that were killed left")
            && err.contains(&format!("tracefs instance {}", left.0.display())),
        "{err}"
    );
    assert!(!left.0.exists(), "{err}");
}

/// A 30 s run in `dir` with an exec load whose grandchild leaves the group in a session
/// of its own; returns latlab and, once the load runs, that grandchild's pid.
fn run_with_an_escaping_load(dir: &Path) -> (std::process::Child, u32) {
    let pid_file = dir.join("grandchild.pid");
    let load = format!(
        "exec:setsid sleep 300 & echo $! > {}; sleep 300",
        pid_file.display()
    );
    let child = std::process::Command::new(latlab_path())
        .args(["run", "-c", "1", "-d", "30s", "-q", "--no-store", "--load"])
        .arg(&load)
        .arg("--load-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut started = KillOnDrop(vec![child.id()]);
    let grandchild = wait_for_line(&pid_file, Duration::from_secs(20))
        .expect("the exec load starts")
        .trim()
        .parse()
        .unwrap();
    started.0.clear();
    (child, grandchild)
}

#[test]
fn a_sigkilled_runs_exec_load_ends_with_it_grandchildren_too() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, grandchild) = run_with_an_escaping_load(dir.path());
    let latlab = child.id();
    let tree = process_tree(latlab);
    let mut cleanup = KillOnDrop(tree.iter().map(|p| p.pid).collect());
    cleanup.0.push(grandchild);
    let grandchild = observe(grandchild).expect("the grandchild runs");
    assert!(
        tree.len() >= 3,
        "latlab, its load worker, the command: {tree:?}"
    );
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &latlab.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    // Everything the run started ends within a few seconds of it, unsignalled by us.
    let until = Instant::now() + Duration::from_secs(5);
    let left = |tree: &[Observed]| -> Vec<Observed> {
        tree.iter()
            .chain([&grandchild])
            .filter(|p| **p != tree[0] && still_there(**p))
            .copied()
            .collect()
    };
    while !left(&tree).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        left(&tree),
        Vec::<Observed>::new(),
        "outlived a SIGKILLed latlab"
    );
}

/// A load's process that escaped everything (its own session, and its latlab and load
/// worker killed at once, so nobody was left to end it) is ended by the next run.
#[test]
fn the_next_run_ends_what_a_killed_runs_load_left_running() {
    // Whole: any other run's sweep would end the orphan before this test's next run.
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, escaped) = run_with_an_escaping_load(dir.path());
    let mut cleanup = KillOnDrop(vec![escaped]);
    let escaped = observe(escaped).expect("the escaped process runs");
    // Everything but the escaped process, killed at once: no worker lives to end it.
    let tree: Vec<u32> = process_tree(child.id()).iter().map(|p| p.pid).collect();
    cleanup.0.extend(&tree);
    for pid in tree.iter().filter(|p| **p != escaped.pid) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    child.wait().unwrap();
    // Killed: their pids are no longer ours to signal.
    cleanup.0.retain(|pid| *pid == escaped.pid);
    assert!(still_there(escaped), "the escaped process outlived its run");
    let out = latlab()
        .args(["run", "-c", "0", "-d", "100ms", "-q", "--no-store"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "process {} (sleep) of a load of latlab pid",
            escaped.pid
        )),
        "{err}"
    );
    let until = Instant::now() + Duration::from_secs(5);
    while still_there(escaped) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!still_there(escaped), "the next run left it running: {err}");
}

#[test]
fn a_run_kept_in_a_file_after_its_final_save_failed_imports_over_its_checkpoint() {
    use latlab_store::RunStore;
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_a_run(dir.path());
    let whole = crate::common::written_run(&export_json(&store)).unwrap();
    // The store held the run only as its checkpoint, of a process long gone.
    let partial = dir.path().join("partial.sqlite");
    let mut checkpoint = whole.clone();
    checkpoint.progress = Some(latlab_model::progress::Progress {
        state: latlab_model::progress::RunState::Running,
        pid: u32::MAX - 1,
        pid_start_ticks: None,
        boot_id: None,
        rig: None,
        checkpoints: 1,
        checkpoint_at: whole.started_at.clone(),
        checkpoint_every_ns: 1_000_000_000,
        death: None,
    });
    latlab_store::SqliteStore::open(&partial)
        .unwrap()
        .save(&checkpoint)
        .unwrap();
    let file = dir.path().join("kept.json");
    std::fs::write(&file, whole.to_json_pretty()).unwrap();
    let out = latlab()
        .arg("import")
        .arg(&file)
        .arg("--store")
        .arg(&partial)
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.contains("replaces the checkpoint"), "{said}");
    let stored = crate::common::written_run(&export_json(&partial)).unwrap();
    assert_eq!(stored, whole, "the whole run, in place of its checkpoint");
    assert_eq!(
        every_id(&partial),
        std::slice::from_ref(&whole.id),
        "one run, not two"
    );
}

/// Unmounts a tmpfs this test mounted, also when it fails.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The whole path, on a real full file system: a long run checkpoints into a store on
/// a small tmpfs, the tmpfs fills, the final save fails, the run is kept in a file, and
/// the import the message advises gives one complete run in place of the checkpoint.
#[test]
fn a_run_whose_final_save_met_a_full_disk_imports_whole_as_advised() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&disk)
        .status()
        .unwrap();
    assert!(
        mounted.success(),
        "mounting a tmpfs needs root (scripts/test runs as root)"
    );
    let _unmount = Unmount(disk.clone());
    let store = disk.join("runs.sqlite");
    let _guard = shared();
    let run = std::process::Command::new(latlab_path())
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "4s",
            "--checkpoint",
            "1s",
            "-q",
            "--no-audit",
        ])
        .arg("--store")
        .arg(&store)
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut cleanup = KillOnDrop(vec![run.id()]);
    // Once the first checkpoint is in the store, the disk fills.
    let until = Instant::now() + Duration::from_secs(20);
    while every_checkpoint_id(&store).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        every_checkpoint_id(&store).len(),
        1,
        "a checkpoint was saved"
    );
    let filled = std::process::Command::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", disk.join("filler").display()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!filled.success(), "dd ends when the disk is full");
    let out = run.wait_with_output().unwrap();
    cleanup.0.clear();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let kept = fallback_in(dir.path());
    assert!(
        err.contains(&format!("latlab import {}", kept.display())),
        "{err}"
    );
    // Room again; the advised import.
    std::fs::remove_file(disk.join("filler")).unwrap();
    let import = latlab()
        .arg("import")
        .arg(&kept)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let said = text(&import.stdout);
    assert_eq!(
        import.status.code(),
        Some(0),
        "{said}{}",
        text(&import.stderr)
    );
    assert!(said.contains("replaces the checkpoint"), "{said}");
    let whole = Run::from_json(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let stored = Run::from_json(&export_json(&store)).unwrap();
    assert_eq!(stored, whole, "the whole run, in place of its checkpoint");
    assert!(stored.progress.is_none(), "{:?}", stored.progress);
    assert_eq!(
        every_id(&store),
        std::slice::from_ref(&whole.id),
        "one run, not two"
    );
}

/// The ids of the runs in `store` (none when it cannot be read yet).
fn every_checkpoint_id(store: &Path) -> Vec<String> {
    let out = latlab()
        .args(["runs", "--json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap_or_default();
    listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some(r["id"].as_str()?.to_string()))
        .collect()
}

#[test]
fn a_histogram_imported_again_in_ns_replaces_its_reading_in_us() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let file = fixture("cyclictest-overflow-ns.hist.txt");
    let import = |extra: &[&str]| {
        let out = latlab()
            .arg("import")
            .arg(&file)
            .args(extra)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    import(&[]);
    let as_us = crate::common::written_run(&export_json(&store)).unwrap();
    // The same content read the same way: skipped.
    assert!(import(&[]).contains("read the same way: skipped"));
    let said = import(&["--unit", "ns"]);
    assert!(said.contains("read another way this time"), "{said}");
    let as_ns = crate::common::written_run(&export_json(&store)).unwrap();
    assert_eq!(
        every_id(&store),
        std::slice::from_ref(&as_us.id),
        "replaced, not added"
    );
    let max = |r: &Run| r.streams[0].stats.max_ns.unwrap().0;
    assert_eq!(max(&as_us), max(&as_ns) * 1000, "read in ns, a thousandth");
}

/// The id of every run in `store` (`latlab runs --json` lists them all).
fn every_id(store: &Path) -> Vec<String> {
    let out = latlab()
        .args(["runs", "--json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}
