//! A central store that stalls never hangs a rig: a server that takes the connection
//! and never answers, one stopped in the middle of a run, a table locked elsewhere —
//! each time the run goes on, ends when it should, and is kept whole in the local
//! outbox, owed to the central store; the reading commands say the server is not
//! answering. The bounds below are hang guards, never measurements.

use crate::common::{await_handler, latlab, latlab_path, shared, text};
use crate::pg::{PgCluster, PASSWORD};
use latlab_model::run::Run;
use latlab_store::{PostgresStore, RunStore, SqliteStore};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longer than any wait latlab allows itself (connecting 5 s, a statement 7 s, a
/// lock 3 s, all of them once): a command still running after this hangs.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A `latlab run` in the background, its standard error in a file; killed (by its
/// pid) and reaped if the test ends before it does.
struct Running {
    child: Child,
    stderr: PathBuf,
}

impl Running {
    /// `latlab ARGS --store URL`, its outbox at `outbox`.
    fn start(outbox: &Path, url: &str, args: &[&str]) -> Running {
        let stderr = outbox.with_extension("stderr");
        let child = Command::new(latlab_path())
            .env("LATLAB_OUTBOX", outbox)
            .args(args)
            .args(["--store", url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Running { child, stderr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for its end (panics after [`HANG_GUARD`]): its exit code and standard
    /// error.
    fn finish(mut self) -> (i32, String) {
        let until = Instant::now() + HANG_GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < until,
                "latlab hangs: still running after {HANG_GUARD:?}; it said: {}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (status.code().unwrap_or(-1), err)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Sends `signal` (`-INT`) to process `pid`.
fn kill(signal: &str, pid: u32) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The one run the outbox at `outbox` owes to `url`'s store, as it ended: whole (its
/// final form; every period of its duration a sample or missed, or up to its end when
/// it was stopped), named `name`.
fn owed_whole(outbox: &Path, url: &str, name: &str) -> Run {
    let local = SqliteStore::open(outbox).unwrap();
    let owed = local.owed().unwrap();
    assert_eq!(owed.len(), 1, "{owed:?}");
    assert_eq!(owed[0].push_to, latlab_store::redact(url));
    let run = local.load(&owed[0].id).unwrap().unwrap();
    assert_eq!(run.name.as_deref(), Some(name));
    assert!(
        run.progress.is_none(),
        "kept as it ended: {:?}",
        run.progress
    );
    // A signal that came before the first phase leaves a Run without streams.
    assert!(run.interrupted || !run.streams.is_empty(), "{run:?}");
    for s in &run.streams {
        let periods = s.samples + s.missed_periods.unwrap();
        let period = s.period_ns.unwrap().0;
        match run.interrupted {
            // The last period may be cut by the signal.
            true => assert!(
                periods.abs_diff((s.elapsed_ns.unwrap().0 / period) as u64) <= 1,
                "{periods} periods in {:?}",
                s.elapsed_ns
            ),
            false => assert_eq!(
                periods,
                (run.plan.duration_ns.unwrap().0 / period) as u64,
                "every period of the duration"
            ),
        }
    }
    run
}

/// `latlab push` of the outbox at `outbox` to `url`, which must succeed: its output.
fn pushed(outbox: &Path, url: &str) -> std::process::Output {
    let out = latlab()
        .env("LATLAB_OUTBOX", outbox)
        .args(["push", "--store", url])
        .timeout(HANG_GUARD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    out
}

/// What a run says when its store went quiet: what happened, where the run went, how
/// it gets delivered — and no password.
fn assert_says_outbox(err: &str, server: &str) {
    assert!(
        err.contains(&format!(
            "the PostgreSQL server at {server} is not answering"
        )),
        "{err}"
    );
    assert!(
        err.contains("the run goes on into the local store") && err.contains("latlab push"),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
}

const RUN: [&str; 6] = ["run", "-c", "0", "-q", "--no-audit", "--name"];

#[test]
fn a_server_that_takes_the_connection_and_never_answers_hangs_nothing() {
    // Connections to a socket nobody accepts on are completed by the kernel, and what
    // latlab sends is acknowledged, but nothing ever answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("127.0.0.1:{}", silent.local_addr().unwrap().port());
    let url = format!("postgres://lab:{PASSWORD}@{server}/latency");
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    let (code, err) = {
        let _slot = shared();
        Running::start(&outbox, &url, &[&RUN[..], &["silent", "-d", "1s"]].concat()).finish()
    };
    assert_eq!(code, 0, "{err}");
    assert_says_outbox(&err, &server);
    assert!(owed_whole(&outbox, &url, "silent").streams[0].samples > 0);

    // The reading commands fail, naming the server; serve before it serves.
    for args in [&["runs"][..], &["serve", "--listen", "127.0.0.1:0"]] {
        let out = latlab()
            .env("LATLAB_OUTBOX", &outbox)
            .args(args)
            .args(["--store", &url])
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "the PostgreSQL server at {server} is not answering"
            )) && err.contains("while connecting"),
            "{args:?}: {err}"
        );
        assert!(!err.contains(PASSWORD), "{err}");
    }
}

#[test]
fn a_server_stopped_mid_run_leaves_the_run_whole_in_the_outbox() {
    let pg = PgCluster::start();
    let url = pg.url();
    drop(PostgresStore::open(&url).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    let (code, err) = {
        let _slot = shared();
        let run = Running::start(
            &outbox,
            &url,
            &[&RUN[..], &["frozen", "-d", "3s", "--checkpoint", "1s"]].concat(),
        );
        pg.await_row("frozen");
        let _frozen = pg.freeze();
        // A checkpoint is stuck on the stopped server.
        pg.await_unread_request();
        run.finish()
    };
    assert_eq!(code, 0, "{err}");
    assert_says_outbox(&err, &format!("127.0.0.1:{}", pg.port()));
    let run = owed_whole(&outbox, &url, "frozen");
    assert!(!run.interrupted && run.streams[0].samples > 0);
    // The server goes on: the central copy, kept from the start, is replaced.
    let out = pushed(&outbox, &url);
    assert!(
        text(&out.stdout).contains("updated in"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        pg.sql("SELECT coalesce(state, 'ended') FROM runs WHERE name = 'frozen'"),
        "ended"
    );
}

#[test]
fn ctrl_c_ends_a_run_whose_store_is_stuck_at_once() {
    let pg = PgCluster::start();
    let url = pg.url();
    drop(PostgresStore::open(&url).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let _slot = shared();
    // Stuck in a checkpoint's write, then in the final save (no checkpoints).
    for (name, checkpoint) in [("stuck-checkpoint", "1s"), ("stuck-save", "off")] {
        let outbox = dir.path().join(format!("{name}.sqlite"));
        let run = Running::start(
            &outbox,
            &url,
            &[&RUN[..], &[name, "-d", "60s", "--checkpoint", checkpoint]].concat(),
        );
        await_handler(run.pid(), libc::SIGINT);
        if checkpoint != "off" {
            pg.await_row(name);
        }
        let frozen = pg.freeze();
        if checkpoint != "off" {
            pg.await_unread_request();
        }
        kill("-INT", run.pid());
        let (code, err) = run.finish();
        drop(frozen);
        // Stopped before its duration: incomplete.
        assert_eq!(code, 4, "{name}: {err}");
        assert_says_outbox(&err, &format!("127.0.0.1:{}", pg.port()));
        assert!(err.contains("after the signal to stop"), "{name}: {err}");
        // Whole up to the signal (which may come before the first sample when there
        // are no checkpoints to wait for).
        let run = owed_whole(&outbox, &url, name);
        assert!(run.interrupted, "{name}");
    }
}

#[test]
fn a_table_locked_elsewhere_delays_a_runs_start_by_the_lock_timeout_only() {
    let pg = PgCluster::start();
    let url = pg.url();
    drop(PostgresStore::open(&url).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    let lock = pg.holding("BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE; SELECT 'ready';");
    let (code, err) = {
        let _slot = shared();
        Running::start(
            &outbox,
            &url,
            &[&RUN[..], &["locked-out", "-d", "1s"]].concat(),
        )
        .finish()
    };
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("canceling statement due to lock timeout")
            && err.contains("the run goes on into the local store")
            && err.contains("latlab push"),
        "{err}"
    );
    assert!(owed_whole(&outbox, &url, "locked-out").streams[0].samples > 0);

    // A reading command gives up as soon, and says why; the URL's options override
    // latlab's limits (here: no lock timeout, a statement timeout of 1 s).
    let runs = |url: &str| {
        let out = latlab()
            .args(["runs", "--store", url])
            .timeout(HANG_GUARD)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let (code, err) = runs(&url);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("due to lock timeout") && err.contains("pg_locks"),
        "{err}"
    );
    let (code, err) = runs(&format!(
        "{url}?options=-c%20lock_timeout%3D0%20-c%20statement_timeout%3D1s"
    ));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("due to statement timeout"), "{err}");

    // Unlocked: the run is pushed.
    drop(lock);
    pushed(&outbox, &url);
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs WHERE name = 'locked-out' AND state IS NULL"),
        "1"
    );
    assert_eq!(
        PostgresStore::open_read_only(&url)
            .unwrap()
            .summaries()
            .unwrap()
            .len(),
        1
    );
}
