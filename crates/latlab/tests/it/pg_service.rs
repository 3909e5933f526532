//! A store named by a service of PostgreSQL's connection service file
//! (`pg_service.conf`), in every way libpq takes one — `service=NAME` as the store, in
//! a URL's query, or `PGSERVICE`; the file `PGSERVICEFILE` names, `~/.pg_service.conf`
//! or `PGSYSCONFDIR/pg_service.conf` — against a real server: what the URL gives
//! overrides the service's, the password comes from the password file or the service,
//! and is never shown.

use crate::common::{fixture, latlab, text};
use crate::pg::{PgCluster, PASSWORD};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Runs latlab with `args` and the environment `env` (nothing of the caller's
/// PostgreSQL settings, no password but from `env`); returns (exit code, stdout,
/// stderr).
fn latlab_with(env: &[(&str, &Path)], args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = latlab();
    for name in [
        "PGPASSWORD",
        "PGSERVICE",
        "PGSERVICEFILE",
        "PGSYSCONFDIR",
        "PGUSER",
    ] {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.args(args).output().unwrap();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_service_names_the_store_as_libpq_names_it() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let port = pg.port();
    let services = dir.path().join("services.conf");
    std::fs::write(
        &services,
        format!(
            "# the farm's store\n[farm]\nhost=127.0.0.1\nport={port}\ndbname=latency\nuser=lab\n\n\
             [elsewhere]\nhost=127.0.0.1\nport={port}\ndbname=nowhere\nuser=lab\n\n\
             [with-password]\nhost=127.0.0.1\nport={port}\ndbname=latency\nuser=lab\n\
             password={PASSWORD}\n"
        ),
    )
    .unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{port}:*:lab:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let outbox = dir.path().join("outbox.sqlite");
    let no_system = dir.path().join("no-system");
    let base: Vec<(&str, &Path)> = vec![
        ("PGSERVICEFILE", &services),
        ("PGPASSFILE", &pgpass),
        ("PGSYSCONFDIR", &no_system),
        ("LATLAB_OUTBOX", &outbox),
    ];

    let file = fixture("cyclictest-2t.json");
    let (code, _, err) = latlab_with(
        &base,
        &["import", file.to_str().unwrap(), "--store", "service=farm"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pg.sql("SELECT count(*) FROM runs"), "1");

    let url_port = format!("postgres://lab@127.0.0.1:{port}/latency");
    let elsewhere = "elsewhere".as_ref();
    let farm = "farm".as_ref();
    for (store, extra) in [
        ("service=farm", vec![]),
        ("postgres://?service=farm", vec![]),
        // The URL's database before the service's.
        ("postgresql:///latency?service=elsewhere", vec![]),
        ("host=127.0.0.1 dbname=latency service=elsewhere", vec![]),
        ("postgres://", vec![("PGSERVICE", farm)]),
        // A URL that names everything needs nothing of PGSERVICE's.
        (url_port.as_str(), vec![("PGSERVICE", elsewhere)]),
        (
            "service=with-password",
            vec![("PGPASSFILE", no_system.as_path())],
        ),
    ] {
        let env: Vec<(&str, &Path)> = base.iter().copied().chain(extra).collect();
        let (code, out, err) = latlab_with(&env, &["runs", "--json", "--store", store]);
        assert_eq!(code, Some(0), "{store}: {err}");
        let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{store}: {out}");
        assert!(
            !out.contains(PASSWORD) && !err.contains(PASSWORD),
            "{store}"
        );
    }
    // The store is named as given.
    let (code, out, err) = latlab_with(&base, &["runs", "--store", "service=farm"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("service=farm"), "{out}");

    // ~/.pg_service.conf, then PGSYSCONFDIR/pg_service.conf.
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::copy(&services, home.join(".pg_service.conf")).unwrap();
    let in_home: Vec<(&str, &Path)> = base[1..]
        .iter()
        .copied()
        .chain([("HOME", home.as_path())])
        .collect();
    let (code, _, err) = latlab_with(&in_home, &["runs", "--store", "service=farm"]);
    assert_eq!(code, Some(0), "{err}");
    let system = dir.path().join("etc");
    std::fs::create_dir(&system).unwrap();
    std::fs::rename(
        home.join(".pg_service.conf"),
        system.join("pg_service.conf"),
    )
    .unwrap();
    let in_system: Vec<(&str, &Path)> = [
        ("PGPASSFILE", pgpass.as_path()),
        ("LATLAB_OUTBOX", &outbox),
        ("HOME", &home),
        ("PGSYSCONFDIR", &system),
    ]
    .to_vec();
    let (code, _, err) = latlab_with(&in_system, &["runs", "--store", "service=farm"]);
    assert_eq!(code, Some(0), "{err}");

    // What is wrong is named, with the fix, as a usage error.
    let (code, _, err) = latlab_with(&base, &["runs", "--store", "service=nowhere"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no service [nowhere]") && err.contains("services.conf"),
        "{err}"
    );
    let (code, _, err) = latlab_with(&base, &["runs", "--store", "service=elsewhere"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nowhere"), "the server's words: {err}");
    let unreadable = format!("host=127.0.0.1 password={PASSWORD} dbname");
    let (code, out, err) = latlab_with(&base, &["runs", "--store", &unreadable]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("host=127.0.0.1 …") && !err.contains(PASSWORD) && !out.contains(PASSWORD),
        "{err}"
    );
    std::fs::write(&services, "[farm]\nsslcert=/etc/client.pem\n").unwrap();
    let (code, _, err) = latlab_with(&base, &["runs", "--store", "service=farm"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("sslcert") && err.contains("line 2"), "{err}");
}
