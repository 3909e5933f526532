//! `latlab run --listen`: the live endpoint read while a run goes by its real consumers
//! (`promtool check metrics`, the OpenMetrics reference parser, a real Prometheus), and
//! refused on an address nobody asked to expose.

use crate::common::{
    latlab, latlab_path, oversized_head, serial, shared, status_of_request, text, SlowClients,
};
use crate::consumer_prometheus::{pipe, promtool, Prometheus, OPENMETRICS_PARSER};
use latlab_model::run::Run;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `latlab run --listen 127.0.0.1:0` going on; killed by its pid when dropped (a
/// failing test included), and its files removed.
struct Live {
    child: Child,
    port: u16,
    json: PathBuf,
    _dir: tempfile::TempDir,
}

impl Live {
    /// Starts a run of `args` listening on a free loopback port, and reads the port it
    /// says it listens on.
    fn start(args: &[&str]) -> Live {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let mut child = Command::new(latlab_path())
            .arg("run")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--no-store", "-q", "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let port = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.kill();
                panic!("latlab ended without listening:\n{said}");
            }
            said.push_str(&line);
            if let Some(address) = line.trim().strip_prefix("listening on http://") {
                let address = address.strip_suffix("/metrics").unwrap();
                break address.rsplit_once(':').unwrap().1.parse().unwrap();
            }
        };
        // Whatever else it says, read so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Live {
            child,
            port,
            json,
            _dir: dir,
        }
    }

    /// Asks it to stop (SIGINT, as Ctrl-C) and returns its exit code and the Run.
    fn stop(self) -> (i32, Run) {
        self.interrupt();
        let (code, run, _) = self.wait(Duration::from_secs(60), || {});
        (code, run)
    }

    /// Sends it SIGINT, as Ctrl-C does.
    fn interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for it to end, calling `meanwhile` at each look: its exit code, the Run,
    /// and how long it took. A hang guard: past `within` the test fails (and the run is
    /// killed when dropped).
    fn wait(mut self, within: Duration, mut meanwhile: impl FnMut()) -> (i32, Run, Duration) {
        let start = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            assert!(
                start.elapsed() < within,
                "the run did not end within {within:?}"
            );
            meanwhile();
            std::thread::sleep(Duration::from_millis(50));
        };
        let waited = start.elapsed();
        let run =
            crate::common::written_run(&std::fs::read_to_string(&self.json).unwrap()).unwrap();
        (code, run, waited)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // By its pid: this child, nothing else (a no-op once it has been waited for).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `GET path` with `accept`: the status, the content type and the body.
fn get(port: u16, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or("")
        .to_string();
    (status, content_type, body.to_string())
}

/// The `_count` of each stream's histogram, by its `stream` label.
fn counts(metrics: &str) -> BTreeMap<String, u64> {
    metrics
        .lines()
        .filter(|l| l.starts_with("latlab_wakeup_latency_seconds_count{"))
        .map(|l| {
            let stream = l.split("stream=\"").nth(1).unwrap().split('"').next();
            let value = l.rsplit_once(' ').unwrap().1.parse().unwrap();
            (stream.unwrap().to_string(), value)
        })
        .collect()
}

#[test]
fn the_live_endpoint_passes_promtool_and_the_parser_and_its_counts_grow() {
    let _guard = shared();
    let live = Live::start(&["-c", "0,1", "-d", "60s"]);
    // Samples come once the loads and threads are up.
    let mut first = String::new();
    for _ in 0..100 {
        first = get(live.port, "/metrics", None).2;
        if counts(&first).values().filter(|&&c| c > 0).count() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1_200));
    let (status, content_type, second) = get(live.port, "/metrics", Some("text/plain"));
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    for metrics in [&first, &second] {
        let (ok, out, err) = pipe(promtool(), &["check", "metrics"], metrics);
        assert!(
            ok && out.is_empty() && err.is_empty(),
            "promtool: {out}{err}\n{metrics}"
        );
    }
    let (before, after) = (counts(&first), counts(&second));
    assert_eq!(before.len(), 2, "one histogram per thread:\n{first}");
    for (stream, count) in &before {
        assert!(
            after[stream] > *count,
            "stream {stream}: {before:?} {after:?}"
        );
    }
    // A whole second has passed: each thread has its last second's maximum.
    let maxima = second
        .lines()
        .filter(|l| l.starts_with("latlab_last_second_max_seconds{"))
        .count();
    assert_eq!(maxima, 2, "{second}");

    let (status, content_type, openmetrics) = get(
        live.port,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert_eq!(status, 200);
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    let (ok, out, err) = pipe("python3", &["-c", OPENMETRICS_PARSER], &openmetrics);
    assert!(
        !err.contains("No module named 'prometheus_client'"),
        "the OpenMetrics parser is needed for this test: python3 -m pip install \
         prometheus_client (scripts/test does)"
    );
    assert!(ok, "the OpenMetrics parser: {err}\n{openmetrics}");
    for family in [
        "latlab_wakeup_latency_seconds histogram",
        "latlab_samples counter",
        "latlab_missed_periods counter",
        "latlab_early_wakes counter",
        "latlab_max_seconds gauge",
        "latlab_last_second_max_seconds gauge",
        "latlab_five_minute_max_seconds gauge",
    ] {
        assert!(out.lines().any(|l| l == family), "{family} in:\n{out}");
    }
    assert_eq!(get(live.port, "/", None).0, 404);
    assert_eq!(get(live.port, "/metrics/x", None).0, 404);

    let port = live.port;
    let (code, run) = live.stop();
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(code, 4);
    assert!(run.interrupted);
    // The live series carry the kept run's id.
    assert!(
        second.contains(&format!("run=\"{}\"", run.id)),
        "{}:\n{second}",
        run.id
    );
    // Stopped with the run: nothing listens any more.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn a_real_prometheus_scrapes_the_live_endpoint() {
    let _guard = shared();
    let live = Live::start(&["-c", "0", "-d", "120s"]);
    let mut prometheus = Prometheus::start(live.port, &[("latlab", "/metrics")]);
    let up = prometheus.query_until("up{job=\"latlab\"}", 1);
    assert_eq!(up[0].1, 1.0, "the scrape failed\n{}", prometheus.log());
    // Scraped as OpenMetrics (Prometheus asks for it first) while the run goes.
    let query = "latlab_wakeup_latency_seconds_count{job=\"latlab\"} > 0";
    let counts = prometheus.query_until(query, 1);
    assert_eq!(counts.len(), 1, "{counts:?}");
    assert_eq!(counts[0].0["probe"], "timer");
    assert_eq!(counts[0].0["cpu"], "0");
    let samples = prometheus.query_until("latlab_samples_total{job=\"latlab\"} > 0", 1);
    assert!(samples[0].1 > 0.0);
    drop(prometheus);
    let (code, _) = live.stop();
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(code, 4);
}

#[test]
fn listen_refuses_other_addresses_than_loopback_unless_asked_and_a_taken_port() {
    // A `latlab run` sweeps what killed runs left: never while a test that looks at
    // theirs holds the slot whole.
    let _shared = crate::common::shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let json = json.to_str().unwrap();
    let out = latlab()
        .args(["run", "-d", "100ms", "--no-store", "--json", json])
        .args(["--listen", "0.0.0.0:9464"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--listen") && err.contains("--listen-any"),
        "{err}"
    );
    assert!(!err.contains("listening on"), "{err}");
    assert!(text(&out.stdout).is_empty(), "no run");
    assert!(!std::path::Path::new(json).exists(), "no run");

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = latlab()
        .args(["run", "-d", "100ms", "--no-store", "--listen", &address])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--listen") && err.contains(&address), "{err}");
    assert!(text(&out.stdout).is_empty(), "no run");
}

#[test]
fn an_explained_run_serves_its_causes_live_as_its_catalogue_grows() {
    // Whether the causes grow within a second depends on the trace reader keeping up,
    // which other runs at once can stop.
    let _guard = serial();
    // Every sample above 1 ns is a spike to explain: causes appear within a second.
    let live = Live::start(&["--explain", "--spike", "1ns", "-c", "1", "-d", "60s"]);
    let cause_lines = |metrics: &str| -> Vec<String> {
        metrics
            .lines()
            .filter(|l| l.starts_with("latlab_spike_cause_spikes_total{"))
            .map(str::to_string)
            .collect()
    };
    let spikes_of = |lines: &[String]| -> u64 {
        lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let mut first = Vec::new();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        first = cause_lines(&get(live.port, "/metrics", None).2);
        if !first.is_empty() {
            break;
        }
    }
    assert!(!first.is_empty(), "no cause served within 10 s");
    std::thread::sleep(Duration::from_millis(1200));
    let (_, _, text) = get(live.port, "/metrics", None);
    let (ok, out, err) = pipe(promtool(), &["check", "metrics"], &text);
    assert!(
        ok && out.is_empty() && err.is_empty(),
        "promtool: {out}{err}"
    );
    let later = cause_lines(&text);
    assert!(
        spikes_of(&later) > spikes_of(&first),
        "the causes' counts grow while spikes are explained: {first:?} then {later:?}"
    );
    let (_, _, open) = get(
        live.port,
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    );
    let (ok, families, err) = pipe("python3", &["-c", OPENMETRICS_PARSER], &open);
    assert!(ok, "the OpenMetrics parser refused it: {err}");
    assert!(
        families.contains("latlab_spike_cause_seconds counter")
            && families.contains("latlab_spike_cause_spikes counter"),
        "{families}"
    );
    let (code, run) = live.stop();
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(code, 4);
    // What was served live is the kept catalogue's, up to the last drain.
    let explain = run.explain.expect("an explained run");
    assert!(explain.catalogue.iter().map(|c| c.spikes).sum::<u64>() >= spikes_of(&later));
}

/// The value of the first series of `family` in `metrics` whose line holds `needle`.
fn series(metrics: &str, family: &str, needle: &str) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| l.starts_with(family) && l.contains(needle))
        .find_map(|l| l.rsplit_once(' ')?.1.parse().ok())
}

#[test]
fn a_loads_work_is_served_live_and_grows() {
    let _guard = shared();
    let live = Live::start(&["-c", "0", "-d", "60s", "--load", "cpu"]);
    let mut first = String::new();
    for _ in 0..100 {
        first = get(live.port, "/metrics", None).2;
        if series(&first, "latlab_load_work_total{", "load=\"cpu\"").is_some_and(|w| w > 0.0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1_500));
    let second = get(live.port, "/metrics", None).2;
    for metrics in [&first, &second] {
        let (ok, out, err) = pipe(promtool(), &["check", "metrics"], metrics);
        assert!(
            ok && out.is_empty() && err.is_empty(),
            "promtool: {out}{err}\n{metrics}"
        );
    }
    let work = |m: &str| series(m, "latlab_load_work_total{", "load=\"cpu\"").unwrap();
    assert!(work(&second) > work(&first), "{first}\n{second}");
    assert!(second.contains("work_unit=\""), "{second}");
    let rate = series(&second, "latlab_load_rate{", "load=\"cpu\"").expect("a rate");
    assert!(rate > 0.0);
    let openmetrics = get(live.port, "/metrics", Some("application/openmetrics-text")).2;
    let (ok, out, err) = pipe("python3", &["-c", OPENMETRICS_PARSER], &openmetrics);
    assert!(ok, "the OpenMetrics parser: {err}\n{openmetrics}");
    assert!(
        out.lines().any(|l| l == "latlab_load_work counter"),
        "{out}"
    );
    assert!(out.lines().any(|l| l == "latlab_load_rate gauge"), "{out}");
    let (code, run) = live.stop();
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(code, 4);
    // The kept run's load did at least the work served last.
    assert!(run.phases[0].loads[0].work as f64 >= work(&second));
}

/// The slow clients the endpoint is built against (one of them kept a 4 s run going
/// for 41 s, and Ctrl-C waiting 27.5 s, when the endpoint read each request to its
/// end): more of them than it serves at once, of every kind.
const SLOW_CLIENTS: usize = 24;

#[test]
fn slow_clients_delay_neither_a_scrape_nor_the_runs_end() {
    let _guard = shared();
    let started = Instant::now();
    let live = Live::start(&["-c", "0", "-d", "4s"]);
    let address = format!("127.0.0.1:{}", live.port);
    let mut slow = SlowClients::open(&address, "/metrics", SLOW_CLIENTS);
    slow.trickle();
    // Answered once the clients before it have had their time (2 s for a request head).
    let asked = Instant::now();
    let (status, _, metrics) = get(live.port, "/metrics", None);
    let scraped = asked.elapsed();
    assert_eq!(status, 200, "{metrics}");
    assert_eq!(
        status_of_request(&address, &oversized_head("/metrics")),
        431
    );
    // Trickled at all the while, the run ends by itself.
    let (code, run, _) = live.wait(Duration::from_secs(20), || slow.trickle());
    let measured = run.phases[0].elapsed_ns.expect("a measured span");
    eprintln!(
        "{SLOW_CLIENTS} slow clients: a scrape answered in {scraped:.2?}; the run, which \
         measured for {measured}, ended {:.2?} after it started",
        started.elapsed()
    );
    assert_eq!(code, 0);
    assert!(!run.interrupted);
}

#[test]
fn ctrl_c_ends_a_run_promptly_whatever_its_clients_do() {
    let _guard = shared();
    let live = Live::start(&["-c", "0", "-d", "60s"]);
    let address = format!("127.0.0.1:{}", live.port);
    // Half of them before the scrapes, which are answered after they were let in
    // (first come, first served): these are being served as the run stops.
    let mut slow = SlowClients::open(&address, "/metrics", SLOW_CLIENTS / 2);
    // Stopped while it measures.
    for _ in 0..100 {
        if counts(&get(live.port, "/metrics", None).2)
            .values()
            .any(|&c| c > 0)
        {
            break;
        }
        slow.trickle();
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut more = SlowClients::open(&address, "/metrics", SLOW_CLIENTS / 2);
    slow.trickle();
    live.interrupt();
    let (code, run, stopping) = live.wait(Duration::from_secs(10), || {
        slow.trickle();
        more.trickle();
    });
    eprintln!("{SLOW_CLIENTS} slow clients: the run ended {stopping:.2?} after SIGINT");
    // Stopped before its duration: incomplete (exit 4).
    assert_eq!(code, 4);
    assert!(run.interrupted);
}
