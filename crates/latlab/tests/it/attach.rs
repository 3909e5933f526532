//! `latlab attach` on an application's own periodic loop (examples/c/loop.c, built with
//! the installed library, and its Rust twin, latlab-periodic's example `loop`): live
//! lines, the Run it writes, and what a killed application leaves (nothing, once
//! swept).

use crate::common::{latlab, latlab_path, serial, shared, text};
use latlab_rt::periodic::shm::pages_of;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// latlab-periodic's example `loop`, built once per test run: cargo decides whether it
/// is up to date, so a binary left from an older tree is never run in its place.
pub(crate) fn rust_example() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let built = Command::new(cargo)
                // The workspace's examples, resolved as `cargo test --workspace` resolves
                // them (which built them already): `-p latlab-periodic` alone resolves
                // features otherwise and rebuilt it and cbindgen, for 10-30 s.
                .args(["build", "-q", "--locked", "--workspace", "--examples"])
                .status()
                .unwrap();
            assert!(built.success(), "cargo could not build the example `loop`");
            let path = latlab_path()
                .parent()
                .unwrap()
                .join("examples")
                .join("loop");
            assert!(path.exists(), "{} was not built", path.display());
            path
        })
        .clone()
}

/// Waits until process `pid` publishes its page.
pub(crate) fn wait_for_page(pid: u32) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(page) = pages_of(pid).pop() {
            return page;
        }
        assert!(Instant::now() < until, "process {pid} published no page");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last CPU this process may run on.
fn last_cpu() -> String {
    latlab_rt::affinity::allowed_cpus()
        .unwrap()
        .last()
        .unwrap()
        .to_string()
}

struct App(Child);

impl App {
    fn start(seconds: u32) -> App {
        App::start_program(&rust_example(), seconds)
    }

    fn start_program(program: &Path, seconds: u32) -> App {
        App(Command::new(program)
            .args([seconds.to_string(), last_cpu()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Its own count of cycles, from its last line.
    fn finish(mut self) -> u64 {
        let out = std::mem::replace(&mut self.0, Command::new("true").spawn().unwrap())
            .wait_with_output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let said = text(&out.stdout);
        said.split_whitespace()
            .find_map(|w| w.strip_prefix("own_cycles="))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no cycle count in {said:?}"))
    }
}

impl Drop for App {
    /// Stops the loop as a user would (SIGTERM: it ends its task, removing its page),
    /// SIGKILL after 2 s; a page still left is removed.
    fn drop(&mut self) {
        let pid = self.0.id();
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until && matches!(self.0.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        for page in pages_of(pid) {
            let _ = std::fs::remove_file(page);
        }
    }
}

/// The Run at `path`, as JSON, once latlab's own reader has taken it (its counts add
/// up: samples against histogram totals, and the rest of its checks).
fn read_run(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    if let Err(e) = crate::common::written_run(&text) {
        panic!("latlab cannot read the Run it wrote: {e}");
    }
    serde_json::from_str(&text).unwrap()
}

#[test]
fn attach_shows_the_c_loop_live_and_writes_a_run_of_its_own_cycles() {
    let dir = tempfile::tempdir().unwrap();
    // Built before the measuring slot is taken: building measures nothing.
    let c_loop = crate::c_abi::build_c_example(dir.path());
    let _guard = shared();
    let json = dir.path().join("app.json");
    let store = dir.path().join("runs.sqlite");
    let app = App::start_program(&c_loop, 2);
    let page = wait_for_page(app.pid());
    let out = latlab()
        .args(["attach", &app.pid().to_string(), "--interval", "300ms"])
        .arg("--json")
        .arg(&json)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let own = app.finish();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.contains("attached to task"), "{said}");
    assert!(said.contains("cycles ("), "no live line: {said}");
    assert!(said.contains("The task ended"), "{said}");
    assert!(!page.exists(), "{} left behind", page.display());

    let run = read_run(&json);
    let streams = run["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    let (wake, compute) = (&streams[0], &streams[1]);
    assert_eq!(wake["probe"], "application");
    assert_eq!(compute["probe"], "application-compute");
    assert_eq!(wake["samples"], own);
    assert_eq!(compute["samples"], own);
    let missed = wake["missed_periods"].as_u64().unwrap();
    let periods = wake["elapsed_ns"].as_u64().unwrap() / wake["period_ns"].as_u64().unwrap();
    assert_eq!(own + missed, periods);
    assert!(compute["missed_periods"].is_null());
    assert!(
        wake["stats"]["stddev_ns"].is_null(),
        "no sum of squares is kept"
    );
    // Stored like any other run: show, compare and report take it.
    let store_arg = store.to_str().unwrap();
    let shown = latlab()
        .args(["show", "last", "--store", store_arg])
        .output()
        .unwrap();
    assert!(text(&shown.stdout).contains("application-compute"));
    let report = dir.path().join("app.html");
    let reported = latlab()
        .args(["report", "last", "--store", store_arg, "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(
        reported.status.code(),
        Some(0),
        "{}",
        text(&reported.stderr)
    );
    // Its exports, by their real consumers.
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    crate::consumer_prometheus::assert_consumers_accept(&store, &run, "attach");
}

#[test]
fn detaching_leaves_the_task_running_and_says_the_figures_are_so_far() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("app.json");
    // What an attach killed while writing its --json left: swept by the next.
    let mut dead = Command::new("true").spawn().unwrap();
    dead.wait().unwrap();
    let left = dir
        .path()
        .join(format!(".app.json.latlab-{}.tmp", dead.id()));
    std::fs::write(&left, "{").unwrap();
    let app = App::start(30);
    let page = wait_for_page(app.pid());
    let out = latlab()
        .args([
            "attach",
            &app.pid().to_string(),
            "-d",
            "1s",
            "-q",
            "--no-store",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Detached while the task runs"));
    assert!(!left.exists(), "{} not swept", left.display());
    assert!(page.exists(), "the task goes on");
    let run = read_run(&json);
    assert_eq!(run["interrupted"], true);
    assert!(run["streams"][0]["samples"].as_u64().unwrap() > 0);
}

#[test]
fn a_killed_applications_page_is_swept_by_the_next_attach() {
    let _guard = serial();
    let mut app = App::start(30);
    let pid = app.pid();
    let page = wait_for_page(pid);
    app.0.kill().unwrap();
    app.0.wait().unwrap();
    assert!(page.exists(), "SIGKILL leaves the page");
    let out = latlab()
        .args(["attach", &pid.to_string(), "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("PID") && err.contains(&pid.to_string()),
        "{err}"
    );
    assert!(!page.exists(), "{} not swept", page.display());
}

#[test]
fn a_process_without_a_task_is_bad_input_naming_the_pid() {
    let out = latlab()
        .args(["attach", &std::process::id().to_string(), "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("publishes no periodic task"), "{err}");
    let out = latlab()
        .args([
            "attach",
            "1",
            "--task",
            "x",
            "--interval",
            "0s",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--interval"));
}

#[test]
fn an_unprivileged_task_degrades_loudly_and_attach_says_so() {
    let _guard = shared();
    if !std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
    {
        return; // only root can become nobody; as a user the task is unprivileged already
    }
    // A copy nobody may execute, removed with the directory.
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let example = dir.path().join("loop");
    std::fs::copy(rust_example(), &example).unwrap();
    std::fs::set_permissions(&example, std::fs::Permissions::from_mode(0o755)).unwrap();
    let app = Command::new("prlimit")
        .args([
            "--memlock=65536",
            "--",
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
        ])
        .args(["--clear-groups", "--"])
        .arg(&example)
        .args(["2", &last_cpu()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit and setpriv (util-linux) are needed: apt-get install util-linux");
    let app = App(app);
    wait_for_page(app.pid());
    let json = dir.path().join("app.json");
    let out = latlab()
        .args(["attach", &app.pid().to_string(), "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let said = text(&out.stdout);
    // A degraded Run is not a pass: untrusted, exit 5.
    assert_eq!(out.status.code(), Some(5), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("DEGRADED:") && said.contains("refused"),
        "{said}"
    );
    let mut app = app;
    let done = std::mem::replace(&mut app.0, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    assert!(done.status.success(), "{}", text(&done.stderr));
    let err = text(&done.stderr);
    assert!(
        err.contains("DEGRADED") && err.contains("memory not locked"),
        "{err}"
    );
    let run = read_run(&json);
    assert_eq!(run["degraded"], true);
    // The Run is the application's: its user, not latlab's.
    let nobody = Command::new("id").args(["-u", "nobody"]).output().unwrap();
    let nobody: u64 = text(&nobody.stdout).trim().parse().unwrap();
    assert_eq!(run["conditions"]["euid"], nobody);
    let codes: Vec<&str> = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    // The refused policy and the failed lock under the codes `latlab run` gives them.
    assert!(codes.contains(&"not-realtime"), "{codes:?}");
    assert!(codes.contains(&"memory-not-locked"), "{codes:?}");
    assert!(!codes.contains(&"non-realtime-policy"), "{codes:?}");
}

/// `/dev/shm` is writable by every user: a page another user made, or a FIFO at a
/// page's path, is refused at once, naming why, and nothing is kept.
#[test]
fn a_page_another_user_made_or_a_fifo_is_refused_at_once() {
    if !std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
    {
        panic!("this test gives a page to another user: run it as root (scripts/test does)");
    }
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    let page = latlab_rt::periodic::shm::path_of(pid, pid as i32);
    // Under `timeout`: a hang ends as exit 124, not as a test that never ends.
    let attach = || {
        Command::new("timeout")
            .arg("60")
            .arg(latlab_path())
            .args(["attach", &pid.to_string(), "--no-store"])
            .output()
            .unwrap()
    };
    // A forged page of the right size, another user's.
    std::fs::write(&page, vec![0u8; latlab_rt::periodic::shm::page_bytes()]).unwrap();
    std::os::unix::fs::chown(&page, Some(65_534), Some(65_534)).unwrap();
    let forged = attach();
    std::fs::remove_file(&page).unwrap();
    // A FIFO: opened for reading, it would wait for a writer for ever.
    assert!(Command::new("mkfifo")
        .arg(&page)
        .status()
        .unwrap()
        .success());
    let fifo = attach();
    std::fs::remove_file(&page).unwrap();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let err = text(&forged.stderr);
    assert_eq!(forged.status.code(), Some(3), "{err}");
    assert!(err.contains("another user made it"), "{err}");
    let err = text(&fifo.stderr);
    assert_eq!(fifo.status.code(), Some(3), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}
