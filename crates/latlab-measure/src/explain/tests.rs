//! Sessions on this machine's tracefs (these tests need root): CPU 1 traced, a thread
//! there that sleeps and wakes.

use super::*;
use crate::live::LiveStats;
use crate::notice::Notice;
use crate::probe::{info, timer};
use crate::runner::{run_probe, RunObserver, RunRequest, SystemSetup};
use latlab_model::spec::SchedSpec;
use latlab_rt::clock::Clock;
use latlab_trace::{decode_page, EventTable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The CPU traced: not the first, so the reader has one of its own.
const TRACED: usize = 1;

/// One session at a time: every session of this process is `instances/latlab-<pid>`.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The session, or a panic saying what these tests need.
fn start<E: Explainer + 'static>(mode: ExplainMode, explainer: E) -> Session<E> {
    start_with(mode, &ReaderSettings::default(), explainer)
}

fn start_with<E: Explainer + 'static>(
    mode: ExplainMode,
    settings: &ReaderSettings,
    explainer: E,
) -> Session<E> {
    assert!(
        latlab_rt::affinity::allowed_cpus().unwrap().len() >= 2,
        "these tests trace CPU {TRACED} and read from another: run them on 2 CPUs or more"
    );
    Session::start(&[TRACED], mode, settings, explainer)
        .unwrap_or_else(|e| panic!("{e} (these tests need root and tracefs)"))
}

/// What the test explainer saw of one spike.
#[derive(Debug, Clone)]
struct Seen {
    spike: FedSpike,
    last: bool,
    pages: usize,
    covered: bool,
    lost: bool,
    /// Timestamps of the switches to the spike's thread in its window.
    switches_in: Vec<u64>,
}

/// What the test explainer saw of the whole hold in its last call.
#[derive(Debug, Default)]
struct Whole {
    pages: usize,
    partial_pages: usize,
    events: usize,
    ordered: bool,
    names: Vec<String>,
}

/// An explainer that records what it was handed.
#[derive(Default)]
struct Recording {
    seen: Vec<Seen>,
    calls: usize,
    whole: Whole,
}

impl Explainer for Recording {
    fn drained(&mut self, held: &Held, spikes: &mut Vec<FedSpike>, last: bool) {
        self.calls += 1;
        let table = EventTable::new(held.formats().to_vec());
        for spike in spikes.drain(..) {
            let from = spike.due_trace_ns.saturating_sub(1_000_000);
            let window = held.pages(spike.cpu.unwrap(), from, spike.wake_trace_ns);
            let mut switches_in = Vec::new();
            for page in &window.pages {
                for record in decode_page(held.layout(), page).unwrap().records {
                    let event = table.decode(TRACED, &record).unwrap();
                    let to_thread = event.name() == "sched_switch"
                        && event.integer("next_pid") == Some(spike.tid.into());
                    if to_thread
                        && (spike.due_trace_ns..=spike.wake_trace_ns).contains(&record.timestamp)
                    {
                        switches_in.push(record.timestamp);
                    }
                }
            }
            self.seen.push(Seen {
                last,
                pages: window.pages.len(),
                covered: window.covered,
                lost: window.lost,
                switches_in,
                spike,
            });
        }
        if last {
            self.whole = whole(held, &table);
        }
    }
}

/// Every held page of the traced CPU: partly filled ones, events in time order.
fn whole(held: &Held, table: &EventTable) -> Whole {
    let all = held.pages(TRACED, 0, u64::MAX);
    let mut whole = Whole {
        ordered: true,
        ..Whole::default()
    };
    let mut previous = 0;
    for page in &all.pages {
        let decoded = decode_page(held.layout(), page).unwrap();
        let used = decoded.records.last().map_or(0, |r| {
            r.payload.as_ptr() as usize + r.payload.len() - page.as_ptr() as usize
        });
        whole.pages += 1;
        whole.partial_pages += usize::from(used + 64 < page.len());
        for record in decoded.records {
            whole.ordered &= record.timestamp >= previous;
            previous = record.timestamp;
            whole.events += 1;
            let name = table.decode(TRACED, &record).unwrap().name().to_string();
            if !whole.names.contains(&name) {
                whole.names.push(name);
            }
        }
    }
    whole
}

/// A thread on the traced CPU sleeping 1 ms at a time until `stop`; sends its tid.
fn sleeper(
    stop: Arc<AtomicBool>,
    tid: std::sync::mpsc::Sender<i32>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        latlab_rt::affinity::pin_current_thread(TRACED).unwrap();
        tid.send(latlab_rt::sched::gettid()).unwrap();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

fn instance_exists(dir: &std::path::Path) -> bool {
    dir.exists()
}

#[test]
fn spikes_are_handed_over_with_their_window_while_tracing_and_the_instance_goes() {
    let _serial = serial();
    let session = start(ExplainMode::Default, Recording::default());
    let dir = session.instance_dir().to_path_buf();
    assert!(instance_exists(&dir));
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let thread = sleeper(stop.clone(), tid_tx);
    let tid = tid_rx.recv().unwrap();

    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(tid);
    let origin = Clock::Monotonic.now_ns();
    feed.set_origin(Origin {
        probe_ns: origin,
        probe_minus_monotonic_ns: 0,
    });
    feed.arm();
    // Spikes of 2 ms each, due 20, 40 and 60 ms from the origin: the sleeper woke
    // inside each window.
    std::thread::sleep(Duration::from_millis(100));
    for at in [20_000_000, 40_000_000, 60_000_000] {
        feed.push(at, 2_000_000);
    }
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    let finished = session.finish();
    assert!(!instance_exists(&dir), "{} is left", dir.display());

    assert_eq!(finished.clock, "mono");
    assert!(finished.events.contains(&"sched:sched_switch".to_string()));
    assert!(
        finished.buffer_kb >= 4096,
        "the kernel rounds up to whole pages"
    );
    assert!(finished.problems.is_empty(), "{:?}", finished.problems);
    assert_eq!(finished.spikes_dropped, 0);
    let stats = &finished.reader;
    assert!(stats.pages > 0 && stats.events > 0, "{stats:?}");
    assert_eq!(stats.cpu, Some(0), "the reader runs off the traced CPU");
    assert!(stats.held_bytes_max > 0);
    let recording = finished.explainer;
    let seen = &recording.seen;
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (seen, at) in seen.iter().zip([20_000_000, 40_000_000, 60_000_000]) {
        let spike = &seen.spike;
        assert_eq!(
            (spike.phase.as_str(), spike.thread, spike.tid),
            ("main", 0, tid)
        );
        assert_eq!(
            spike.due_trace_ns,
            (origin + at) as u64,
            "mono is CLOCK_MONOTONIC"
        );
        assert_eq!(spike.wake_trace_ns, spike.due_trace_ns + 2_000_000);
        assert!(!seen.last, "handed over while tracing, not at the end");
        assert!(seen.covered && !seen.lost && seen.pages > 0, "{seen:?}");
        assert!(!seen.switches_in.is_empty(), "the sleeper woke in {seen:?}");
    }
    // Pages come out partly filled at each drain (the rest of the page comes in a
    // later one); held in order, they hold every event once, in time order.
    let whole = &recording.whole;
    assert!(whole.pages > 1 && whole.partial_pages > 0, "{whole:?}");
    assert!(whole.ordered, "{whole:?}");
    assert_eq!(
        whole.events as u64, stats.events,
        "every event read is held"
    );
}

#[test]
fn dropping_a_session_stops_its_reader_and_removes_the_instance() {
    let _serial = serial();
    let session = start(ExplainMode::Default, Recording::default());
    let dir = session.instance_dir().to_path_buf();
    std::thread::sleep(Duration::from_millis(150));
    drop(session);
    assert!(!instance_exists(&dir), "{} is left", dir.display());
}

#[test]
fn deep_mode_adds_hrtimers_and_a_stack_at_each_wake_of_a_measuring_thread() {
    let _serial = serial();
    let session = start(ExplainMode::Deep, Recording::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let thread = sleeper(stop.clone(), tid_tx);
    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(tid_rx.recv().unwrap());
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    let finished = session.finish();
    assert!(finished.problems.is_empty(), "{:?}", finished.problems);
    for event in [
        "timer:hrtimer_expire_entry",
        "workqueue:workqueue_execute_start",
    ] {
        assert!(finished.events.contains(&event.to_string()), "{event}");
    }
    let names = &finished.explainer.whole.names;
    assert!(
        names.iter().any(|n| n == "kernel_stack"),
        "no stack recorded at the sleeper's wakes: {names:?}"
    );
}

struct Silent;

impl RunObserver for Silent {
    fn ready(&mut self, _: &[Notice]) {}
    fn progress(&mut self, _: &[LiveStats], _: Duration) {}
    fn refresh_every(&self) -> Duration {
        Duration::from_secs(1)
    }
}

/// The runner's feed: every sample of a timer run on the traced CPU is a spike (the
/// threshold is 0), placed on the trace clock where its thread was switched in.
#[test]
fn a_timer_runs_spikes_are_placed_where_its_thread_woke() {
    let _serial = serial();
    let session = start(ExplainMode::Default, Recording::default());
    let mut setup = info::test_setup(&timer::INFO, &[], &[0, TRACED]);
    setup.spike_threshold = Some(latlab_model::Nanos(0));
    setup.span = Some(latlab_model::Nanos::from_millis(300));
    let probe = (timer::INFO.build)(&setup).unwrap();
    let request = RunRequest {
        cpus: vec![TRACED],
        policy: SchedSpec::Other { nice: 0 },
        timer_slack_ns: None,
        duration: Some(latlab_model::Nanos::from_millis(200)),
        warm_up: latlab_model::Nanos::from_millis(50),
        phase: "main".to_string(),
        breaktrace: None,
        feeds: session.feeds_for("main", &[TRACED]),
    };
    let system = SystemSetup::apply(None, None);
    let outcome = run_probe(
        probe.as_ref(),
        &request,
        &system,
        &AtomicBool::new(false),
        &[LiveStats::default()],
        &mut Silent,
    )
    .unwrap();
    let finished = session.finish();
    let samples = outcome.streams[0].samples;
    let seen = &finished.explainer.seen;
    assert_eq!(seen.len() as u64 + finished.spikes_dropped, samples);
    assert!(seen.iter().all(|s| s.covered && s.spike.tid > 0));
    // A sleep that woke on time has the switch to its thread between due and wake.
    let placed = seen.iter().filter(|s| !s.switches_in.is_empty()).count();
    assert!(
        placed * 10 >= seen.len() * 9,
        "{placed} of {} spikes have their thread's switch-in inside their window",
        seen.len()
    );
}

/// The `local` fallback: spikes placed by the marker offset land where the sleeper
/// woke, and the offset's drift is said.
#[test]
fn the_local_clock_places_spikes_by_the_marker_offset() {
    let _serial = serial();
    let settings = ReaderSettings {
        prefer_mono: false,
        ..ReaderSettings::default()
    };
    let session = start_with(ExplainMode::Default, &settings, Recording::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let thread = sleeper(stop.clone(), tid_tx);
    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(tid_rx.recv().unwrap());
    feed.set_origin(Origin {
        probe_ns: Clock::Monotonic.now_ns(),
        probe_minus_monotonic_ns: 0,
    });
    feed.arm();
    std::thread::sleep(Duration::from_millis(100));
    for at in [20_000_000, 40_000_000, 60_000_000] {
        feed.push(at, 2_000_000);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    let finished = session.finish();
    assert_eq!(finished.clock, "local");
    assert!(finished.problems.is_empty(), "{:?}", finished.problems);
    assert!(
        finished.limits.iter().any(|l| l.contains("had moved")),
        "{:?}",
        finished.limits
    );
    let seen = &finished.explainer.seen;
    assert_eq!(seen.len(), 3);
    for seen in seen {
        assert!(seen.covered && !seen.switches_in.is_empty(), "{seen:?}");
    }
}

#[test]
fn a_panic_while_tracing_still_removes_the_instance() {
    let _serial = serial();
    let mut dir = None;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let session = start(ExplainMode::Default, Recording::default());
        dir = Some(session.instance_dir().to_path_buf());
        panic!("a failure while measuring");
    }));
    assert!(unwound.is_err());
    let dir = dir.unwrap();
    assert!(!instance_exists(&dir), "{} is left", dir.display());
}
