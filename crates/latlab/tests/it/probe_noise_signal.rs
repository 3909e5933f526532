//! End-to-end tests of the `noise` and `signal` probes through `latlab run --probe`:
//! about a second per phase, asserting invariants only (counts add up, statistics
//! ordered, samples non-negative, events bounded and consistent with the summary, no
//! process left behind), never absolute latencies — these machines are noisy VMs.

use crate::common::{
    assert_nothing_left_of, latlab, latlab_in_own_group, measure, processes_in_group, serial,
    shared,
};
use latlab_model::run::{Event, Run, Stream};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `latlab run` expecting a usage error; returns its message.
fn refused(args: &[&str]) -> String {
    let out = latlab()
        .arg("run")
        .args(args)
        .args(["-q", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ordered(s: &Stream) {
    crate::common::assert_statistics_ordered(s);
    let min = s.stats.min_ns.unwrap();
    assert!(min.0 >= 0, "a sample spans two instants in order: {min:?}");
    assert_eq!(s.early_wakes, Some(0));
}

/// The noise probe's events per stream, in stream order: each stream's gaps followed
/// by its summary (events carry no phase, and the phases here share a CPU).
fn noise_events(run: &Run) -> Vec<(Vec<&Event>, &Event)> {
    let mut groups = Vec::new();
    let mut gaps = Vec::new();
    for e in &run.events {
        match e.kind.as_str() {
            "noise" => gaps.push(e),
            "noise-summary" => groups.push((std::mem::take(&mut gaps), e)),
            other => panic!("unexpected event {other}"),
        }
    }
    assert!(gaps.is_empty(), "every stream's gaps end with its summary");
    groups
}

#[test]
fn noise_gaps_add_up_to_the_span_and_the_lost_share() {
    // The noise probe spins on its CPU: other tests' runs there would be starved.
    let _guard = serial();
    let (code, run, out) = measure(&[
        "--probe",
        "noise:threshold=2us,events=5",
        "--probe",
        "noise:clock=tsc,threshold=2us,events=5",
        "-c",
        "0",
        "-d",
        "1s",
    ]);
    assert_eq!(code, 0);
    assert_eq!(run.streams.len(), 2);
    let groups = noise_events(&run);
    assert_eq!(groups.len(), 2, "one summary per stream");
    for (s, (kept, summary)) in run.streams.iter().zip(groups) {
        assert_eq!(s.probe, "noise");
        assert_ordered(s);
        assert_eq!(s.missed_periods, Some(0));
        // A busy loop: far more gaps than periods, spanning the whole window.
        assert!(s.samples > 100_000, "{} samples", s.samples);
        let elapsed = s.elapsed_ns.unwrap().0;
        assert!(
            elapsed > 900_000_000 && elapsed < 1_100_000_000,
            "{elapsed}"
        );
        let mean = s.stats.mean_ns.unwrap();
        let sum = mean * s.samples as f64;
        assert!(
            (sum - elapsed as f64).abs() <= elapsed as f64 * 1e-6 + 1_000.0,
            "the gaps tile the span: {sum} vs {elapsed}"
        );
        assert!(kept.len() <= 5, "events are bounded");
        for e in &kept {
            let v = e.value_ns.unwrap().0;
            assert!(v > 2_000, "an event is a gap above the threshold: {v}");
            assert!(v <= s.stats.max_ns.unwrap().0);
            assert!(e.at_ns.0 >= 0 && e.at_ns.0 <= elapsed);
        }
        assert!(kept.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
        assert!(kept.iter().all(|e| e.cpu == s.cpu && e.thread == s.thread));
        assert_eq!((summary.cpu, summary.thread), (s.cpu, s.thread));
        assert!(summary.message.contains(&s.phase), "{}", summary.message);
        let lost = summary.value_ns.unwrap().0;
        let kept_sum: i64 = kept.iter().map(|e| e.value_ns.unwrap().0).sum();
        assert!(
            kept_sum <= lost && lost <= elapsed,
            "{kept_sum} {lost} {elapsed}"
        );
        let above: u64 = s
            .decode_histogram()
            .unwrap()
            .unwrap()
            .buckets()
            .iter()
            .filter(|(value, _)| *value > 2_000)
            .map(|(_, count)| count)
            .sum();
        assert!(above as usize >= kept.len());
        assert!(summary.message.contains("% of the CPU"));
    }
    // The summary speaks for the gaps; it does not list them.
    assert!(!out.contains("the busy loop lost the CPU for"), "{out}");
    assert!(out.contains("% of the CPU"));
}

#[test]
fn noise_parameters_are_checked() {
    assert!(refused(&["--probe", "noise:threshold=5", "-c", "0", "-d", "1s"]).contains("unit"));
    assert!(refused(&["--probe", "noise:events=-1", "-c", "0", "-d", "1s"]).contains("0 to"));
    assert!(refused(&["--probe", "noise:clock=hpet", "-c", "0", "-d", "1s"]).contains("tsc"));
}

/// Every period of the window is a sample or a missed period.
fn assert_every_period(s: &Stream, periods: u64) {
    let seen = s.samples + s.missed_periods.unwrap();
    assert!(
        seen + 2 >= periods && seen <= periods + 1,
        "{} {}: {} samples + {} missed of {periods} periods",
        s.probe,
        s.method.as_deref().unwrap_or(""),
        s.samples,
        s.missed_periods.unwrap()
    );
    assert!(
        s.samples > periods / 2,
        "{}: {} samples",
        s.method.as_deref().unwrap_or(""),
        s.samples
    );
}

#[test]
fn signal_queue_counts_every_period_for_threads_and_processes() {
    let (code, run, _) = measure(&[
        "--probe",
        "signal:task=thread,cpu=same",
        "--probe",
        "signal:task=process,cpu=same",
        "--probe",
        "signal:task=thread,cpu=cross",
        "--probe",
        "signal:task=process,cpu=cross",
        "-c",
        "0",
        "-p",
        "2ms",
        "-d",
        "1s",
    ]);
    assert_eq!(code, 0);
    let methods: Vec<&str> = run
        .streams
        .iter()
        .map(|s| s.method.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        methods,
        [
            "queue thread same",
            "queue process same",
            "queue thread cross",
            "queue process cross"
        ]
    );
    for s in &run.streams {
        assert_eq!(s.probe, "signal");
        assert_ordered(s);
        assert_every_period(s, 500);
        assert!(s.first_sample_ns.is_some());
    }
    assert!(!run.interrupted);
}

#[test]
fn signal_timer_counts_every_period() {
    let (code, run, _) = measure(&["--probe", "signal:kind=timer", "-c", "1", "-d", "1s"]);
    assert_eq!(code, 0);
    let s = &run.streams[0];
    assert_eq!(s.method.as_deref(), Some("timer thread same"));
    assert_ordered(s);
    assert_every_period(s, 1000);
}

#[test]
fn signal_timer_has_no_sending_task() {
    let err = refused(&[
        "--probe",
        "signal:kind=timer,task=process",
        "-c",
        "0",
        "-d",
        "1s",
    ]);
    assert!(err.contains("kind=queue only"), "{err}");
}

#[test]
fn an_interrupted_signal_run_stops_its_sender_process() {
    let _guard = shared();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let child = latlab_in_own_group()
        .args([
            "run",
            "--probe",
            "signal:task=process",
            "-c",
            "0",
            "-d",
            "30s",
        ])
        .args(["-q", "--no-store", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let leader = child.id();
    crate::common::await_handler(leader, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        processes_in_group(leader).len() >= 2,
        "latlab and its sender are running"
    );
    let sent = Instant::now();
    // Interrupt the process we started, by its pid.
    let rc = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(rc.success());
    let out = child.wait_with_output().unwrap();
    assert!(sent.elapsed() < Duration::from_secs(3), "stops promptly");
    // Stopped before its 30 s: incomplete (exit 4).
    assert_eq!(out.status.code(), Some(4));
    assert_nothing_left_of(leader, "the sender");
    let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(run.interrupted);
    let s = &run.streams[0];
    assert!(s.samples > 100, "{}", s.samples);
    assert_ordered(s);
}
