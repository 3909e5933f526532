//! The PostgreSQL store against a real server: the SQLite store's rules hold there
//! too, several writers at once, and the farm's fall-back and push through the binary.

use crate::common::{fixture, latlab, text};
use crate::pg::{PgCluster, PASSWORD};
use latlab_model::progress::{Progress, RunState};
use latlab_model::run::Run;
use latlab_store::{PostgresStore, RunFilter, RunStore, StoreError};

/// A Run from an imported fixture, with `id` and `host`.
fn a_run(id: &str, host: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let out = latlab()
        .args([
            "import",
            fixture("cyclictest-2t.json").to_str().unwrap(),
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = latlab()
        .args(["show", "last", "--json", "-", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let mut run = crate::common::written_run(&text(&out.stdout)).unwrap();
    run.id = id.to_string();
    let mut value = serde_json::to_value(&run).unwrap();
    value["host"] = serde_json::json!({"hostname": host, "kernel_release": "6.18.0-rt"});
    match Run::from_json(&value.to_string()) {
        Ok(with_host) => with_host,
        Err(_) => {
            // The host record has more required fields: keep the fixture's, renamed.
            if let Some(h) = run.host.as_mut() {
                h.hostname = host.to_string();
            }
            run
        }
    }
}

fn running(mut run: Run, pid: u32) -> Run {
    run.progress = Some(Progress {
        state: RunState::Running,
        pid,
        pid_start_ticks: None,
        boot_id: None,
        rig: None,
        checkpoints: 1,
        checkpoint_at: Some("2026-11-23T12:00:10.000Z".into()),
        checkpoint_every_ns: 10_000_000_000,
        death: None,
    });
    run
}

#[test]
fn the_postgres_store_keeps_the_sqlite_stores_rules() {
    let pg = PgCluster::start();
    let mut store = PostgresStore::open(&pg.url()).unwrap();
    assert!(!store.location().contains(PASSWORD), "{}", store.location());
    let run = a_run("20261123T120000Z-aaaaaa", "rig01");
    store.save(&run).unwrap();
    assert_eq!(
        store.load(&run.id).unwrap().as_ref(),
        Some(&run),
        "round trip"
    );
    let dup = store.save(&run).unwrap_err();
    assert!(matches!(dup, StoreError::Duplicate { .. }), "{dup}");
    let ended = store.update(&run).unwrap_err();
    assert!(matches!(ended, StoreError::NotRunning { .. }), "{ended}");
    let absent = store
        .update(&a_run("20261123T120000Z-bbbbbb", "rig01"))
        .unwrap_err();
    assert!(matches!(absent, StoreError::NotFound { .. }), "{absent}");

    // Running: extended, then ended; recovery judges only this machine's runs.
    let this_host = latlab_store::this_host().unwrap();
    let mine = running(a_run("20261123T120001Z-cccccc", &this_host), 1);
    let other = running(a_run("20261123T120002Z-dddddd", "another-rig"), 1);
    store.save(&mine).unwrap();
    store.save(&other).unwrap();
    let found = store.recover(Some("this-boot"), &|_| false).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, mine.id);
    let died = store.load(&mine.id).unwrap().unwrap();
    assert_eq!(died.progress.unwrap().state, RunState::Died);
    let mut finished = other.clone();
    finished.progress = None;
    store.update(&finished).unwrap();
    assert_eq!(store.load(&other.id).unwrap().unwrap(), finished);

    // Listing, newest added first, and the filters in SQL.
    let ids: Vec<String> = store
        .summaries()
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [other.id.clone(), mine.id.clone(), run.id.clone()]);
    let filter = RunFilter {
        host: Some("rig*".into()),
        ..RunFilter::default()
    };
    let listed: Vec<String> = store
        .list(&filter, None)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, std::slice::from_ref(&run.id));
    let since = RunFilter {
        added_since: Some(std::time::SystemTime::now() + std::time::Duration::from_secs(3600)),
        ..RunFilter::default()
    };
    assert!(store.list(&since, None).unwrap().is_empty());
    assert_eq!(store.remove(std::slice::from_ref(&run.id)).unwrap(), 1);

    // A newer schema is refused, by writers and readers.
    pg.sql("UPDATE latlab_schema SET version = 99");
    let newer = PostgresStore::open(&pg.url()).err().unwrap();
    assert!(
        matches!(newer, StoreError::TooNew { found: 99, .. }),
        "{newer}"
    );
    let newer = PostgresStore::open_read_only(&pg.url()).err().unwrap();
    assert!(matches!(newer, StoreError::TooNew { .. }), "{newer}");
}

#[test]
fn writers_at_once_migrate_once_and_each_run_is_stored_once() {
    let pg = PgCluster::start();
    let url = pg.url();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut store = PostgresStore::open(&url).unwrap();
                let run = a_run(&format!("20261123T12000{i}Z-eeeeee"), "rig02");
                store.save(&run).unwrap();
                // The same run pushed by two writers: stored once.
                let shared = a_run("20261123T130000Z-ffffff", "rig02");
                let _ = store.save(&shared);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "7");
    assert_eq!(
        pg.sql("SELECT version FROM latlab_schema"),
        latlab_store::PG_SCHEMA_VERSION.to_string()
    );
}

#[test]
fn credentials_come_from_the_environment_or_a_password_file_and_are_never_shown() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let url = pg.url_without_password();
    let runs = |envs: &[(&str, &str)], store: &str| {
        let mut cmd = latlab();
        cmd.env_remove("PGPASSWORD")
            .env("PGPASSFILE", dir.path().join("none"));
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = cmd.args(["runs", "--store", store]).output().unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, _, err) = runs(&[], &url);
    assert_eq!(code, Some(2), "no password: {err}");
    assert!(
        err.contains("PGPASSWORD") && err.contains("pgpass"),
        "{err}"
    );
    let (code, _, err) = runs(&[("PGPASSWORD", PASSWORD)], &url);
    assert_eq!(code, Some(0), "{err}");
    let pass = dir.path().join("pgpass");
    std::fs::write(
        &pass,
        format!("127.0.0.1:{}:latency:lab:{PASSWORD}\n", pg.port()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, _, err) = runs(&[("PGPASSFILE", pass.to_str().unwrap())], &url);
    assert_eq!(code, Some(0), "{err}");
    // A wrong password in the URL: refused, and the password is not shown.
    let wrong = pg.url().replace(PASSWORD, "wrong-one");
    let (code, out, err) = runs(&[], &wrong);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        !err.contains("wrong-one") && !out.contains("wrong-one"),
        "{err}"
    );
    // LATLAB_STORE names the store when --store is absent.
    let out = latlab()
        .env("LATLAB_STORE", pg.url())
        .args(["runs"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("postgres://lab@127.0.0.1"),
        "{}",
        text(&out.stdout)
    );
    assert!(!text(&out.stdout).contains(PASSWORD));
}

/// `--store postgres://lab:PASSWORD@…` on the command line: the password is in no
/// stored row, no export, no report, nothing printed.
#[test]
fn a_password_on_the_command_line_enters_no_run_report_or_export() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("outbox.sqlite");
    let (code, out, err) = {
        let _slot = crate::common::shared();
        farm(
            &local,
            &pg.url(),
            &[
                "run",
                "-c",
                "0",
                "-d",
                "200ms",
                "-q",
                "--no-audit",
                "--name",
                "redacted",
            ],
        )
    };
    assert_eq!(code, 0, "{err}");
    let mut seen = vec![out, err];
    assert_eq!(
        pg.sql(&format!(
            "SELECT count(*) FROM runs r WHERE r::text LIKE '%{PASSWORD}%'"
        )),
        "0",
        "a stored row holds the password"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs r WHERE r::text LIKE '%postgres://lab@%'"),
        "1",
        "the command line is kept, without the password"
    );
    for args in [
        &["show", "redacted"][..],
        &["export", "redacted", "--format", "json"],
        &["export", "redacted", "--format", "cyclictest-json"],
        &["export", "redacted", "--format", "junit"],
        &["report", "redacted", "--format", "html", "-o", "-"],
        &["report", "redacted", "--format", "markdown", "-o", "-"],
    ] {
        let (code, out, err) = farm(&local, &pg.url(), args);
        assert_eq!(code, 0, "{args:?}: {err}");
        seen.extend([out, err]);
    }
    for text in seen {
        assert!(!text.contains(PASSWORD), "the password was shown: {text}");
    }
}

#[test]
fn an_unreachable_server_is_named_with_its_address() {
    let pg = PgCluster::start();
    pg.stop_server();
    let out = latlab()
        .args(["runs", "--store", &pg.url()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("127.0.0.1:{}", pg.port())), "{err}");
    assert!(err.contains("cannot reach"), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
}

/// Runs latlab with `args` against `store`, the local store at `local`; returns (exit
/// code, stdout, stderr).
fn farm(local: &std::path::Path, store: &str, args: &[&str]) -> (i32, String, String) {
    let out = latlab()
        .env("LATLAB_OUTBOX", local)
        .args(args)
        .args(["--store", store])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    crate::common::keep_for_schema_check(&stdout);
    (out.status.code().unwrap_or(-1), stdout, text(&out.stderr))
}

#[test]
fn rigs_measure_into_the_farm_store_and_a_run_cut_off_is_pushed_once() {
    let _serial = crate::common::shared();
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local.sqlite");
    let url = pg.url();
    // Three rigs at once (all started, then all awaited).
    let children: Vec<_> = (0..3)
        .map(|i| {
            std::process::Command::new(crate::common::latlab_path())
                .env("LATLAB_OUTBOX", dir.path().join(format!("rig{i}.sqlite")))
                .args(["run", "-d", "1s", "-q", "--no-audit", "-c", "0", "--name"])
                .arg(format!("rig-run-{i}"))
                .args(["--store", &url])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let children: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for out in &children {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !text(&out.stdout).contains(PASSWORD),
            "{}",
            text(&out.stdout)
        );
    }
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "3");
    let host = latlab_store::this_host().unwrap();
    let (code, out, err) = farm(&local, &url, &["runs", "--json", "--host", &host]);
    assert_eq!(code, 0, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    let (code, _, err) = farm(&local, &url, &["runs", "--host", "no-such-rig"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = farm(&local, &url, &["show", "rig-run-1"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    let (code, _, err) = farm(&local, &url, &["compare", "rig-run-0", "rig-run-2"]);
    assert!(code == 0 || code == 1, "{err}");

    // The server goes away mid-run: the run lands locally, owed, and is pushed later.
    let child = std::process::Command::new(crate::common::latlab_path())
        .env("LATLAB_OUTBOX", &local)
        .args([
            "run",
            "-d",
            "2s",
            "-q",
            "--no-audit",
            "-c",
            "0",
            "--name",
            "cut-off",
        ])
        .args(["--store", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the store holds its start (its row, as running), the server goes.
    pg.await_row("cut-off");
    pg.stop_server();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("cannot reach") && err.contains("latlab push"),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
    pg.start_server();
    // Kept there from its start, as running: only its start, the rest is local.
    assert_eq!(
        pg.sql("SELECT state FROM runs WHERE name = 'cut-off'"),
        "running"
    );
    let push = |store: Option<&str>| {
        let mut cmd = latlab();
        cmd.env("LATLAB_OUTBOX", &local).arg("push");
        if let Some(s) = store {
            cmd.args(["--store", s]);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = push(Some(&url));
    assert_eq!(code, Some(0), "{out}{err}");
    // It was there from its start: its central copy is replaced.
    assert!(out.contains("updated in postgres://lab@127.0.0.1"), "{out}");
    assert!(!out.contains(PASSWORD), "{out}");
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs WHERE name = 'cut-off'"),
        "1"
    );
    // Pushed whole: the central copy (running, then found died: its process ended
    // while the server was away) is replaced by the run as it ended.
    assert_eq!(
        pg.sql("SELECT coalesce(state, 'ended') FROM runs WHERE name = 'cut-off'"),
        "ended"
    );
    let (code, out, err) = push(Some(&url));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("nothing to push"), "{out}");
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs WHERE name = 'cut-off'"),
        "1"
    );
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "4");

    // Cut off again: this time the next run with the store pushes it first.
    let child = std::process::Command::new(crate::common::latlab_path())
        .env("LATLAB_OUTBOX", &local)
        .args([
            "run",
            "-d",
            "2s",
            "-q",
            "--no-audit",
            "-c",
            "0",
            "--name",
            "cut-off-2",
        ])
        .args(["--store", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    pg.await_row("cut-off-2");
    pg.stop_server();
    assert!(child.wait_with_output().unwrap().status.success());
    pg.start_server();
    let (code, _, err) = farm(
        &local,
        &url,
        &["run", "-d", "1s", "-q", "--no-audit", "-c", "0"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("pushed to") || l.contains("updated in"))
            .count(),
        1,
        "one line per run: {err}"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs WHERE name = 'cut-off-2'"),
        "1"
    );
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "6");
}

#[test]
fn runs_of_different_hosts_compare_on_the_farm_store() {
    let pg = PgCluster::start();
    let mut store = PostgresStore::open(&pg.url()).unwrap();
    let a = a_run("20261123T150000Z-222222", "rig01");
    let b = a_run("20261123T150001Z-333333", "rig02");
    store.save(&a).unwrap();
    store.save(&b).unwrap();
    let out = latlab()
        .args(["compare", &a.id, &b.id, "--metric", "max", "--json"])
        .args(["--store", &pg.url()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    crate::common::keep_for_schema_check(&text(&out.stdout));
    let compared: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(compared["failures"], 0, "{compared}");
}

#[test]
fn a_reading_command_marks_this_machines_dead_runs_died_and_says_so() {
    let pg = PgCluster::start();
    let mut store = PostgresStore::open(&pg.url()).unwrap();
    // A process that is gone: a child that ran and was reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let host = latlab_store::this_host().unwrap();
    let mut mine = running(a_run("20261123T160000Z-444444", &host), gone);
    mine.progress.as_mut().unwrap().rig = latlab_store::Rig::this().id;
    let theirs = running(a_run("20261123T160001Z-555555", "another-rig"), gone);
    // Another machine that calls itself the same: its run is its own to judge.
    let mut twin = running(a_run("20261123T160002Z-666666", &host), gone);
    twin.progress.as_mut().unwrap().rig = Some("machine:another".into());
    for run in [&mine, &theirs, &twin] {
        store.save(run).unwrap();
    }
    let out = latlab()
        .args(["runs", "--json", "--store", &pg.url()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "latlab: run {} died at 2026-11-23T12:00:10.000Z; its process ended without \
             saving it",
            mine.id
        )),
        "{err}"
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let state = |id: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(state(&mine.id), "died");
    // Another rig's run is judged on that rig only, whatever its host name.
    assert_eq!(state(&theirs.id), "running");
    assert_eq!(state(&twin.id), "running");
    assert_eq!(
        pg.sql("SELECT count(*) FROM runs WHERE state = 'died'"),
        "1"
    );
}

#[test]
fn tls_is_used_when_the_url_asks_and_the_certificate_is_verified() {
    let pg = PgCluster::start();
    let ca = pg.enable_tls();
    let tls_url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        pg.url(),
        ca.display()
    );
    let mut store = PostgresStore::open(&tls_url).unwrap();
    store
        .save(&a_run("20261123T140000Z-111111", "rig03"))
        .unwrap();
    assert_eq!(store.summaries().unwrap().len(), 1);
    // The connection is encrypted: the server says so.
    let ssl = pg.sql("SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE ssl AND usename = 'lab'");
    assert_eq!(ssl, "1");
    // Without the CA the certificate cannot be verified: refused, with the fix.
    let unverified = PostgresStore::open(&format!("{}?sslmode=require", pg.url()))
        .err()
        .unwrap();
    assert!(
        matches!(unverified, StoreError::Refused { .. }),
        "{unverified}"
    );
    assert!(
        unverified.to_string().contains("sslrootcert"),
        "{unverified}"
    );
}

#[test]
fn rigs_at_once_on_the_farm_store_one_killed_mid_run_is_kept_as_died() {
    let _guard = crate::common::shared();
    let pg = PgCluster::start();
    let url = pg.url();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("outbox.sqlite");
    let spawn = |name: &str, cpu: &str, duration: &str| {
        std::process::Command::new(crate::common::latlab_path())
            .env("LATLAB_OUTBOX", &local)
            .args(["run", "-d", duration, "-q", "--no-audit", "-c", cpu])
            .args(["--checkpoint", "1s", "--name", name, "--store", &url])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.path().join(format!("{name}.err"))).unwrap())
            .spawn()
            .unwrap()
    };
    let said = |name: &str| std::fs::read_to_string(dir.path().join(format!("{name}.err")));
    let mut killed = spawn("killed", "0", "30s");
    let mut ended = spawn("ended", "1", "4s");
    std::thread::sleep(std::time::Duration::from_secs(5));
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(ended.wait().unwrap().success(), "{:?}", said("ended"));

    // The next command that opens the farm store on this host finds it died.
    let (code, out, err) = farm(&local, &url, &["runs", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("died at"), "{err}\n{out}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let state = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["state"].clone())
            .unwrap()
    };
    assert_eq!(state("killed"), "died", "{out}");
    assert!(state("ended").is_null(), "{out}");
    let store = PostgresStore::open_read_only(&url).unwrap();
    let run = store.resolve("killed").unwrap();
    let progress = run.progress.unwrap();
    assert_eq!(progress.state, RunState::Died);
    assert!(progress.checkpoints >= 2, "{progress:?}");
    let s = &run.streams[0];
    assert!(s.samples > 0);
    assert_eq!(
        s.samples + s.missed_periods.unwrap(),
        (s.elapsed_ns.unwrap().0 / s.period_ns.unwrap().0) as u64
    );

    let (code, out, err) = farm(&local, &url, &["show", "killed"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("DIED: died at"), "{out}");
    let (code, _, err) = farm(&local, &url, &["compare", "killed", "ended", "--force"]);
    assert!(code == 0 || code == 1, "{err}");
    let (code, out, err) = farm(&local, &url, &["trend", "--metric", "p99", "--json"]);
    assert_eq!(code, 0, "{err}");
    let trend: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs: usize = trend["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["runs"].as_array().unwrap().len())
        .sum();
    assert_eq!(runs, 2, "{out}");
    let report = dir.path().join("killed.html");
    let (code, _, err) = farm(
        &local,
        &url,
        &["report", "killed", "-o", report.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("DIED"));
}

#[test]
fn the_farm_view_reads_each_runs_figures_from_the_index_and_older_runs_whole() {
    use latlab_model::series::SeriesFigures;
    let pg = PgCluster::start();
    let url = pg.url();
    let mut store = PostgresStore::open(&url).unwrap();
    let runs = [
        a_run("20261120T100000Z-00f001", "rig-a"),
        a_run("20261120T110000Z-00f002", "rig-b"),
    ];
    for run in &runs {
        store.save(run).unwrap();
    }
    // As a run stored before the column was: read whole.
    pg.sql("UPDATE runs SET series = NULL WHERE id = '20261120T110000Z-00f002'");
    let reader = PostgresStore::open_read_only(&url).unwrap();
    for store in [&store, &reader] {
        let listed = store.summaries().unwrap();
        let figures = store.series_figures(&listed).unwrap();
        assert_eq!(figures.len(), 2, "{figures:?}");
        for run in &runs {
            assert_eq!(figures[&run.id], SeriesFigures::of_run(run), "{}", run.id);
        }
        let mine: Vec<_> = listed.into_iter().filter(|s| s.id == runs[0].id).collect();
        assert_eq!(store.series_figures(&mine).unwrap().len(), 1);
    }
    // The column holds what the Run gives, as JSON.
    let kept = pg.rows("SELECT series::text FROM runs WHERE id = '20261120T100000Z-00f001'");
    let kept: Vec<SeriesFigures> = serde_json::from_str(kept[0][0].as_deref().unwrap()).unwrap();
    assert_eq!(kept, SeriesFigures::of_run(&runs[0]));
}
