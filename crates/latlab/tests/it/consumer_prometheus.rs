//! The Prometheus exports read by their real consumers: `promtool check metrics` (the
//! Prometheus project's linter) and the OpenMetrics reference parser
//! (`prometheus_client`) on the export of every kind of run, and a real Prometheus that
//! scrapes both formats and is queried through its HTTP API.

use crate::common::{fixture, measure, shared, text, with_store};
use latlab_model::run::Run;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `promtool`, or a panic saying how to install it.
pub(crate) fn promtool() -> &'static str {
    let found = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "promtool is needed for this test: apt-get install prometheus (scripts/test does)"
    );
    "promtool"
}

/// Parses OpenMetrics text with `prometheus_client`'s strict parser; prints each
/// family's name and type.
pub(crate) const OPENMETRICS_PARSER: &str = "
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    print(family.name, family.type)
";

/// Runs `program args` with `input` on its standard input: (success, stdout, stderr).
pub(crate) fn pipe(program: &str, args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// A store holding only `run`, imported from its JSON.
fn store_holding(dir: &Path, run: &Run) -> PathBuf {
    let store = dir.join("runs.sqlite");
    let json = dir.join("run.json");
    std::fs::write(&json, run.to_json_pretty()).unwrap();
    let (code, _, err) = with_store(&store, &["import", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    store
}

/// A store holding only the import of fixture `name`, and the Run it became.
fn store_importing(dir: &Path, name: &str) -> (PathBuf, Run) {
    let store = dir.join(format!("{name}.sqlite"));
    let (code, _, err) = with_store(&store, &["import", fixture(name).to_str().unwrap()]);
    assert_eq!(code, 0, "{name}: {err}");
    // The only run of the store: every id starts with its year.
    let (code, json, err) = with_store(&store, &["export", "2", "--format", "json"]);
    assert_eq!(code, 0, "{name}: {err}");
    (store, Run::from_json(&json).unwrap())
}

/// The stored run `id` in `format`.
fn export(store: &Path, id: &str, format: &str) -> String {
    let (code, out, err) = with_store(store, &["export", id, "--format", format]);
    assert_eq!(code, 0, "export {id} --format {format}: {err}");
    out
}

/// The series of an export: each sample line's name and labels, once each.
fn series(export: &str) -> Vec<&str> {
    let lines: Vec<&str> = export
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit_once(' ').unwrap().0)
        .collect();
    let unique: BTreeSet<&str> = lines.iter().copied().collect();
    assert_eq!(
        unique.len(),
        lines.len(),
        "a series written twice:\n{export}"
    );
    lines
}

/// Checks both exports of the stored `run` with promtool and the OpenMetrics parser,
/// and that every stream has its own series.
pub(crate) fn assert_consumers_accept(store: &Path, run: &Run, what: &str) {
    let prometheus = export(store, &run.id, "prometheus");
    let (ok, out, err) = pipe(promtool(), &["check", "metrics"], &prometheus);
    assert!(
        ok && out.is_empty() && err.is_empty(),
        "{what}: promtool on the prometheus export: {out}{err}\n{prometheus}"
    );

    let openmetrics = export(store, &run.id, "openmetrics");
    let (ok, out, err) = pipe("python3", &["-c", OPENMETRICS_PARSER], &openmetrics);
    assert!(
        !err.contains("No module named 'prometheus_client'"),
        "the OpenMetrics parser is needed for this test: python3 -m pip install \
         prometheus_client (scripts/test does)"
    );
    assert!(ok, "{what}: the OpenMetrics parser: {err}\n{openmetrics}");
    let declared: Vec<String> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(str::to_string)
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), declared, "{what}");
    // promtool reads the text format, which names a counter's family with `_total`:
    // of an OpenMetrics file it can only say that those have no help. Nothing else.
    let (_, out, err) = pipe(promtool(), &["check", "metrics"], &openmetrics);
    let findings: BTreeSet<String> = format!("{out}{err}").lines().map(str::to_string).collect();
    let counters: BTreeSet<String> = declared
        .iter()
        .filter_map(|d| d.strip_suffix(" counter"))
        .map(|name| format!("{name}_total no help text"))
        .collect();
    assert_eq!(
        findings, counters,
        "{what}: promtool on the openmetrics export"
    );

    for format in [&prometheus, &openmetrics] {
        let series = series(format);
        for (index, stream) in run.streams.iter().enumerate() {
            let family = if stream.measures_wake_ups() {
                "latlab_wakeup_latency_quantile_seconds_count"
            } else {
                "latlab_sample_quantile_seconds_count"
            };
            let label = format!("stream=\"{index}\"");
            let counts: Vec<&&str> = series
                .iter()
                .filter(|s| s.starts_with(&format!("{family}{{")) && s.contains(&label))
                .collect();
            assert_eq!(counts.len(), 1, "{what}: stream {index}: {counts:?}");
            assert!(
                counts[0].contains(&format!("probe=\"{}\"", stream.probe))
                    && counts[0].contains(&format!("phase=\"{}\"", stream.phase)),
                "{what}: {}",
                counts[0]
            );
        }
    }
}

#[test]
fn a_timer_run_exports_what_promtool_and_the_openmetrics_parser_accept() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = measure(&["-c", "0,1", "-d", "300ms"]);
    assert_eq!(code, 0, "{out}");
    assert_consumers_accept(&store_holding(dir.path(), &run), &run, "timer");
}

#[test]
fn an_explained_run_exports_its_causes_as_promtool_and_the_parser_accept() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = measure(&["-c", "0,1", "-d", "300ms"]);
    assert_eq!(code, 0, "{out}");
    let mut run = crate::explain_view::explained(run);
    // A cause whose name needs escaping in a label value.
    if let Some(entry) = run.explain.as_mut().unwrap().catalogue.first_mut() {
        entry.cause = latlab_model::explain::Cause::Thread {
            comm: "odd \"name\" \\".into(),
            pid: 1,
            prio: 120,
            function: None,
            irq: None,
        };
    }
    let store = store_holding(dir.path(), &run);
    assert_consumers_accept(&store, &run, "explained");
    let explain = run.explain.as_ref().unwrap();
    for format in ["openmetrics", "prometheus"] {
        let metrics = export(&store, &run.id, format);
        let causes = series(&metrics)
            .into_iter()
            .filter(|s| s.starts_with("latlab_spike_cause_seconds_total{"))
            .count();
        assert_eq!(causes, explain.catalogue.len(), "{metrics}");
    }
}

#[test]
fn a_deadline_run_of_streams_without_a_cpu_exports_a_series_per_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = measure(&["-P", "d:100us:1ms", "-c", "0,1", "-d", "300ms"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.streams.len(), 2);
    assert!(run.streams.iter().all(|s| s.cpu.is_none()), "{out}");
    assert_consumers_accept(&store_holding(dir.path(), &run), &run, "deadline");
}

#[test]
fn a_msg_probe_run_exports_samples_not_called_wake_up_latency() {
    let dir = tempfile::tempdir().unwrap();
    let (code, run, out) = measure(&["--probe", "msg", "-c", "0,1", "-d", "300ms"]);
    assert_eq!(code, 0, "{out}");
    let store = store_holding(dir.path(), &run);
    assert_consumers_accept(&store, &run, "msg");
    for format in ["openmetrics", "prometheus"] {
        let metrics = export(&store, &run.id, format);
        assert!(!metrics.contains("wakeup"), "{metrics}");
        assert!(
            metrics.contains("latlab_sample_seconds_bucket{"),
            "{metrics}"
        );
    }
}

#[test]
fn a_multi_phase_scenario_exports_a_series_per_stream_and_phase() {
    let dir = tempfile::tempdir().unwrap();
    let loads = dir.path().join("loads");
    std::fs::create_dir(&loads).unwrap();
    let (code, run, out) = measure(&[
        "osadl",
        "-c",
        "0,1",
        "-d",
        "300ms",
        "--load-dir",
        loads.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.phases.len(), 2, "{out}");
    assert_eq!(run.streams.len(), 4, "{out}");
    assert_consumers_accept(&store_holding(dir.path(), &run), &run, "osadl");
}

#[test]
fn imported_files_export_what_promtool_and_the_openmetrics_parser_accept() {
    let dir = tempfile::tempdir().unwrap();
    // One file of each importer: streams without CPUs, overflows, no mean, ns units.
    for name in [
        "cyclictest-2t.json",
        "cyclictest-nohist.json",
        "cyclictest-2t.hist.txt",
        "cyclictest-overflow-ns.hist.txt",
        "cyclictest-2t.verbose.txt",
        "rtla-timerlat-hist.txt",
        "oslat.txt",
        "oslat.json",
        "jitterdebugger.json",
    ] {
        let (store, run) = store_importing(dir.path(), name);
        assert_consumers_accept(&store, &run, name);
    }
}

/// Prometheus's `histogram_quantile(q, …)` of one series' cumulative buckets
/// ((upper bound in s, count), ascending, `+Inf` last), as promql/quantile.go
/// computes it: linear inside the bucket that holds the rank; the highest finite bound
/// when the rank lies in `+Inf`.
pub(crate) fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    let rank = q * buckets.last().unwrap().1;
    let finite = &buckets[..buckets.len() - 1];
    let Some(b) = finite.iter().position(|&(_, count)| count >= rank) else {
        return finite.last().unwrap().0;
    };
    let (start, below) = match b {
        0 if finite[0].0 <= 0.0 => return finite[0].0,
        0 => (0.0, 0.0),
        _ => finite[b - 1],
    };
    let (end, count) = finite[b];
    start + (end - start) * ((rank - below) / (count - below))
}

/// The buckets of each stream's histogram in `export` (the text format), by stream.
fn buckets_by_stream(export: &str, family: &str) -> BTreeMap<usize, Vec<(f64, f64)>> {
    let mut by_stream: BTreeMap<usize, Vec<(f64, f64)>> = BTreeMap::new();
    for line in export
        .lines()
        .filter(|l| l.starts_with(&format!("{family}_bucket{{")))
    {
        let stream = line.split("stream=\"").nth(1).unwrap().split('"').next();
        let le = line
            .split("le=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap()
        };
        let count = line.rsplit_once(' ').unwrap().1.parse().unwrap();
        by_stream
            .entry(stream.unwrap().parse().unwrap())
            .or_default()
            .push((le, count));
    }
    by_stream
}

/// Samples beyond cyclictest's histogram are known only as "at least" its range:
/// they are counted in `+Inf` only, so that `histogram_quantile` never puts a
/// percentile among them inside a bucket they are not known to lie in (counted at the
/// bucket of the maximum, they made p50 1540 µs where latlab says ≥ 13.097 µs), nor
/// below what latlab knows of it.
#[test]
fn overflowed_samples_are_counted_in_inf_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut bounds = 0;
    // One overflow; some threads' tails; every sample.
    for name in [
        "cyclictest-1t.hist.txt",
        "cyclictest-2t-status-H.hist.txt",
        "cyclictest-overflow-ns.hist.txt",
    ] {
        let (store, run) = store_importing(dir.path(), name);
        let prometheus = export(&store, &run.id, "prometheus");
        let (ok, out, err) = pipe(promtool(), &["check", "metrics"], &prometheus);
        assert!(
            ok && out.is_empty() && err.is_empty(),
            "{name}: promtool: {out}{err}"
        );
        let buckets = buckets_by_stream(&prometheus, "latlab_wakeup_latency_seconds");
        assert_eq!(buckets.len(), run.streams.len(), "{name}:\n{prometheus}");
        for (index, stream) in run.streams.iter().enumerate() {
            let series = &buckets[&index];
            let bounded = stream.decode_histogram().unwrap().unwrap().bounded();
            let finite = series[series.len() - 2].1;
            assert!(
                finite <= (stream.samples - bounded) as f64,
                "{name} stream {index}: {bounded} samples known only as bounds at a finite \
                 bound: {series:?}"
            );
            assert_eq!(series.last().unwrap().1, stream.samples as f64);
            for (key, percentile) in &stream.stats.percentiles_ns {
                let q: f64 = key.parse::<f64>().unwrap() / 100.0;
                let estimate = histogram_quantile(q, series);
                eprintln!(
                    "{name} stream {index}: histogram_quantile({q:.5}) {estimate:.9} s; \
                     latlab: p{key} {percentile}"
                );
                if percentile.is_bound() {
                    bounds += 1;
                    let bound = percentile.value().0 as f64 / 1e9;
                    assert!(
                        estimate >= bound,
                        "{name} stream {index}: histogram_quantile({q}) {estimate} s is \
                         below latlab's {percentile}"
                    );
                }
            }
        }
    }
    assert!(
        bounds > 0,
        "the fixtures have percentiles known only as bounds"
    );
}

/// One series of a query's answer: its labels and value.
pub(crate) type Series = (BTreeMap<String, String>, f64);

/// A Prometheus started for one test, killed by its pid and its directory removed when
/// dropped, also when the test fails.
pub(crate) struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts `/usr/bin/prometheus` on 127.0.0.1, scraping each (job, path) of `jobs`
    /// from `target` every second.
    pub(crate) fn start(target: u16, jobs: &[(&str, &str)]) -> Prometheus {
        let binary = Path::new("/usr/bin/prometheus");
        assert!(
            binary.exists(),
            "Prometheus is needed for this test: apt-get install prometheus (scripts/test does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n");
        config.push_str("scrape_configs:\n");
        for (job, path) in jobs {
            config.push_str(&format!(
                "  - job_name: {job}\n    metrics_path: {path}\n    \
                 static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ));
        }
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Prometheus { child, port, dir }
    }

    /// What it logged.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// The result of the instant query `query`: each series' labels and value, or why
    /// there is none (Prometheus does not answer yet).
    fn query(&mut self, query: &str) -> Result<Vec<Series>, String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("Prometheus ended ({status}):\n{}", self.log());
        }
        let body = http_get(
            self.port,
            &format!("/api/v1/query?query={}", percent_encoded(query)),
        )?;
        let answer: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        assert_eq!(answer["status"], "success", "{query}: {body}");
        let results = answer["data"]["result"]
            .as_array()
            .ok_or_else(|| body.clone())?;
        Ok(results
            .iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (labels, value)
            })
            .collect())
    }

    /// Queries until the answer has `series` series (within a minute).
    pub(crate) fn query_until(&mut self, query: &str, series: usize) -> Vec<Series> {
        let start = Instant::now();
        loop {
            match self.query(query) {
                Ok(answer) if answer.len() >= series => return answer,
                answer if start.elapsed() > Duration::from_secs(60) => {
                    panic!("{query}: {answer:?} after 60 s\n{}", self.log())
                }
                _ => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // By its pid: this child, nothing else.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on 127.0.0.1 when asked.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A query string's characters, percent-encoded but for the unreserved ones.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The body of `GET path` from 127.0.0.1:`port`, or what went wrong.
fn http_get(port: u16, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.split_whitespace().nth(1) == Some("200") => Ok(body.to_string()),
        _ => Err(response),
    }
}

/// A tiny HTTP server serving fixed documents (path → content type, body) until dropped.
struct Exporter {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    fn serve(documents: BTreeMap<String, (&'static str, String)>) -> Exporter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((connection, _)) => answer(connection, &documents),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Exporter {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers one request: the document at its path, or 404.
fn answer(mut connection: TcpStream, documents: &BTreeMap<String, (&'static str, String)>) {
    let _ = connection.set_nonblocking(false);
    let _ = connection.set_read_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match connection.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let response = match documents.get(path) {
        Some((content_type, body)) => format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        ),
        None => {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
        }
    };
    let _ = connection.write_all(response.as_bytes());
}

#[test]
fn a_real_prometheus_scrapes_both_formats_and_keeps_every_stream() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    // Streams without a CPU (the series that collided), and a histogram of known spread.
    let (code, deadline, out) = measure(&["-P", "d:100us:1ms", "-c", "0,1", "-d", "500ms"]);
    assert_eq!(code, 0, "{out}");
    let deadline_store = store_holding(dir.path(), &deadline);
    let (import_store, imported) = store_importing(dir.path(), "cyclictest-2t.hist.txt");
    // One thread's p99 among its overflows: known only as a bound.
    let (overflow_store, overflowed) =
        store_importing(dir.path(), "cyclictest-2t-status-H.hist.txt");
    let runs = [
        ("deadline", &deadline_store, &deadline),
        ("imported", &import_store, &imported),
        ("overflowed", &overflow_store, &overflowed),
    ];
    let formats = [
        (
            "openmetrics",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
        ("prometheus", "text/plain; version=0.0.4; charset=utf-8"),
    ];
    let mut documents = BTreeMap::new();
    let mut jobs = Vec::new();
    for (name, store, run) in runs {
        for (format, content_type) in formats {
            let path = format!("/{name}/{format}");
            documents.insert(path.clone(), (content_type, export(store, &run.id, format)));
            jobs.push((format!("{name}-{format}"), path, run));
        }
    }
    let exporter = Exporter::serve(documents.clone());
    let mut prometheus = Prometheus::start(
        exporter.port,
        &jobs
            .iter()
            .map(|(job, path, _)| (job.as_str(), path.as_str()))
            .collect::<Vec<_>>(),
    );

    for (job, path, run) in &jobs {
        let streams = run.streams.len();
        // Every series of the export, none lost to a collision.
        let written = series(&documents[path].1).len();
        let kept = prometheus.query_until(&format!("count({{job=\"{job}\",run!=\"\"}})"), 1);
        assert_eq!(kept[0].1, written as f64, "{job}: series kept");
        let up = prometheus.query_until(&format!("up{{job=\"{job}\"}}"), 1);
        assert_eq!(
            up[0].1,
            1.0,
            "{job}: the scrape failed\n{}",
            prometheus.log()
        );

        let counts = prometheus.query_until(
            &format!("latlab_wakeup_latency_quantile_seconds_count{{job=\"{job}\"}}"),
            streams,
        );
        let by_stream: BTreeMap<usize, f64> = counts
            .iter()
            .map(|(labels, value)| (labels["stream"].parse().unwrap(), *value))
            .collect();
        let expected: BTreeMap<usize, f64> = run
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.samples as f64))
            .collect();
        assert_eq!(
            by_stream, expected,
            "{job}: one series per stream, every sample"
        );

        let p99 = prometheus.query_until(
            &format!(
                "histogram_quantile(0.99, latlab_wakeup_latency_seconds_bucket{{job=\"{job}\"}})"
            ),
            streams,
        );
        for (labels, estimate) in &p99 {
            let stream = &run.streams[labels["stream"].parse::<usize>().unwrap()];
            let p99 = stream.stats.percentile(99.0).unwrap();
            let Some(exact) = p99.exact() else {
                let bound = p99.value().0 as f64 / 1e9;
                eprintln!(
                    "{job} stream {}: histogram_quantile(0.99) {estimate:.9} s, latlab's p99 {p99}",
                    labels["stream"]
                );
                assert!(
                    *estimate >= bound,
                    "{job}: histogram_quantile(0.99) {estimate} s below latlab's p99 {p99}"
                );
                continue;
            };
            let exact = exact.0 as f64 / 1e9;
            eprintln!(
                "{job} stream {}: histogram_quantile(0.99) {estimate:.9} s, exact p99 {exact:.9} s ({:+.1} %)",
                labels["stream"],
                (estimate - exact) / exact * 100.0
            );
            assert!(
                (estimate - exact).abs() <= 0.1 * exact,
                "{job}: histogram_quantile(0.99) {estimate} s against the exact p99 {exact} s"
            );
        }
    }
    drop(prometheus);
    drop(exporter);
}
