//! Ground truths of `latlab run --explain`: interference we cause ourselves must be
//! named for what it is, every explanation must add up to its sample and blame only
//! what the kernel's events show, and tracing must leave the machine as it found it.
//!
//! - A SCHED_FIFO 99 task we start on the measured CPU, busy for 300 µs every 50 ms,
//!   is named (comm and pid) as the cause of the spikes it takes part in, with about
//!   its spin time, and its catalogue entry holds most of its spins.
//! - A loopback flood on the measured CPU shows as network softirqs.
//! - Under load, every explanation's parts add up to its sample, and every task or
//!   interrupt it names appears in the events of its window.
//! - No tracefs instance outlives a run, however it ends, and the global tracing
//!   settings stay as they were.
//! - Without permission to trace, the run still measures and says why nothing is
//!   explained.

use crate::common::{
    assert_nothing_left_of, latlab, latlab_in_own_group, latlab_path, measure, serial, text,
    RmdirOnDrop,
};
use latlab_model::explain::{Cause, Explain, Explanation, Part};
use latlab_model::run::Run;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The measured CPU of these tests (the machine has two).
const CPU: usize = 1;

/// The Run's explanation, which must have traced.
fn traced(run: &Run) -> &Explain {
    let explain = run
        .explain
        .as_ref()
        .expect("a run with --explain has an explanation");
    assert_eq!(
        explain.unavailable, None,
        "tracing was unavailable: run the tests as root with tracefs mounted"
    );
    explain
}

/// The time a part of an explanation gave to `pid`'s thread.
fn thread_time(spike: &Explanation, pid: u32) -> i64 {
    spike
        .parts
        .iter()
        .filter(|p| matches!(&p.cause, Cause::Thread { pid: p, .. } if *p == i64::from(pid)))
        .map(|p| p.duration_ns.0)
        .sum()
}

/// A spike in one line, for failure messages: its sample and its parts.
fn outline(spike: &Explanation) -> String {
    let parts: Vec<String> = spike
        .parts
        .iter()
        .map(|p| format!("{} {} ns", p.cause.label(), p.duration_ns.0))
        .collect();
    format!("{} ns: {}", spike.latency_ns.0, parts.join(", "))
}

// ----------------------------------------------------------------------------- spinner

/// `tests/data/spinner.c`, compiled into a temporary directory and running: a
/// SCHED_FIFO task pinned to a CPU, busy for `spin` every `every`. Killed (by its pid)
/// and removed when dropped, also when a test fails.
pub(crate) struct Spinner {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

/// The spinner's command name (its executable's).
const SPINNER_COMM: &str = "latlab-spinner";

impl Spinner {
    pub(crate) fn start(cpu: usize, priority: u32, spin: Duration, every: Duration) -> Spinner {
        let dir = tempfile::tempdir().unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/spinner.c");
        let binary = dir.path().join(SPINNER_COMM);
        let built = Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&binary)
            .arg(&source)
            .status()
            .expect("a C compiler is needed: apt-get install gcc");
        assert!(built.success(), "cc could not build {}", source.display());
        let child = Command::new(&binary)
            .arg(cpu.to_string())
            .arg(priority.to_string())
            .arg(spin.as_micros().to_string())
            .arg(every.as_millis().to_string())
            .arg("60") // its own end, should the test die without ending it
            .arg(dir.path().join("spins.log"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let mut spinner = Spinner {
            child: Some(child),
            dir,
        };
        // Spinning from its first period on, with its policy set.
        std::thread::sleep(every + every / 2);
        let pid = spinner.pid();
        assert!(
            spinner
                .child
                .as_mut()
                .unwrap()
                .try_wait()
                .unwrap()
                .is_none(),
            "the spinner ended at once: it needs root for SCHED_FIFO"
        );
        assert_eq!(
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap()
                .trim(),
            SPINNER_COMM
        );
        spinner
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Ends it (SIGTERM, by pid) and returns each spin's span, CLOCK_MONOTONIC ns.
    pub(crate) fn finish(mut self) -> Vec<(i64, i64)> {
        let mut child = self.child.take().unwrap();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(5);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the spinner did not end on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::fs::read_to_string(self.dir.path().join("spins.log"))
            .unwrap()
            .lines()
            .map(|line| {
                let (start, end) = line.split_once(' ').unwrap();
                (start.parse().unwrap(), end.parse().unwrap())
            })
            .collect()
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_fifo_99_spinner_on_the_measured_cpu_is_named_with_its_spin_time() {
    let _guard = serial();
    let (spin, every) = (Duration::from_micros(300), Duration::from_millis(50));
    let spinner = Spinner::start(CPU, 99, spin, every);
    let pid = spinner.pid();
    // A 50 µs period puts a deadline within 50 µs of every spin's start: the spike
    // it makes waits for what the spin had left, 250–300 µs. The measuring thread is
    // below the spinner (fifo 95).
    let (code, run, out) = measure(&[
        "--explain",
        "-c",
        &CPU.to_string(),
        "-P",
        "f:95",
        "-p",
        "50us",
        "-d",
        "4s",
        "--spike",
        "200us",
    ]);
    let spins = spinner.finish();
    assert_eq!(code, 0, "{out}");
    let explain = traced(&run);
    let mut durations: Vec<i64> = spins.iter().map(|(start, end)| end - start).collect();
    durations.sort_unstable();
    let spin_time = durations[durations.len() / 2];
    // Within 20 % of what the spin had left at the deadline, which lies between the
    // spin less a period and the spin.
    let period = 50_000;
    let within = |ns: i64| (spin_time - period) * 4 <= ns * 5 && ns * 5 <= spin_time * 6;

    // The ground truth: the spikes above 200 µs whose window a spin overlapped, by the
    // spinner's own clock reads (it may start a moment before the deadline it delays). Other spikes are not its business: on this VM the host
    // preempts the guest (unexplained, checked by the invariant test), and with the
    // kernel's preemption model "none" a kworker or a compiler in a system call keeps
    // the CPU from the measuring thread as long as the spinner does.
    // A spin overlapping a spike's window, and how much of the window it took.
    let spinning_in = |due: i64, wake: i64| {
        spins
            .iter()
            .find(|(start, end)| *start < wake && due < *end)
            .map(|(start, end)| (*end).min(wake) - (*start).max(due))
    };
    let spikes: Vec<(&Explanation, i64)> = explain
        .spikes
        .iter()
        .filter(|s| s.latency_ns.0 > 200_000)
        .filter_map(|s| {
            let due = s.due_monotonic_ns.expect("a traced spike's due instant").0;
            Some((s, spinning_in(due, due + s.latency_ns.0)?))
        })
        .collect();
    assert!(
        spikes.len() >= 10,
        "{} spikes above 200 µs that a spin overlapped, of {} spins: {:#?}",
        spikes.len(),
        spins.len(),
        explain.catalogue
    );
    // Named, with its contribution within 20 % of the time its spin took of the
    // window.
    let named = |(s, left): &&(&Explanation, i64)| {
        let named = s.parts.iter().any(|p| match &p.cause {
            Cause::Thread { comm, pid: p, .. } => *p == i64::from(pid) && comm == SPINNER_COMM,
            _ => false,
        });
        let took = thread_time(s, pid);
        named && (took - left).abs() * 5 <= *left
    };
    let right = spikes.iter().filter(named).count();
    assert!(
        right * 10 >= spikes.len() * 9,
        "the spinner ({SPINNER_COMM}:{pid}, {spin_time} ns a spin) named with its time in \
         {right} of {} spikes a spin overlapped; the others: {:#?}",
        spikes.len(),
        spikes
            .iter()
            .filter(|s| !named(s))
            .map(|(s, took)| format!("{} (the spin took {took} ns of it)", outline(s)))
            .collect::<Vec<_>>()
    );

    // Across the run: the spinner's catalogue entry holds most of its spins (4 s hold
    // 80), each for about its spin time.
    let entry = explain
        .catalogue
        .iter()
        .find(|c| matches!(&c.cause, Cause::Thread { pid: p, .. } if *p == i64::from(pid)))
        .expect("the spinner is in the catalogue");
    let spins_in_run = (4 * 1000 / every.as_millis()) as u64;
    assert!(entry.spikes * 2 >= spins_in_run, "{entry:?}");
    assert!(within(entry.total_ns.0 / entry.spikes as i64), "{entry:?}");
    // Never more than its longest spin by its own clock (the host may stretch one).
    let longest = *durations.last().expect("spins");
    assert!(
        entry.max_ns.0 <= longest * 6 / 5,
        "{entry:?}, longest spin {longest} ns"
    );
}

// ----------------------------------------------------------------------------- net

#[test]
fn a_loopback_flood_on_the_measured_cpu_shows_as_network_softirqs() {
    let cpu = CPU.to_string();
    let (code, run, out) = measure(&[
        "--explain",
        "-c",
        &cpu,
        "-d",
        "3s",
        "--spike",
        "20us",
        "--load",
        "net",
        "--load-cpus",
        &cpu,
    ]);
    assert_eq!(code, 0, "{out}");
    let flood = &run.phases[0].loads[0];
    assert!(flood.rate.is_some_and(|r| r > 0.0), "{flood:?}");
    let explain = traced(&run);
    let is_net = |cause: &Cause| matches!(cause, Cause::Softirq { name } if name == "NET_RX" || name == "NET_TX");
    let labels: Vec<String> = explain.catalogue.iter().map(|c| c.cause.label()).collect();
    let net: Vec<_> = explain
        .catalogue
        .iter()
        .filter(|c| is_net(&c.cause))
        .collect();
    assert!(!net.is_empty(), "no network softirq among {labels:?}");
    for entry in net {
        assert_eq!(entry.cpu, Some(CPU), "{entry:?}");
        assert!(entry.spikes > 0 && entry.total_ns.0 > 0, "{entry:?}");
        assert!(
            entry.max_ns.0 > 0 && entry.max_ns <= entry.total_ns,
            "{entry:?}"
        );
    }
    let parts: Vec<&Part> = explain
        .spikes
        .iter()
        .flat_map(|s| &s.parts)
        .filter(|p| is_net(&p.cause))
        .collect();
    assert!(
        parts.iter().any(|p| p.duration_ns.0 > 0),
        "no kept spike has a network softirq part with a duration: {labels:?}"
    );
}

// ----------------------------------------------------------------------------- invariants

/// Whether an event's detail names the task `pid` (`next=comm:pid`, `comm:pid prio=…`).
fn names_task(detail: &str, pid: i64) -> bool {
    detail.split_whitespace().any(|token| {
        let value = token.rsplit('=').next().unwrap_or(token);
        value
            .rsplit_once(':')
            .is_some_and(|(_, id)| id == pid.to_string())
    })
}

/// Whether an event's detail names IRQ `irq` (`irq=24 name=…`).
fn names_irq(detail: &str, irq: i64) -> bool {
    detail
        .split_whitespace()
        .any(|token| token == format!("irq={irq}"))
}

/// What holds for every explanation: its parts cover the sample exactly once, in time
/// order, inside the window; every task and IRQ it names is in its window's events;
/// and a window without a single guest event blames nothing.
fn assert_adds_up(spike: &Explanation) {
    const CLOCK_ERROR_NS: i64 = 1_000;
    let latency = spike.latency_ns.0;
    let at = format!("spike at {} ns of {latency} ns", spike.at_ns.0);
    assert!(
        (spike.parts_total_ns().0 - latency).abs() <= CLOCK_ERROR_NS,
        "{at}: the parts add up to {} ns: {:#?}",
        spike.parts_total_ns().0,
        spike.parts
    );
    let mut previous_start = i64::MIN;
    for part in &spike.parts {
        let (start, duration) = (part.start_ns.0, part.duration_ns.0);
        assert!(
            (0..=latency).contains(&duration),
            "{at}: part out of the window: {part:?}"
        );
        // A part already running at the deadline counts from it.
        assert!(
            start.max(0) + duration <= latency + CLOCK_ERROR_NS,
            "{at}: part beyond the wake: {part:?}"
        );
        assert!(
            start >= previous_start,
            "{at}: parts out of time order: {:#?}",
            spike.parts
        );
        previous_start = start;
        match &part.cause {
            Cause::Thread { pid, .. } => assert!(
                spike.events.iter().any(|e| names_task(&e.detail, *pid)),
                "{at}: thread {pid} blamed but in no event of the window: {part:?} {:#?}",
                spike.events
            ),
            Cause::Irq { irq, .. } => assert!(
                spike.events.iter().any(|e| names_irq(&e.detail, *irq)),
                "{at}: IRQ {irq} blamed but in no event of the window: {:#?}",
                spike.events
            ),
            _ => {}
        }
    }
    let inside = spike
        .events
        .iter()
        .filter(|e| e.t_ns.0 > 0 && e.t_ns.0 < latency)
        .count();
    if inside == 0 {
        // Host preemption: no guest event between the deadline and the wake.
        let blamed: Vec<&Part> = spike
            .parts
            .iter()
            .filter(|p| !matches!(p.cause, Cause::Unexplained { .. }) && !p.cause.is_own_path())
            .collect();
        assert!(
            blamed.is_empty(),
            "{at}: no guest event in the window, yet blamed: {blamed:?}"
        );
        // ... and the gap is said, with its size: all but the wake-up's own path.
        let own: i64 = spike
            .parts
            .iter()
            .filter(|p| p.cause.is_own_path())
            .map(|p| p.duration_ns.0)
            .sum();
        assert_eq!(
            spike.unexplained_ns().0,
            latency - own,
            "{at}: a window without guest events is unexplained but for the own path: {:#?}",
            spike.parts
        );
    }
}

#[test]
fn every_explained_spike_under_load_adds_up_and_blames_only_what_events_show() {
    let _guard = serial();
    let cpu = CPU.to_string();
    // Spikes this test makes itself: hackbench alone leaves none above 30 µs on a
    // quiet host, as the measuring thread is real-time and it is not. A fifo 99 spin
    // of 300 µs every 50 ms overlaps a deadline of the 1 ms period about one time in
    // three: some 25 spikes in 4 s.
    let spinner = Spinner::start(
        CPU,
        99,
        Duration::from_micros(300),
        Duration::from_millis(50),
    );
    let (code, run, out) = measure(&[
        "--explain",
        "-c",
        &cpu,
        "-d",
        "4s",
        "--spike",
        "30us",
        "--load",
        "hackbench",
        "--load-cpus",
        &cpu,
    ]);
    let spins = spinner.finish();
    assert_eq!(code, 0, "{out}");
    let explain = traced(&run);
    assert!(
        !explain.spikes.is_empty(),
        "no spike above 30 µs under hackbench and {} spins of 300 µs",
        spins.len()
    );
    for spike in &explain.spikes {
        assert_adds_up(spike);
    }
    assert_eq!(
        explain.spikes_explained + explain.spikes_incomplete + explain.spikes_unexplained,
        explain.spikes_seen,
        "every spike handed over is explained, incomplete or unexplained"
    );
    // The catalogue sums the same parts: its causes add up to the spike time.
    for time in &explain.spike_time {
        let causes: i64 = explain
            .catalogue
            .iter()
            .filter(|c| c.phase == time.phase && c.cpu == time.cpu)
            .map(|c| c.total_ns.0)
            .sum();
        assert!(
            (causes - time.total_ns.0).abs() <= 1_000 * time.spikes as i64,
            "{time:?}: causes sum to {causes} ns"
        );
    }
}

// ----------------------------------------------------------------------------- cleanup

/// tracefs's `instances` directory.
fn instances() -> PathBuf {
    latlab_rt::tracefs::tracefs_root()
        .expect(
            "tracefs is not mounted: run the tests as root after \
             `mount -t tracefs nodev /sys/kernel/tracing`",
        )
        .join("instances")
}

/// The instances of process `pid` (`latlab-PID`, `latlab-PID-TAG`).
fn instances_of(pid: u32) -> Vec<String> {
    let (own, tagged) = (format!("latlab-{pid}"), format!("latlab-{pid}-"));
    std::fs::read_dir(instances())
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| *name == own || name.starts_with(&tagged))
        .collect()
}

/// The top-level tracing settings a run must leave alone.
fn global_tracing_state() -> Vec<(String, String)> {
    let root = latlab_rt::tracefs::tracefs_root().unwrap();
    [
        "tracing_on",
        "trace_clock",
        "current_tracer",
        "buffer_size_kb",
        "tracing_cpumask",
        "set_event",
    ]
    .into_iter()
    .map(|file| {
        let value =
            std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("read {file}: {e}"));
        (file.to_string(), value)
    })
    .collect()
}

/// A run we started, killed by its pid if the test ends before it does.
struct RunningLatlab(Option<Child>);

impl RunningLatlab {
    /// Waits until the run has made its tracefs instance; fails at once if it ended.
    fn wait_for_its_instance(&mut self) {
        let child = self.0.as_mut().unwrap();
        let pid = child.id();
        let until = Instant::now() + Duration::from_secs(10);
        while instances_of(pid).is_empty() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
                }
                panic!("latlab run --explain ended ({status}) before tracing: {err}");
            }
            assert!(
                Instant::now() < until,
                "latlab run --explain made no tracefs instance in 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RunningLatlab {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How a traced run ends.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Its duration ran out.
    Normally,
    /// This signal, sent once it measures.
    Signal(&'static str),
}

/// Starts `latlab run --explain`, waits for its tracefs instance, ends it `how`, and
/// checks that the instance went with it and the global settings are as they were.
fn ends_without_a_trace(how: End) {
    let _guard = serial();
    let before = global_tracing_state();
    let duration = match how {
        End::Normally => "3s",
        End::Signal(_) => "30s",
    };
    let child = latlab_in_own_group()
        .args(["run", "--explain", "-c", &CPU.to_string(), "-d", duration])
        .args(["-q", "--no-store", "--no-audit"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut running = RunningLatlab(Some(child));
    running.wait_for_its_instance();
    if let End::Signal(signal) = how {
        // Its stop handlers go in together, just before it measures.
        crate::common::await_handler(pid, libc::SIGINT);
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(sent.success());
    }
    let child = running.0.take().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_nothing_left_of(pid, &format!("latlab run --explain ended {how:?}"));
    assert!(
        out.status.code().is_some(),
        "{how:?}: latlab died of the signal instead of stopping: {}",
        text(&out.stderr)
    );
    assert_eq!(
        instances_of(pid),
        Vec::<String>::new(),
        "{how:?}: the run's tracefs instance outlived it; stderr: {}",
        text(&out.stderr)
    );
    assert_eq!(
        global_tracing_state(),
        before,
        "{how:?}: the global tracing settings changed"
    );
}

#[test]
fn a_traced_run_that_ends_leaves_no_instance_and_the_global_tracing_as_it_was() {
    ends_without_a_trace(End::Normally);
}

#[test]
fn a_traced_run_stopped_by_sigint_leaves_no_instance() {
    ends_without_a_trace(End::Signal("INT"));
}

#[test]
fn a_traced_run_stopped_by_sigterm_leaves_no_instance() {
    ends_without_a_trace(End::Signal("TERM"));
}

#[test]
fn a_traced_run_stopped_by_sighup_leaves_no_instance() {
    ends_without_a_trace(End::Signal("HUP"));
}

#[test]
fn the_instance_of_a_sigkilled_traced_run_is_removed_by_the_next_run() {
    let _guard = serial();
    let before = global_tracing_state();
    let child = latlab_in_own_group()
        .args(["run", "--explain", "-c", &CPU.to_string(), "-d", "30s"])
        .args(["-q", "--no-store", "--no-audit"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut running = RunningLatlab(Some(child));
    running.wait_for_its_instance();
    std::thread::sleep(Duration::from_millis(1000));
    let left: Vec<RmdirOnDrop> = instances_of(pid)
        .into_iter()
        .map(|name| RmdirOnDrop(instances().join(name)))
        .collect();
    let mut child = running.0.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_nothing_left_of(pid, "a SIGKILLed latlab run --explain");
    assert!(
        left.iter().all(|dir| dir.0.is_dir()),
        "SIGKILL cannot clean up"
    );

    let next = latlab()
        .args([
            "run",
            "-c",
            "0",
            "-d",
            "100ms",
            "-q",
            "--no-store",
            "--no-audit",
        ])
        .output()
        .unwrap();
    let err = text(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{err}");
    assert_eq!(instances_of(pid), Vec::<String>::new(), "{err}");
    assert_eq!(
        global_tracing_state(),
        before,
        "the global tracing settings changed"
    );
}

// ----------------------------------------------------------------------------- unprivileged

#[test]
fn without_permission_to_trace_the_run_measures_and_says_why() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    // `nobody` writes the Run here; the binary must be executable by others.
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    let json = dir.path().join("run.json");
    // setpriv execs latlab: the child's pid is latlab's.
    let child = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
        .arg(latlab_path())
        .args(["run", "--explain", "-c", "0", "-d", "1s"])
        .args(["-q", "--no-store", "--no-audit", "--json"])
        .arg(&json)
        .env("TMPDIR", dir.path())
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux) is needed: apt-get install util-linux");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    // Without real-time priority too: degraded, untrusted (exit 5).
    assert_eq!(out.status.code(), Some(5), "{err}");
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.streams[0].samples > 0, "the run measured");
    let explain = run
        .explain
        .as_ref()
        .expect("the Run says what --explain did");
    let why = explain.unavailable.as_deref().unwrap_or_default();
    assert!(!why.trim().is_empty(), "no reason given: {explain:?}");
    assert!(explain.spikes.is_empty() && explain.catalogue.is_empty());
    let warning = run
        .warnings
        .iter()
        .find(|w| w.code == "explain-unavailable")
        .unwrap_or_else(|| panic!("no explain-unavailable warning: {:?}", run.warnings));
    assert!(
        !warning.degrades,
        "the latencies are valid without tracing: {warning:?}"
    );
    assert_eq!(instances_of(pid), Vec::<String>::new());
}
