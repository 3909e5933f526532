//! The views of many runs: `latlab trend` on a store holding runs of two hosts, and
//! `latlab serve` answering HTTP on loopback (its pages in a browser: `browser.rs`).

use crate::common::{latlab, oversized_head, status_of_request, text, with_store, SlowClients};
use latlab_model::run::{Percentile, Run};
use latlab_model::Nanos;
use std::path::{Path, PathBuf};

/// The runs of [`farm_store`]: id, host, start (`None`: unknown), and every stream's
/// p99.9 in µs.
pub const FARM: [(&str, &str, Option<&str>, i64); 6] = [
    (
        "20261101T000000Z-a00001",
        "rig1",
        Some("2026-11-01T00:00:00.000Z"),
        80,
    ),
    (
        "20261103T000000Z-a00002",
        "rig1",
        Some("2026-11-03T00:00:00.000Z"),
        90,
    ),
    (
        "20261105T000000Z-a00003",
        "rig1",
        Some("2026-11-05T00:00:00.000Z"),
        1_900,
    ),
    (
        "20261102T000000Z-b00001",
        "rig2",
        Some("2026-11-02T00:00:00.000Z"),
        50,
    ),
    (
        "20261104T000000Z-b00002",
        "rig2",
        Some("2026-11-04T00:00:00.000Z"),
        60,
    ),
    ("20261106T000000Z-b00003", "rig2", None, 55),
];

/// A store in `dir` holding the [`FARM`]'s runs, imported from Run files made of the
/// documented example run: its host, start and p99.9 changed, everything else as
/// measured.
pub fn farm_store(dir: &Path) -> PathBuf {
    let store = dir.join("farm.sqlite");
    import_farm(dir, store.to_str().unwrap());
    store
}

/// Imports the [`FARM`]'s runs (made in `dir`) into the store at `store`: a path or a
/// postgres:// URL.
pub fn import_farm(dir: &Path, store: &str) {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    let example = Run::from_json(&std::fs::read_to_string(example).unwrap()).unwrap();
    let mut files = Vec::new();
    for (id, host, start, p999_us) in FARM {
        let mut run = example.clone();
        run.id = id.to_string();
        run.host.as_mut().unwrap().hostname = host.to_string();
        run.started_at = start.map(str::to_string);
        let p999 = Nanos(p999_us * 1_000);
        for stream in &mut run.streams {
            let stats = &mut stream.stats;
            stats
                .percentiles_ns
                .insert("99.9".into(), Percentile::Exact(p999));
            // The ranks above stay in order, and the maximum above them all.
            for rank in ["99.99", "99.999"] {
                let above = stats.percentiles_ns[rank].value().max(p999);
                stats
                    .percentiles_ns
                    .insert(rank.into(), Percentile::Exact(above));
            }
            stats.max_ns = stats.max_ns.max(Some(p999));
        }
        let file = dir.join(format!("{id}.json"));
        std::fs::write(&file, run.to_json_pretty()).unwrap();
        files.push(file);
    }
    let mut import = vec!["import"];
    import.extend(files.iter().map(|f| f.to_str().unwrap()));
    let (code, _, err) = with_store(Path::new(store), &import);
    assert_eq!(code, 0, "{err}");
}

/// `latlab trend ARGS --json` on `store`, parsed.
fn trend_json(store: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["trend", "--json"];
    all.extend(args);
    let (code, out, err) = with_store(store, &all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn trend_follows_each_hosts_worst_p99_9_in_start_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let trend = trend_json(&store, &["--metric", "p99.9", "--by", "host"]);
    assert_eq!(trend["metric"], "p99.9");
    assert_eq!(trend["unit"], "ns");
    let groups = trend["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{trend}");
    for (group, host) in groups.iter().zip(["rig1", "rig2"]) {
        assert_eq!(group["group"]["host"], host);
        let expected: Vec<_> = FARM.iter().filter(|r| r.1 == host).collect();
        let runs = group["runs"].as_array().unwrap();
        let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
        // Start order is the FARM's order: the unknown start comes last.
        assert_eq!(ids, expected.iter().map(|r| r.0).collect::<Vec<_>>());
        for (run, (_, _, start, p999_us)) in runs.iter().zip(&expected) {
            assert_eq!(run["value"], p999_us * 1_000, "{run}");
            assert_eq!(run["started_at"].is_null(), start.is_none(), "{run}");
            assert!(run["samples"].as_u64().unwrap() > 0);
        }
        let worst = expected.iter().map(|r| r.3).max().unwrap();
        assert_eq!(group["worst"], worst * 1_000);
    }
    // rig1: 80, 90, 1900 µs; its median is the middle one.
    assert_eq!(groups[0]["median"], 90_000);

    let rig2 = trend_json(&store, &["--host", "rig2", "--by", "host,kernel"]);
    let groups = rig2["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["group"]["host"], "rig2");
    assert_eq!(groups[0]["group"]["kernel"], "6.18.44-fc-v595");
}

/// What measured different things never shares a line: an OS-noise run beside
/// wake-up runs of the same rig, and an import of the same rig's figures.
#[test]
fn probes_and_imports_are_series_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let example: Run = Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap();
    let mut noise = example.clone();
    noise.id = "20261101T000000Z-0a0a0a".to_string();
    noise.host.as_mut().unwrap().hostname = "rig1".to_string();
    for stream in &mut noise.streams {
        stream.probe = "noise".to_string();
    }
    let file = dir.path().join("noise.json");
    std::fs::write(&file, noise.to_json_pretty()).unwrap();
    let (code, _, err) = with_store(&store, &["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = with_store(
        &store,
        &[
            "import",
            crate::common::fixture("cyclictest-2t.json")
                .to_str()
                .unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let trend = trend_json(&store, &["--metric", "max"]);
    let groups = trend["groups"].as_array().unwrap();
    let labels: Vec<&str> = groups
        .iter()
        .map(|g| g["label"].as_str().unwrap())
        .collect();
    // rig1's and rig2's timer runs, rig1's noise run, the cyclictest import.
    assert_eq!(groups.len(), 4, "{labels:#?}");
    for group in groups {
        let label = group["label"].as_str().unwrap();
        let probe = group["probe"].as_str().unwrap();
        assert!(label.contains(&format!(" {probe} ")), "{label}");
        assert_eq!(group["series"].as_str().unwrap().len(), 12, "{label}");
    }
    let noise_group = groups.iter().find(|g| g["probe"] == "noise").unwrap();
    assert_eq!(noise_group["runs"].as_array().unwrap().len(), 1);
    let imported = groups
        .iter()
        .find(|g| {
            g["label"]
                .as_str()
                .unwrap()
                .contains("import:cyclictest-json")
        })
        .unwrap_or_else(|| panic!("{labels:#?}"));
    assert_eq!(imported["runs"].as_array().unwrap().len(), 1);
    // Grouped by host, rig1's two probes are still two lines.
    let by_host = trend_json(&store, &["--metric", "max", "--by", "host"]);
    let rig1: Vec<&str> = by_host["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["group"]["host"] == "rig1")
        .map(|g| g["probe"].as_str().unwrap())
        .collect();
    assert_eq!(rig1.len(), 2, "{by_host}");
    assert!(rig1.contains(&"noise"), "{by_host}");
}

#[test]
fn trend_prints_its_tables_and_writes_its_plot() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let svg = dir.path().join("trend.svg");
    let (code, out, err) = with_store(
        &store,
        &["trend", "--metric", "max", "-o", svg.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    // One line per series: each rig's timer runs (the example's).
    assert!(
        out.contains("host:rig1 · latlab · timer") && out.contains("host:rig2 · latlab · timer"),
        "{out}"
    );
    assert!(out.contains("unknown: not placed"), "{out}");
    let lint = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg(&svg)
        .output()
        .expect("xmllint is needed: apt-get install libxml2-utils (scripts/test does)");
    assert!(lint.status.success(), "{}", text(&lint.stderr));
    let circles = std::fs::read_to_string(&svg)
        .unwrap()
        .matches("<circle")
        .count();
    assert_eq!(circles, FARM.len() - 1);
}

#[test]
fn trend_refuses_an_unknown_metric_or_grouping_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.sqlite");
    for (args, flag) in [
        (vec!["trend", "--metric", "p42"], "--metric"),
        (vec!["trend", "--by", "cpu"], "--by"),
        (vec!["trend", "-o", "trend.png"], "--output"),
    ] {
        let (code, _, err) = with_store(&store, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn trend_of_an_empty_selection_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let out = latlab()
        .args(["trend", "--host", "nowhere", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("0 runs in 0 groups"));
}

/// `latlab serve` on a free loopback port of `store`; stopped (SIGTERM, by pid) and
/// waited for when dropped, should the test fail first.
pub struct Served {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

impl Served {
    pub fn start(store: impl AsRef<std::ffi::OsStr>) -> Served {
        use std::io::BufRead;
        let mut child = std::process::Command::new(crate::common::latlab_path())
            .args(["serve", "--listen", "127.0.0.1:0", "--store"])
            .arg(store)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .unwrap();
        let address = first
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("serve said where it serves: {first:?}"))
            .to_string();
        Served { child, address }
    }

    /// Sends SIGTERM; returns the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "serve did not stop on SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// `METHOD path` over HTTP/1.1: (status code, body).
    pub fn request(&self, method: &str, path: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut connection = std::net::TcpStream::connect(&self.address).unwrap();
        // A hang guard: no page takes this long.
        connection
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            connection,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .unwrap();
        let mut answer = Vec::new();
        connection.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, body.to_string())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn serve_refuses_a_non_loopback_address_without_listen_any() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.sqlite");
    let (code, _, err) = with_store(&store, &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--listen: 0.0.0.0:0 is not a loopback address")
            && err.contains("--listen-any"),
        "{err}"
    );
}

#[test]
fn serve_answers_each_page_reads_only_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let before = std::fs::read(&store).unwrap();
    let mut served = Served::start(&store);
    let (status, index) = served.request("GET", "/");
    assert_eq!(status, 200);
    for (id, ..) in FARM {
        assert!(index.contains(&format!("href=\"/run/{id}\"")), "{id}");
    }
    let (status, rig2) = served.request("GET", "/?host=rig2&since=");
    assert_eq!(status, 200);
    assert!(!rig2.contains(FARM[0].0) && rig2.contains(FARM[3].0));
    let (base, new) = (FARM[0].0, FARM[1].0);
    for path in [
        format!("/run/{base}"),
        "/run/last".to_string(),
        format!("/compare?base={base}&new={new}"),
        "/trend?metric=max&by=host%2Ckernel&tag=".to_string(),
        "/farm".to_string(),
        "/farm?host=rig2".to_string(),
        "/trend?series=000000000000".to_string(),
    ] {
        let (status, page) = served.request("GET", &path);
        assert_eq!(status, 200, "{path}: {page}");
        assert!(page.starts_with("<!DOCTYPE html>"), "{path}");
    }
    for (method, path, expected) in [
        ("GET", "/run/nowhere", 404),
        ("GET", "/metrics", 404),
        ("GET", "/compare?base=last", 400),
        ("GET", "/trend?metric=p42", 400),
        ("GET", "/?since=yesterday", 400),
        ("GET", "/farm?since=yesterday", 400),
        ("GET", "/trend?by=host&series=000000000000", 400),
        ("GET", "/run/%zz", 400),
        ("POST", "/", 405),
        ("DELETE", &format!("/run/{base}"), 405),
    ] {
        let (status, page) = served.request(method, path);
        assert_eq!(status, expected, "{method} {path}: {page}");
    }
    let (status, body) = served.request("HEAD", "/");
    assert_eq!((status, body.as_str()), (200, ""));
    let status = served.stop();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "the store is unchanged"
    );
}

/// 16 slow clients once held every thread of serve and locked everyone else out.
#[test]
fn serve_answers_while_many_slow_clients_are_connected_and_stops_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let mut served = Served::start(&store);
    let mut slow = SlowClients::open(&served.address, "/", 64);
    slow.trickle();
    for path in ["/", "/run/last", "/trend"] {
        let asked = std::time::Instant::now();
        let (status, page) = served.request("GET", path);
        assert_eq!(status, 200, "{path}: {page}");
        eprintln!(
            "64 slow clients: {path} answered in {:.2?}",
            asked.elapsed()
        );
        slow.trickle();
    }
    assert_eq!(
        status_of_request(&served.address, &oversized_head("/")),
        431
    );
    let asked = std::time::Instant::now();
    let status = served.stop();
    eprintln!(
        "64 slow clients: serve stopped {:.2?} after SIGTERM",
        asked.elapsed()
    );
    assert!(status.success(), "{status:?}");
}

#[test]
fn report_plots_the_trend_of_the_runs_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm_store(dir.path());
    let svg = dir.path().join("trend.svg");
    // The first three of the FARM: rig1's, all placed in time.
    let mut args = vec!["report", "--trend", "p99.9", "--by", "host,kernel"];
    args.extend(FARM[..3].iter().map(|r| r.0));
    args.extend(["-o", svg.to_str().unwrap()]);
    let (code, _, err) = with_store(&store, &args);
    assert_eq!(code, 0, "{err}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(drawn.matches("<circle").count(), 3);
    let (code, _, err) = with_store(
        &store,
        &["report", "--trend", "p99.9", "last", "-f", "png-histogram"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--format"), "{err}");
}
