//! Sessions on this machine's tracefs (these tests need root): CPU 1 traced, a thread
//! there that sleeps and wakes. The runner's own tests use the helpers.

use super::*;
use latlab_rt::clock::Clock;
use latlab_trace::{decode_page, EventTable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The CPU traced: not the first, so the reader has one of its own.
pub(crate) const TRACED: usize = 1;

/// One session at a time: every session of this process is `instances/latlab-<pid>`.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The session, or a panic saying what these tests need.
pub(crate) fn start<E: Explainer + 'static>(mode: ExplainMode, explainer: E) -> Session<E> {
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
pub(crate) struct Seen {
    pub(crate) spike: FedSpike,
    pub(crate) last: bool,
    pub(crate) pages: usize,
    pub(crate) covered: bool,
    pub(crate) lost: bool,
    /// Timestamps of the wake-ups of the spike's thread in its window.
    pub(crate) wakings_in: Vec<u64>,
    /// Every wake-up of the spike's thread in the pages, relative to the due instant.
    pub(crate) wakings_near: Vec<i64>,
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
pub(crate) struct Recording {
    pub(crate) seen: Vec<Seen>,
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
            let mut wakings_in = Vec::new();
            let mut wakings_near = Vec::new();
            for page in &window.pages {
                for record in decode_page(held.layout(), page).unwrap().records {
                    let event = table.decode(TRACED, &record).unwrap();
                    // The wake-up of the thread: on this kernel a switch from the idle
                    // task is not recorded, so the switch-in may be missing.
                    let to_thread = event.name() == "sched_waking"
                        && event.integer("pid") == Some(spike.tid.into());
                    if to_thread {
                        wakings_near.push(record.timestamp as i64 - spike.due_trace_ns as i64);
                    }
                    if to_thread
                        && (spike.due_trace_ns..=spike.wake_trace_ns).contains(&record.timestamp)
                    {
                        wakings_in.push(record.timestamp);
                    }
                }
            }
            self.seen.push(Seen {
                last,
                pages: window.pages.len(),
                covered: window.covered,
                lost: window.lost,
                wakings_in,
                wakings_near,
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

/// A thread on the traced CPU sleeping 1 ms at a time until `stop`, noting the
/// monotonic instant after each sleep.
struct Sleeper {
    stop: Arc<AtomicBool>,
    tid: i32,
    wakes: Arc<Mutex<Vec<i64>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Sleeper {
    fn start() -> Sleeper {
        let stop = Arc::new(AtomicBool::new(false));
        let wakes = Arc::new(Mutex::new(Vec::new()));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let thread = {
            let (stop, wakes) = (stop.clone(), wakes.clone());
            std::thread::spawn(move || {
                latlab_rt::affinity::pin_current_thread(TRACED).unwrap();
                tid_tx.send(latlab_rt::sched::gettid()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                    wakes.lock().unwrap().push(Clock::Monotonic.now_ns());
                }
            })
        };
        let tid = tid_rx.recv().unwrap();
        Sleeper {
            stop,
            tid,
            wakes,
            thread,
        }
    }

    /// Three spikes (at, latency) from `origin`, each from one of the thread's clock
    /// reads to its next: whatever the load, it was woken between the two.
    fn spikes_between_wakes(&self, origin: i64) -> Vec<(i64, i64)> {
        let wakes = self.wakes.lock().unwrap().clone();
        assert!(wakes.len() >= 8, "the sleeper woke {} times", wakes.len());
        [wakes.len() / 4, wakes.len() / 2, 3 * wakes.len() / 4]
            .iter()
            .map(|&i| (wakes[i - 1] + 1 - origin, wakes[i] - wakes[i - 1] - 1))
            .collect()
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
    }
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
    let sleeper = Sleeper::start();
    let tid = sleeper.tid;
    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(tid);
    let origin = Clock::Monotonic.now_ns();
    feed.set_origin(Origin {
        probe_ns: origin,
        probe_minus_monotonic_ns: 0,
    });
    feed.arm();
    std::thread::sleep(Duration::from_millis(100));
    let pushed = sleeper.spikes_between_wakes(origin);
    for &(at, latency) in &pushed {
        feed.push(at, latency);
    }
    std::thread::sleep(Duration::from_millis(400));
    sleeper.stop();
    let finished = session.finish().expect("the reader thread ran to the end");
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
    for (seen, &(at, latency)) in seen.iter().zip(&pushed) {
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
        assert_eq!(spike.wake_trace_ns, spike.due_trace_ns + latency as u64);
        assert!(!seen.last, "handed over while tracing, not at the end");
        assert!(seen.covered && !seen.lost && seen.pages > 0, "{seen:?}");
        assert!(
            !seen.wakings_in.is_empty(),
            "the sleeper woke in {:?}; its wake-ups from the due instant: {:?}",
            seen.spike,
            seen.wakings_near
        );
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
    // The kernel records no stack at a wake-up that interrupts the idle task (RCU is
    // not watching there): a task spinning on the CPU gives every wake-up code to
    // interrupt, as a loaded machine does.
    /// Ends the spinner when dropped, also when the test fails first.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Relaxed);
        }
    }
    let spinning = StopOnDrop(Arc::new(AtomicBool::new(true)));
    let spinner = {
        let spinning = spinning.0.clone();
        std::thread::spawn(move || {
            latlab_rt::affinity::pin_current_thread(TRACED).unwrap();
            while spinning.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let sleeper = Sleeper::start();
    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(sleeper.tid);
    // The reader sets the trigger at one of its drains, late on a busy machine.
    std::thread::sleep(Duration::from_millis(1000));
    sleeper.stop();
    drop(spinning);
    spinner.join().unwrap();
    let finished = session.finish().expect("the reader thread ran to the end");
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
    let sleeper = Sleeper::start();
    let feed = session.feed("main", 0, Some(TRACED));
    feed.set_tid(sleeper.tid);
    let origin = Clock::Monotonic.now_ns();
    feed.set_origin(Origin {
        probe_ns: origin,
        probe_minus_monotonic_ns: 0,
    });
    feed.arm();
    std::thread::sleep(Duration::from_millis(100));
    // The thread is woken a few µs before its clock read: give the placement
    // the offset's error on both sides (a wrong offset is off by far more).
    for (at, latency) in sleeper.spikes_between_wakes(origin) {
        feed.push(at - 20_000, latency + 40_000);
    }
    std::thread::sleep(Duration::from_millis(300));
    sleeper.stop();
    let finished = session.finish().expect("the reader thread ran to the end");
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
        assert!(seen.covered && !seen.wakings_in.is_empty(), "{seen:?}");
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
