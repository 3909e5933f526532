//! `latlab run --listen ADDR`: live metrics at `http://ADDR/metrics` while the run goes.
//!
//! One thread at SCHED_OTHER, started before the first phase and stopped after the
//! last, answers `GET /metrics` from the measuring threads' [`LiveStats`], which it
//! only reads (the measuring loop publishes into them anyway, for the display). It
//! serves OpenMetrics 1.0.0 to a scraper that accepts `application/openmetrics-text`
//! (Prometheus does) and the Prometheus text format 0.0.4 to anyone else (`curl`,
//! `promtool`).
//!
//! Per measuring thread, labelled like the `openmetrics` export (`run`, `host`,
//! `probe`, `method`, `phase`, `stream`, `cpu`): a cumulative histogram from the coarse
//! live buckets (8 per power of two), counters of samples, missed periods and early
//! wakes, and three maxima as gauges: since the phase began, of the last whole second,
//! and of the last 5 minutes (OSADL's 5-minute maxima; a ring of 300 per-second maxima
//! per thread). The threads of a finished phase keep their last histogram, counters
//! and maximum, so no counter goes backwards within a run.
//!
//! Nothing grows with samples or scrapes: the rings are allocated when a phase begins,
//! and a scrape's text is dropped once sent.

use crate::error::CliError;
use crate::sink::{PhaseStart, Sink};
use latlab_measure::live::LiveStats;
use latlab_measure::load::running::RunningLoad;
use latlab_measure::plan::PhasePlan;
use latlab_model::explain::CauseTotal;
use latlab_model::spec::SchedSpec;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Seconds the rolling maximum spans: OSADL's 5 minutes.
const RING: usize = 300;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// What identifies one measuring thread's series.
#[derive(Debug, Clone)]
pub struct StreamId {
    /// The probe (`latlab probes`).
    pub probe: String,
    /// Its method or parameters, when it has any.
    pub method: Option<String>,
    /// The phase.
    pub phase: String,
    /// Its index among the run's streams.
    pub index: usize,
    /// The CPU it is pinned to.
    pub cpu: Option<usize>,
}

/// The live metrics endpoint; stops when dropped.
pub struct Listener {
    board: Arc<Mutex<Board>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What the endpoint serves.
struct Board {
    /// The `run` and `host` labels, written out.
    base: String,
    /// The threads of finished phases at their end.
    finished: Vec<Frozen>,
    /// The loads of finished phases at their end: labels and work done.
    finished_loads: Vec<(String, LoadFigures)>,
    /// The phase measuring now.
    current: Option<Current>,
    /// With `--explain`: the catalogue of causes so far, as the trace reader last
    /// published it.
    causes: Option<LiveCauses>,
}

/// The catalogue of causes of a run being explained, shared with the trace reader.
pub type LiveCauses = Arc<Mutex<Vec<CauseTotal>>>;

/// A stream of a finished phase.
struct Frozen {
    labels: String,
    wake_ups: bool,
    figures: Figures,
}

/// The phase measuring now.
struct Current {
    live: Arc<Vec<LiveStats>>,
    labels: Vec<(String, bool)>,
    rings: Vec<Ring>,
    /// Its loads, running, and the labels of their series (the phase's).
    loads: Option<(Arc<Mutex<Vec<RunningLoad>>>, String)>,
}

/// What a load has done, as a scrape reads it.
#[derive(Clone)]
struct LoadFigures {
    spec: String,
    unit: String,
    work: u64,
    rate: Option<f64>,
    rate_unit: String,
}

impl LoadFigures {
    fn read(loads: &Mutex<Vec<RunningLoad>>) -> Vec<LoadFigures> {
        loads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|load| {
                let record = load.so_far();
                LoadFigures {
                    spec: record.spec,
                    unit: record.unit,
                    work: record.work,
                    rate: record.rate,
                    rate_unit: record.rate_unit,
                }
            })
            .collect()
    }
}

/// One thread's maxima of the last [`RING`] seconds.
struct Ring {
    maxima: Box<[Option<i64>; RING]>,
    next: usize,
    /// The maximum of the last whole second.
    last: Option<i64>,
}

impl Ring {
    fn new() -> Ring {
        Ring {
            maxima: Box::new([None; RING]),
            next: 0,
            last: None,
        }
    }

    fn push(&mut self, max: Option<i64>) {
        self.maxima[self.next] = max;
        self.next = (self.next + 1) % RING;
        self.last = max;
    }

    fn max(&self) -> Option<i64> {
        self.maxima.iter().flatten().copied().max()
    }
}

/// One thread's figures as a scrape reads them.
#[derive(Clone)]
struct Figures {
    /// Every coarse bucket's largest value (ns) and count, ascending.
    buckets: Vec<(i64, u64)>,
    samples: u64,
    sum_ns: i64,
    missed: u64,
    early: u64,
    max_ns: Option<i64>,
    /// The last second's and the last 5 minutes' maxima (measuring threads only).
    last_second_ns: Option<i64>,
    five_minutes_ns: Option<i64>,
}

impl Figures {
    fn read(live: &LiveStats, ring: Option<&Ring>) -> Figures {
        let snapshot = live.snapshot();
        Figures {
            buckets: live.buckets().collect(),
            samples: snapshot.samples,
            sum_ns: live.sum_ns(),
            missed: snapshot.missed_periods,
            early: snapshot.early_wakes,
            max_ns: snapshot.max_ns,
            last_second_ns: ring.and_then(|r| r.last),
            five_minutes_ns: ring.and_then(Ring::max),
        }
    }
}

impl Listener {
    /// Binds `addr` (`HOST:PORT`; only a loopback address unless `any`), says where it
    /// listens on standard error and starts serving; a run with nothing measured yet
    /// serves no series.
    pub fn start(addr: &str, any: bool, run: &str, host: &str) -> Result<Listener, CliError> {
        let address = resolve(addr, any, "the metrics")?;
        let socket = TcpListener::bind(address).map_err(|e| {
            CliError::usage(
                "--listen",
                format!(
                    "cannot listen on {address}: {e}; give a free port (or port 0 for any \
                     free one)"
                ),
            )
        })?;
        let bound = socket
            .local_addr()
            .map_err(|e| CliError::runtime(format!("--listen: {e}")))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| CliError::runtime(format!("--listen: {e}")))?;
        let mut base = format!("run=\"{}\"", escape(run));
        if !host.is_empty() {
            let _ = write!(base, ",host=\"{}\"", escape(host));
        }
        let board = Arc::new(Mutex::new(Board {
            base,
            finished: Vec::new(),
            finished_loads: Vec::new(),
            current: None,
            causes: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (board, stop) = (board.clone(), stop.clone());
            std::thread::Builder::new()
                .name("latlab-listen".into())
                .spawn(move || serve(socket, &board, &stop))
                .map_err(|e| CliError::runtime(format!("--listen: cannot start: {e}")))?
        };
        eprintln!("listening on http://{bound}/metrics");
        Ok(Listener {
            board,
            stop,
            thread: Some(thread),
        })
    }

    /// Serves the threads of a phase that begins measuring, and the work its `loads`
    /// do.
    pub fn begin_phase(
        &self,
        live: Arc<Vec<LiveStats>>,
        streams: &[StreamId],
        phase: &str,
        loads: Arc<Mutex<Vec<RunningLoad>>>,
    ) {
        let mut board = lock(&self.board);
        let labels = streams
            .iter()
            .map(|s| (stream_labels(&board.base, s), wake_ups(&s.probe)))
            .collect();
        let load_labels = format!("{},phase=\"{}\"", board.base, escape(phase));
        board.current = Some(Current {
            rings: streams.iter().map(|_| Ring::new()).collect(),
            live,
            labels,
            loads: Some((loads, load_labels)),
        });
    }

    /// Serves the causes of the run's spikes as the explainer sums them (`--explain`).
    pub fn show_causes(&self, causes: LiveCauses) {
        lock(&self.board).causes = Some(causes);
    }

    /// Keeps the current phase's threads at their final figures.
    pub fn end_phase(&self) {
        let mut board = lock(&self.board);
        if let Some(current) = board.current.take() {
            if let Some((loads, labels)) = &current.loads {
                for figures in LoadFigures::read(loads) {
                    board.finished_loads.push((labels.clone(), figures));
                }
            }
            for (live, (labels, wake_ups)) in current.live.iter().zip(current.labels) {
                board.finished.push(Frozen {
                    labels,
                    wake_ups,
                    figures: Figures::read(live, None),
                });
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What identifies the streams a phase will measure, the first being the run's
/// `first`-th: one per CPU, pinned unless under SCHED_DEADLINE (as the runner places
/// them).
fn stream_ids(phase: &PhasePlan, first: usize) -> Vec<StreamId> {
    let pinned = !matches!(phase.request.policy, SchedSpec::Deadline { .. });
    let method = phase.setup.variant(phase.spec.info());
    phase
        .request
        .cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| StreamId {
            probe: phase.spec.name.clone(),
            method: Some(method.clone()),
            phase: phase.request.phase.clone(),
            index: first + i,
            cpu: pinned.then_some(cpu),
        })
        .collect()
}

impl Sink for Listener {
    fn phase_begins(&mut self, start: &PhaseStart<'_>) {
        self.begin_phase(
            start.live.clone(),
            &stream_ids(start.phase, start.first_stream),
            &start.phase.request.phase,
            start.loads.clone(),
        );
    }

    fn phase_ends(&mut self) {
        self.end_phase();
    }
}

/// The address of `--listen`, refused unless loopback or `any`: anyone who reaches it
/// could read what it `serves` (`the metrics`).
pub fn resolve(addr: &str, any: bool, serves: &str) -> Result<SocketAddr, CliError> {
    let address = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            CliError::usage(
                "--listen",
                format!("'{addr}' is not HOST:PORT (e.g. 127.0.0.1:9464)"),
            )
        })?;
    if !address.ip().is_loopback() && !any {
        return Err(CliError::usage(
            "--listen",
            format!(
                "{address} is not a loopback address: anyone who reaches it could read \
                 {serves}; add --listen-any to serve it anyway, or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(address)
}

fn lock(board: &Mutex<Board>) -> MutexGuard<'_, Board> {
    board.lock().unwrap_or_else(|e| e.into_inner())
}

/// The server thread: answers requests and closes the measuring threads' windows
/// once a second, until told to stop.
fn serve(socket: TcpListener, board: &Mutex<Board>, stop: &AtomicBool) {
    // Never compete with the measuring threads, whatever the thread that started it.
    let _ = latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Other { nice: 0 });
    let mut tick = Instant::now() + Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= tick {
            tick += Duration::from_secs(1);
            let mut board = lock(board);
            if let Some(current) = board.current.as_mut() {
                for (live, ring) in current.live.iter().zip(current.rings.iter_mut()) {
                    ring.push(live.close_window());
                }
            }
        }
        match socket.accept() {
            Ok((connection, _)) => answer(connection, board),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Answers one request.
fn answer(mut connection: TcpStream, board: &Mutex<Board>) {
    let _ = connection.set_nonblocking(false);
    let _ = connection.set_read_timeout(Some(REQUEST_TIMEOUT));
    let mut request = Vec::new();
    let mut buffer = [0u8; 2048];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        match connection.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let mut words = request.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let response = if path != "/metrics" {
        plain("404 Not Found", "only /metrics is served\n")
    } else if method != "GET" && method != "HEAD" {
        plain("405 Method Not Allowed", "GET /metrics\n")
    } else {
        let openmetrics = request.lines().any(|l| {
            l.split_once(':').is_some_and(|(name, value)| {
                name.eq_ignore_ascii_case("accept")
                    && value.contains("application/openmetrics-text")
            })
        });
        let dialect = match openmetrics {
            true => Dialect::OpenMetrics,
            false => Dialect::Prometheus,
        };
        let body = render(&lock(board), dialect);
        let mut response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            dialect.content_type(),
            body.len()
        );
        if method == "GET" {
            response.push_str(&body);
        }
        response
    };
    let _ = connection.write_all(response.as_bytes());
}

/// A plain-text answer with `status`.
fn plain(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The two ways of writing the families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    OpenMetrics,
    Prometheus,
}

impl Dialect {
    fn content_type(self) -> &'static str {
        match self {
            Dialect::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Dialect::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Whether a probe's samples are wake-up latencies (as `Stream::measures_wake_ups`).
fn wake_ups(probe: &str) -> bool {
    probe == "timer" || probe.starts_with("timerlat")
}

fn stream_labels(base: &str, s: &StreamId) -> String {
    let mut labels = format!("{base},probe=\"{}\"", escape(&s.probe));
    if let Some(method) = s.method.as_deref().filter(|m| !m.is_empty()) {
        let _ = write!(labels, ",method=\"{}\"", escape(method));
    }
    if !s.phase.is_empty() {
        let _ = write!(labels, ",phase=\"{}\"", escape(&s.phase));
    }
    let _ = write!(labels, ",stream=\"{}\"", s.index);
    if let Some(cpu) = s.cpu {
        let _ = write!(labels, ",cpu=\"{cpu}\"");
    }
    labels
}

/// A label value, escaped as both formats escape it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Seconds from whole nanoseconds, exactly.
fn seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    let fraction = format!("{:09}", abs % 1_000_000_000);
    let fraction = fraction.trim_end_matches('0');
    match fraction.is_empty() {
        true => format!("{sign}{}", abs / 1_000_000_000),
        false => format!("{sign}{}.{fraction}", abs / 1_000_000_000),
    }
}

/// A family's kind and how it is described.
struct Family {
    /// The OpenMetrics name (a counter's without `_total`).
    name: &'static str,
    kind: &'static str,
    unit: &'static str,
    help: &'static str,
}

const WAKEUP_HISTOGRAM: Family = Family {
    name: "latlab_wakeup_latency_seconds",
    kind: "histogram",
    unit: "seconds",
    help: "Wake-up latency: wake-up minus deadline (live, 8 buckets per power of two).",
};

const SAMPLE_HISTOGRAM: Family = Family {
    name: "latlab_sample_seconds",
    kind: "histogram",
    unit: "seconds",
    help: "A probe's sample, as the probe in the probe label defines it (live, 8 buckets \
           per power of two).",
};

/// The counters and gauges: each reads one figure of a thread.
type Figure = fn(&Figures) -> Option<String>;

const SCALARS: [(Family, Figure); 6] = [
    (
        Family {
            name: "latlab_samples",
            kind: "counter",
            unit: "samples",
            help: "Samples taken so far.",
        },
        |f| Some(f.samples.to_string()),
    ),
    (
        Family {
            name: "latlab_missed_periods",
            kind: "counter",
            unit: "periods",
            help: "Periods that passed without a sample because one came more than a period \
                   late.",
        },
        |f| Some(f.missed.to_string()),
    ),
    (
        Family {
            name: "latlab_early_wakes",
            kind: "counter",
            unit: "wakes",
            help: "Samples below zero: wake-ups before the deadline.",
        },
        |f| Some(f.early.to_string()),
    ),
    (
        Family {
            name: "latlab_max_seconds",
            kind: "gauge",
            unit: "seconds",
            help: "The largest sample since the phase began.",
        },
        |f| f.max_ns.map(seconds),
    ),
    (
        Family {
            name: "latlab_last_second_max_seconds",
            kind: "gauge",
            unit: "seconds",
            help: "The largest sample of the last whole second (absent when it had none).",
        },
        |f| f.last_second_ns.map(seconds),
    ),
    (
        Family {
            name: "latlab_five_minute_max_seconds",
            kind: "gauge",
            unit: "seconds",
            help: "The largest sample of the last 5 minutes, from per-second maxima (OSADL's \
                   5-minute maxima).",
        },
        |f| f.five_minutes_ns.map(seconds),
    ),
];

/// Everything the endpoint serves now, in `dialect`.
fn render(board: &Board, dialect: Dialect) -> String {
    let mut streams: Vec<(&str, bool, Figures)> = board
        .finished
        .iter()
        .map(|f| (f.labels.as_str(), f.wake_ups, f.figures.clone()))
        .collect();
    if let Some(current) = &board.current {
        for ((live, (labels, wake_ups)), ring) in
            current.live.iter().zip(&current.labels).zip(&current.rings)
        {
            streams.push((labels, *wake_ups, Figures::read(live, Some(ring))));
        }
    }
    let mut out = String::new();
    for (family, wake) in [(&WAKEUP_HISTOGRAM, true), (&SAMPLE_HISTOGRAM, false)] {
        let of_kind: Vec<_> = streams.iter().filter(|s| s.1 == wake).collect();
        if of_kind.is_empty() {
            continue;
        }
        header(&mut out, family, dialect);
        for (labels, _, figures) in of_kind {
            histogram(&mut out, family.name, labels, figures);
        }
    }
    for (family, figure) in &SCALARS {
        let lines: Vec<(&str, String)> = streams
            .iter()
            .filter_map(|(labels, _, f)| Some((*labels, figure(f)?)))
            .collect();
        if lines.is_empty() {
            continue;
        }
        header(&mut out, family, dialect);
        let total = if family.kind == "counter" {
            "_total"
        } else {
            ""
        };
        for (labels, value) in lines {
            let _ = writeln!(out, "{}{total}{{{labels}}} {value}", family.name);
        }
    }
    let mut loads: Vec<(String, LoadFigures)> = board.finished_loads.clone();
    if let Some((running, labels)) = board.current.as_ref().and_then(|c| c.loads.as_ref()) {
        loads.extend(
            LoadFigures::read(running)
                .into_iter()
                .map(|f| (labels.clone(), f)),
        );
    }
    render_loads(&mut out, &loads, dialect);
    if let Some(causes) = &board.causes {
        render_causes(&mut out, &board.base, causes, dialect);
    }
    if dialect == Dialect::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

const LOAD_WORK: Family = Family {
    name: "latlab_load_work",
    kind: "counter",
    unit: "",
    help: "Work a background load has done so far, in the unit its work_unit label names \
           (hackbench messages, bytes copied, ...): its rate is the load's throughput.",
};

const LOAD_RATE: Family = Family {
    name: "latlab_load_rate",
    kind: "gauge",
    unit: "",
    help: "A background load's throughput since it started, in its rate_unit label's unit.",
};

/// The loads' work as counters and their rates as gauges, per phase and load.
fn render_loads(out: &mut String, loads: &[(String, LoadFigures)], dialect: Dialect) {
    if loads.is_empty() {
        return;
    }
    let labels = |base: &str, f: &LoadFigures| format!("{base},load=\"{}\"", escape(&f.spec));
    header(out, &LOAD_WORK, dialect);
    for (base, f) in loads {
        let _ = writeln!(
            out,
            "{}_total{{{},work_unit=\"{}\"}} {}",
            LOAD_WORK.name,
            labels(base, f),
            escape(&f.unit),
            f.work
        );
    }
    let rated: Vec<_> = loads.iter().filter(|(_, f)| f.rate.is_some()).collect();
    if rated.is_empty() {
        return;
    }
    header(out, &LOAD_RATE, dialect);
    for (base, f) in rated {
        let _ = writeln!(
            out,
            "{}{{{},rate_unit=\"{}\"}} {}",
            LOAD_RATE.name,
            labels(base, f),
            escape(&f.rate_unit),
            f.rate.unwrap_or_default()
        );
    }
}

const CAUSE_SECONDS: Family = Family {
    name: "latlab_spike_cause_seconds",
    kind: "counter",
    unit: "seconds",
    help: "Time a cause took from the spikes explained so far (latlab run --explain), per \
           phase and CPU; kind=unexplained: time no kernel event explains.",
};

const CAUSE_SPIKES: Family = Family {
    name: "latlab_spike_cause_spikes",
    kind: "counter",
    unit: "spikes",
    help: "Spikes explained so far that a cause contributed to, per phase and CPU.",
};

/// The catalogue as counters, named and labelled as `latlab export --format openmetrics`
/// names them (causes that read alike summed into one series).
fn render_causes(out: &mut String, base: &str, causes: &LiveCauses, dialect: Dialect) {
    let catalogue = match causes.lock() {
        Ok(c) => c.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let mut by_labels: std::collections::BTreeMap<String, (i64, u64)> = Default::default();
    for entry in &catalogue {
        let mut labels = format!("{base},phase=\"{}\"", escape(&entry.phase));
        if let Some(cpu) = entry.cpu {
            let _ = write!(labels, ",cpu=\"{cpu}\"");
        }
        let _ = write!(
            labels,
            ",cause=\"{}\",kind=\"{}\"",
            escape(&entry.cause.label()),
            entry.cause.kind_name()
        );
        let sums = by_labels.entry(labels).or_default();
        sums.0 += entry.total_ns.0;
        sums.1 += entry.spikes;
    }
    if by_labels.is_empty() {
        return;
    }
    header(out, &CAUSE_SECONDS, dialect);
    for (labels, (ns, _)) in &by_labels {
        let _ = writeln!(
            out,
            "{}_total{{{labels}}} {}",
            CAUSE_SECONDS.name,
            seconds(*ns)
        );
    }
    header(out, &CAUSE_SPIKES, dialect);
    for (labels, (_, spikes)) in &by_labels {
        let _ = writeln!(out, "{}_total{{{labels}}} {spikes}", CAUSE_SPIKES.name);
    }
}

/// A family's metadata lines.
fn header(out: &mut String, family: &Family, dialect: Dialect) {
    let (name, kind) = (family.name, family.kind);
    match dialect {
        Dialect::OpenMetrics => {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            if !family.unit.is_empty() {
                let _ = writeln!(out, "# UNIT {name} {}", family.unit);
            }
            let _ = writeln!(out, "# HELP {name} {}", family.help.replace('"', "\\\""));
        }
        Dialect::Prometheus => {
            let total = if kind == "counter" { "_total" } else { "" };
            let _ = writeln!(out, "# HELP {name}{total} {}", family.help);
            let _ = writeln!(out, "# TYPE {name}{total} {kind}");
        }
    }
}

/// A thread's cumulative histogram: every coarse bucket from the one below its
/// smallest sample to the one holding its largest, `+Inf`, `_count` and `_sum`.
fn histogram(out: &mut String, name: &str, labels: &str, f: &Figures) {
    let first = f.buckets.iter().position(|&(_, c)| c > 0);
    let last = f.buckets.iter().rposition(|&(_, c)| c > 0);
    let mut below = 0;
    if let (Some(first), Some(last)) = (first, last) {
        for &(upper, count) in &f.buckets[first.saturating_sub(1)..=last] {
            below += count;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {below}",
                seconds(upper)
            );
        }
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {below}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {below}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", seconds(f.sum_ns));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact_decimals() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(1_023), "0.000001023");
        assert_eq!(seconds(2_500_000_000), "2.5");
        assert_eq!(seconds(-40), "-0.00000004");
    }

    #[test]
    fn only_loopback_unless_asked() {
        assert!(resolve("127.0.0.1:0", false, "the metrics").is_ok());
        assert!(resolve("[::1]:0", false, "the metrics").is_ok());
        let err = resolve("0.0.0.0:9464", false, "the metrics")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--listen-any"), "{err}");
        assert!(resolve("0.0.0.0:9464", true, "the metrics").is_ok());
        let err = resolve("nonsense", false, "the metrics")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--listen: "), "{err}");
    }

    #[test]
    fn a_phase_is_served_while_it_measures_and_kept_after() {
        let board = Mutex::new(Board {
            base: "run=\"r\"".into(),
            finished: Vec::new(),
            finished_loads: Vec::new(),
            current: None,
            causes: None,
        });
        let listener = Listener {
            board: Arc::new(board),
            stop: Arc::new(AtomicBool::new(true)),
            thread: None,
        };
        let live = Arc::new(vec![LiveStats::default()]);
        let id = StreamId {
            probe: "timer".into(),
            method: Some("abs".into()),
            phase: "main".into(),
            index: 0,
            cpu: Some(1),
        };
        listener.begin_phase(live.clone(), &[id], "main", Arc::default());
        for v in [1_000, 2_000, 40_000, -3] {
            live[0].publish(v, 1);
        }
        let text = render(&lock(&listener.board), Dialect::OpenMetrics);
        let labels =
            "run=\"r\",probe=\"timer\",method=\"abs\",phase=\"main\",stream=\"0\",cpu=\"1\"";
        for line in [
            format!("latlab_wakeup_latency_seconds_bucket{{{labels},le=\"0\"}} 1"),
            format!("latlab_wakeup_latency_seconds_bucket{{{labels},le=\"+Inf\"}} 4"),
            format!("latlab_wakeup_latency_seconds_count{{{labels}}} 4"),
            format!("latlab_wakeup_latency_seconds_sum{{{labels}}} 0.000042997"),
            format!("latlab_samples_total{{{labels}}} 4"),
            format!("latlab_missed_periods_total{{{labels}}} 4"),
            format!("latlab_early_wakes_total{{{labels}}} 1"),
            format!("latlab_max_seconds{{{labels}}} 0.00004"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert!(
            !text.contains("last_second_max_seconds{"),
            "no second closed yet"
        );
        listener.end_phase();
        let after = render(&lock(&listener.board), Dialect::Prometheus);
        assert!(after.contains(&format!("latlab_samples_total{{{labels}}} 4")));
        assert!(after.contains("# TYPE latlab_samples_total counter"));
        assert!(!after.contains("# EOF"));
    }
}
