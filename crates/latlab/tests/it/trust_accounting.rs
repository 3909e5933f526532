//! End-to-end tests that latlab's own accounting adds up: every period counted once,
//! timelines as long as the span, the measured time stated as measured, warnings only
//! where they apply, and every wait outside the measured loop stoppable. Invariants and
//! ground truths created here only, never absolute latencies (these are noisy VMs).

use crate::common::{latlab, measure, serial, shared};

use latlab_model::run::{Run, Stream};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What an interrupted run left.
struct Interrupted {
    code: Option<i32>,
    /// The Run written, if any.
    run: Option<Run>,
    stdout: String,
    stderr: String,
    /// From spawning the process to its exit.
    lifetime: Duration,
    /// From the signal to the exit.
    stop_took: Duration,
}

/// Starts `latlab run ARGS -q --no-store --json FILE`, sends `signal` to it (by its
/// pid) after `after`, and waits for it to end (killing it after 20 s, so a run that
/// ignores the signal fails the test instead of hanging it).
fn interrupt(args: &[&str], after: Duration, signal: i32) -> Interrupted {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let spawned = Instant::now();
    let mut child = std::process::Command::new(crate::common::latlab_path())
        .arg("run")
        .args(args)
        .args(["-q", "--no-store", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `after` from the start, but never before latlab handles the signal.
    crate::common::await_handler(child.id(), signal);
    std::thread::sleep(after.saturating_sub(spawned.elapsed()));
    let sent = Instant::now();
    let rc = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(rc.success());
    while child.try_wait().unwrap().is_none() && sent.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let stop_took = sent.elapsed();
    let out = child.wait_with_output().unwrap();
    let lifetime = spawned.elapsed();
    let run = std::fs::read_to_string(&json)
        .ok()
        .map(|text| crate::common::written_run(&text).expect("the Run parses back into the model"));
    Interrupted {
        code: out.status.code(),
        run,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        lifetime,
        stop_took,
    }
}

fn only_stream(run: &Run) -> &Stream {
    assert_eq!(run.streams.len(), 1, "one stream expected");
    &run.streams[0]
}

#[test]
fn rel_accounts_each_period_once_at_a_period_the_machine_cannot_sustain() {
    // No relative sleep returns within 1 µs: nearly every sleep misses periods, and the
    // CPU is kept busy, which would starve other tests' runs there.
    let _guard = serial();
    let (code, run, _) = measure(&["-c", "0", "-p", "1us", "-d", "500ms", "--method", "rel"]);
    assert_eq!(code, 0);
    let s = only_stream(&run);
    assert!(
        s.missed_periods.unwrap() > 0,
        "the period must be unsustainable here"
    );
    let drift = s.drift_ns.expect("rel reports drift").0;
    let period = s.period_ns.unwrap().0;
    // samples + missed + drift / period = periods elapsed, in ns to stay exact.
    assert_eq!(
        (s.samples + s.missed_periods.unwrap()) as i64 * period + drift,
        s.elapsed_ns.unwrap().0,
        "samples {} + missed {} periods of {period} ns + drift {drift} ns != elapsed {} ns",
        s.samples,
        s.missed_periods.unwrap(),
        s.elapsed_ns.unwrap().0
    );
    assert!(drift >= 0, "the loop's own time only adds lag: {drift}");
}

/// A run of N whole timeline intervals has N of them, whose counts add up to the
/// samples (the sample due at the very end belongs to the last one).
fn assert_whole_intervals(stream: &Stream, intervals: usize) {
    let t = &stream.timeline;
    assert_eq!(
        t.count.len(),
        intervals,
        "{} on {}: timeline {:?} for {intervals} intervals",
        stream.probe,
        stream.label(),
        t.count
    );
    assert_eq!(t.max_ns.len(), intervals);
    assert_eq!(t.count.iter().sum::<u64>(), stream.samples);
}

#[test]
fn timeline_of_n_whole_intervals_has_n_entries_not_one_more() {
    let (code, run, _) = measure(&["-c", "0", "-p", "1ms", "-d", "1s", "--interval", "250ms"]);
    assert_eq!(code, 0);
    assert_whole_intervals(only_stream(&run), 4);
    // The probes with their own schedules: a partner pair, a sampling probe, and
    // timer signals (their timeline interval is 1 s).
    for probe in ["msg", "clock", "signal"] {
        let (code, run, _) = measure(&["--probe", probe, "-c", "0", "-d", "1s"]);
        assert_eq!(code, 0, "{probe}");
        assert_whole_intervals(only_stream(&run), 1);
    }
}

#[test]
fn phase_time_is_the_measured_span_without_set_up_or_warm_up() {
    let (code, run, _) = measure(&["-c", "0", "-d", "1s", "--warm-up", "500ms"]);
    assert_eq!(code, 0);
    assert_eq!(run.phases.len(), 1);
    assert_eq!(
        run.phases[0].elapsed_ns.unwrap().0,
        1_000_000_000,
        "a run of -d 1s measured 1 s, whatever set-up and warm-up took"
    );
}

#[test]
fn interrupted_phase_time_is_what_was_measured() {
    let warm_up = Duration::from_millis(300);
    let end = interrupt(
        &["-c", "0", "-d", "0", "--warm-up", "300ms"],
        Duration::from_millis(1200),
        2,
    );
    assert_eq!(end.code, Some(0), "{}", end.stderr);
    let run = end.run.expect("the interrupted run is written");
    assert!(run.interrupted);
    let phase = run.phases[0].elapsed_ns.unwrap();
    let stream = only_stream(&run);
    // Nothing is measured before the process starts or its warm-up ends, nor after
    // it exits; and the phase covers every stream's measured span.
    assert!(
        phase.0 as u128 <= (end.lifetime - warm_up).as_nanos(),
        "phase {phase} longer than the process lived ({:?}) minus its warm-up",
        end.lifetime
    );
    assert!(
        phase >= stream.elapsed_ns.unwrap(),
        "{phase} < {}",
        stream.elapsed_ns.unwrap()
    );
    assert!(stream.samples > 0);
}

fn warning<'a>(run: &'a Run, code: &str) -> Option<&'a latlab_model::run::Warning> {
    run.warnings.iter().find(|w| w.code == code)
}

#[test]
fn no_mlock_run_is_marked_degraded() {
    let (code, run, out) = measure(&["-c", "0", "-d", "200ms", "--no-mlock"]);
    // Degraded: untrusted, exit 5.
    assert_eq!(code, 5);
    assert!(run.degraded, "--no-mlock is not a real-time run");
    assert!(warning(&run, "memory-lock-skipped").is_some_and(|w| w.degrades));
    assert!(out.contains("DEGRADED"), "{out}");
}

#[test]
fn coarse_clock_probe_says_its_zeros_are_the_clocks_resolution() {
    for clock in ["realtime-coarse", "monotonic-coarse"] {
        let spec = format!("clock:clock={clock}");
        let (code, run, out) = measure(&["--probe", &spec, "-c", "0", "-d", "300ms"]);
        assert_eq!(code, 0);
        let note = warning(&run, "coarse-clock").unwrap_or_else(|| panic!("{clock}: {out}"));
        assert!(note.message.contains(clock) && note.message.contains("jiffy"));
        assert!(!note.degrades);
        assert!(out.contains("coarse-clock"), "{out}");
    }
    let (_, fine, _) = measure(&["--probe", "clock:clock=monotonic", "-c", "0", "-d", "300ms"]);
    assert!(warning(&fine, "coarse-clock").is_none());
}

/// Puts tracefs's `tracing_on` back as it was (a break trace stops tracing).
struct TracingOnRestore(Option<(std::path::PathBuf, String)>);

impl TracingOnRestore {
    fn capture() -> Self {
        TracingOnRestore(
            ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
                .into_iter()
                .map(|root| std::path::Path::new(root).join("tracing_on"))
                .find_map(|path| Some((path.clone(), std::fs::read_to_string(&path).ok()?))),
        )
    }
}

impl Drop for TracingOnRestore {
    fn drop(&mut self) {
        if let Some((path, value)) = &self.0 {
            let _ = std::fs::write(path, value.trim());
        }
    }
}

/// No stream took a page fault, and no warning tells anyone to run as root.
fn assert_no_false_fault_warning(run: &Run) {
    for s in &run.streams {
        assert_eq!(s.page_faults, Some(0), "{}: {:?}", s.label(), run.warnings);
    }
    for w in &run.warnings {
        assert!(!w.message.contains("run as root"), "{}", w.message);
    }
}

#[test]
fn interrupted_and_breaktrace_runs_take_no_page_fault_from_stopping() {
    for signal in [2, 15] {
        let end = interrupt(&["-c", "0", "-d", "0"], Duration::from_millis(800), signal);
        assert_eq!(end.code, Some(0), "{}", end.stderr);
        assert!(!end.stdout.contains("run as root"), "{}", end.stdout);
        assert_no_false_fault_warning(&end.run.expect("the run is written"));
    }
    let _guard = serial();
    let _restore = TracingOnRestore::capture();
    let (code, run, _) = measure(&["-c", "0", "-d", "2s", "-b", "1ns"]);
    assert_eq!(code, 0);
    assert_eq!(run.events.len(), 1, "the break trace ended the run");
    assert_no_false_fault_warning(&run);
}

#[test]
fn deadline_spin_missed_periods_blame_the_budget_not_the_period() {
    // 200 µs of CPU per 1 ms for a thread that spins: it waits 800 µs of every 1 ms,
    // so with a 100 µs period it misses periods every millisecond.
    let (code, run, out) = measure(&[
        "-c",
        "0",
        "-P",
        "d:200us:1ms",
        "--method",
        "spin",
        "-p",
        "100us",
        "-d",
        "500ms",
    ]);
    assert_eq!(code, 0, "{out}");
    let missed = warning(&run, "missed-periods").unwrap_or_else(|| panic!("{out}"));
    assert!(
        missed.message.contains("SCHED_DEADLINE budget"),
        "{}",
        missed.message
    );
    assert!(!missed.message.contains("period may be too short"));
}

#[test]
fn timer_slack_above_its_bound_is_a_usage_error_naming_the_flag_and_the_bound() {
    for slack in ["100d", "10h", "1001ms"] {
        let out = latlab()
            .args([
                "run",
                "-c",
                "0",
                "-d",
                "1s",
                "--no-store",
                "--timer-slack",
                slack,
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{slack}: {stderr}");
        assert!(
            stderr.contains("--timer-slack") && stderr.contains("at most 1 s"),
            "{slack}: {stderr}"
        );
    }
}

#[test]
fn timer_slack_reads_back_as_set() {
    // Slack applies to non-real-time threads only (the kernel gives real-time ones none).
    let (code, run, _) = measure(&["-c", "0", "-P", "o:0", "-d", "200ms", "--timer-slack", "1s"]);
    assert_eq!(code, 0);
    assert_eq!(only_stream(&run).timer_slack_ns, Some(1_000_000_000));
}

#[test]
fn a_run_with_a_long_timer_slack_stops_promptly_on_ctrl_c_and_sigterm() {
    // The README's bound is half a second; this allows for a loaded VM.
    let bound = Duration::from_secs(2);
    let timer = ["-c", "0", "-P", "o:0", "--timer-slack", "1s", "-d", "10s"];
    let signal = [
        "--probe",
        "signal",
        "-c",
        "0",
        "-P",
        "o:0",
        "--timer-slack",
        "1s",
        "-d",
        "10s",
    ];
    // As soon as it handles the signal (before its first phase begins), during set-up
    // and rehearsal, then while measuring.
    for (args, after, sig) in [
        (&timer[..], 0, 2),
        (&timer[..], 150, 2),
        (&timer[..], 1_200, 15),
        (&signal[..], 150, 15),
        (&signal[..], 1_200, 2),
    ] {
        let end = interrupt(args, Duration::from_millis(after), sig);
        // Stopped before its 10 s: incomplete (exit 4).
        assert_eq!(end.code, Some(4), "{args:?}: {}", end.stderr);
        assert!(
            end.stop_took < bound,
            "{args:?}: signal {sig} after {after} ms took {:?} to stop",
            end.stop_took
        );
        assert!(end.run.expect("the run is written").interrupted);
    }
}
