//! `latlab run --listen ADDR`: live metrics at `http://ADDR/metrics` while the run goes.
//!
//! Served by [`crate::http`] on a thread of its own at SCHED_OTHER, started before the
//! first phase and stopped after the last (within a second, whatever its clients do),
//! from the measuring threads' [`LiveStats`], which it only reads (the measuring loop
//! publishes into them anyway, for the display). The text is written by
//! [`latlab_formats::metrics`], as `latlab export --format openmetrics` writes a kept
//! Run: OpenMetrics 1.0.0 to a scraper that accepts `application/openmetrics-text`
//! (Prometheus does), the Prometheus text format 0.0.4 to anyone else (`curl`,
//! `promtool`).
//!
//! Per measuring thread: a cumulative histogram from the coarse live buckets (8 per
//! power of two), counters of samples, missed periods and early wakes, and three maxima
//! as gauges: since the phase began, of the last whole second, and of the last 5
//! minutes (OSADL's 5-minute maxima; a ring of 300 per-second maxima per thread). The
//! threads of a finished phase keep their last histogram, counters and maximum, so no
//! counter goes backwards within a run.
//!
//! Nothing grows with samples or scrapes: the rings are allocated when a phase begins,
//! and a scrape's text is dropped once sent.

use crate::error::CliError;
use crate::http::{Limits, Rendering, Request, Response, Server, Site, Status};
use crate::sink::{PhaseStart, Sink};
use latlab_formats::metrics::{Buckets, Dialect, Exposition, PhaseLoad, RunLabels, StreamFigures};
use latlab_measure::live::LiveStats;
use latlab_measure::load::running::RunningLoad;
use latlab_measure::plan::PhasePlan;
use latlab_model::explain::CauseTotal;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Seconds the rolling maximum spans: OSADL's 5 minutes.
const RING: usize = 300;

/// What a scraper gets. A scrape is answered at once from figures in memory, so a
/// connection needs little time; a few scrapers (Prometheus, a second one, `curl`)
/// are all it serves at once, the next one waiting at most a client's time.
const LIMITS: Limits = Limits {
    connections: 16,
    request_head: Duration::from_secs(2),
    connection: Duration::from_secs(5),
    // Never another thread in the measuring process: answered where it is accepted.
    rendering: Rendering::OnServerThread,
};

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
    server: Option<Server>,
}

/// What the endpoint serves.
struct Board {
    /// The `run` and `host` labels.
    run: RunLabels,
    /// The threads of finished phases at their end.
    finished: Vec<StreamFigures>,
    /// The loads of finished phases at their end.
    finished_loads: Vec<PhaseLoad>,
    /// The phase measuring now.
    current: Option<Current>,
    /// With `--explain`: the catalogue of causes so far, as the trace reader last
    /// published it.
    causes: Option<LiveCauses>,
}

/// The catalogue of causes of a run being explained, shared with the trace reader.
pub type LiveCauses = Arc<Mutex<Vec<CauseTotal>>>;

/// The phase measuring now.
struct Current {
    live: Arc<Vec<LiveStats>>,
    streams: Vec<StreamId>,
    rings: Vec<Ring>,
    phase: String,
    /// Its loads, running.
    loads: Arc<Mutex<Vec<RunningLoad>>>,
}

impl Current {
    /// Its loads' work so far.
    fn loads(&self) -> Vec<PhaseLoad> {
        let loads = self.loads.lock().unwrap_or_else(|e| e.into_inner());
        loads
            .iter()
            .map(|load| PhaseLoad {
                phase: self.phase.clone(),
                load: load.so_far(),
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

/// One thread's figures as a scrape reads them, with its maxima of the last second and
/// 5 minutes when it is measuring (`ring`).
fn figures(id: &StreamId, live: &LiveStats, ring: Option<&Ring>) -> StreamFigures {
    let snapshot = live.snapshot();
    let (histogram, samples) = live_histogram(live);
    StreamFigures {
        probe: id.probe.clone(),
        method: id.method.clone().filter(|m| !m.is_empty()),
        phase: id.phase.clone(),
        index: id.index,
        cpu: id.cpu,
        wake_ups: wake_ups(&id.probe),
        samples,
        histogram: Some(histogram),
        sum_ns: Some(live.sum_ns() as f64),
        quantiles: None,
        missed_periods: Some(snapshot.missed_periods),
        early_wakes: Some(snapshot.early_wakes),
        max: snapshot.max_ns.map(Nanos),
        last_second_max: ring.and_then(|r| r.last).map(Nanos),
        five_minute_max: ring.and_then(Ring::max).map(Nanos),
        // The live buckets are coarse: a count above the level would be a guess.
        spikes: None,
    }
}

/// A thread's coarse buckets as a cumulative histogram, from the bucket below its
/// smallest sample to the one holding its largest, and the samples they hold. The last
/// coarse bucket holds every sample beyond the live histogram's range (about 4.9 hours),
/// known only as at least its lower edge: counted in `+Inf` only.
fn live_histogram(live: &LiveStats) -> (Buckets, u64) {
    let mut coarse: Vec<(i64, u64)> = live.buckets().collect();
    let beyond = coarse.pop().map_or(0, |(_, count)| count);
    let first = coarse.iter().position(|&(_, c)| c > 0);
    let last = coarse.iter().rposition(|&(_, c)| c > 0);
    let mut below = 0;
    let mut cumulative = Vec::new();
    if let (Some(first), Some(last)) = (first, last) {
        for &(upper, count) in &coarse[first.saturating_sub(1)..=last] {
            below += count;
            cumulative.push((Nanos(upper), below));
        }
    }
    let total = coarse.iter().map(|&(_, c)| c).sum::<u64>() + beyond;
    (Buckets { cumulative }, total)
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
        let board = Arc::new(Mutex::new(Board::new(run, host)));
        let server = Server::start(socket, Arc::new(Metrics(board.clone())), LIMITS, "listen")
            .map_err(|e| CliError::runtime(format!("--listen: cannot start: {e}")))?;
        eprintln!("listening on http://{bound}/metrics");
        Ok(Listener {
            board,
            server: Some(server),
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
        lock(&self.board).current = Some(Current {
            rings: streams.iter().map(|_| Ring::new()).collect(),
            live,
            streams: streams.to_vec(),
            phase: phase.to_string(),
            loads,
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
            board.finished_loads.extend(current.loads());
            for (id, live) in current.streams.iter().zip(current.live.iter()) {
                board.finished.push(figures(id, live, None));
            }
        }
    }
}

impl Drop for Listener {
    /// Stops serving, within a second whatever the clients do.
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

impl Board {
    fn new(run: &str, host: &str) -> Board {
        Board {
            run: RunLabels {
                run: run.to_string(),
                published: None,
                host: (!host.is_empty()).then(|| host.to_string()),
            },
            finished: Vec::new(),
            finished_loads: Vec::new(),
            current: None,
            causes: None,
        }
    }

    /// Everything the endpoint serves now.
    fn exposition(&self) -> Exposition {
        let mut streams = self.finished.clone();
        let mut loads = self.finished_loads.clone();
        if let Some(current) = &self.current {
            for ((id, live), ring) in current
                .streams
                .iter()
                .zip(current.live.iter())
                .zip(&current.rings)
            {
                streams.push(figures(id, live, Some(ring)));
            }
            loads.extend(current.loads());
        }
        let causes = self.causes.as_ref().map_or_else(Vec::new, |causes| {
            causes.lock().unwrap_or_else(|e| e.into_inner()).clone()
        });
        Exposition {
            run: self.run.clone(),
            streams,
            loads,
            causes,
            explained: None,
        }
    }

    /// Closes the measuring threads' one-second windows.
    fn close_windows(&mut self) {
        if let Some(current) = self.current.as_mut() {
            for (live, ring) in current.live.iter().zip(current.rings.iter_mut()) {
                ring.push(live.close_window());
            }
        }
    }
}

/// The endpoint's one page, `/metrics`.
struct Metrics(Arc<Mutex<Board>>);

impl Site for Metrics {
    fn get(&self, request: &Request) -> Response {
        if request.path() != "/metrics" {
            return self.error(Status::NotFound, "Not found", "only /metrics is served");
        }
        let dialect = Dialect::accepted_by(request.accept.as_deref());
        let text = lock(&self.0).exposition().write(dialect);
        Response::new(Status::Ok, dialect.content_type(), text)
    }

    fn error(&self, status: Status, _title: &str, message: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", format!("{message}\n"))
    }

    fn each_second(&self) {
        lock(&self.0).close_windows();
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

/// Whether a probe's samples are wake-up latencies (as `Stream::measures_wake_ups`).
fn wake_ups(probe: &str) -> bool {
    probe == "timer" || probe.starts_with("timerlat")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let listener = Listener {
            board: Arc::new(Mutex::new(Board::new("r", ""))),
            server: None,
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
        let text = lock(&listener.board)
            .exposition()
            .write(Dialect::OpenMetrics);
        let labels =
            "run=\"r\",probe=\"timer\",method=\"abs\",phase=\"main\",stream=\"0\",cpu=\"1\"";
        for line in [
            format!("latlab_wakeup_latency_seconds_bucket{{{labels},le=\"0.0\"}} 1"),
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
        let after = lock(&listener.board)
            .exposition()
            .write(Dialect::Prometheus);
        assert!(after.contains(&format!("latlab_samples_total{{{labels}}} 4")));
        assert!(after.contains("# TYPE latlab_samples_total counter"));
        assert!(!after.contains("# EOF"));
    }

    /// A sample beyond the live histogram's range is at least its last bucket's lower
    /// edge, where exactly not known: in `+Inf` only.
    #[test]
    fn a_sample_beyond_the_live_range_is_in_inf_only() {
        let live = LiveStats::default();
        live.publish(1_000, 0);
        live.publish(i64::MAX / 2, 0);
        let (buckets, samples) = live_histogram(&live);
        assert_eq!(samples, 2);
        assert_eq!(buckets.cumulative.last().map(|b| b.1), Some(1));
    }
}
