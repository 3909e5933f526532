//! End-to-end tests of the scheduling probes (`preempt`, `switch`, `pi`, `prio-wake`):
//! each variant for about a second through the CLI, asserting invariants only — counts
//! add up, statistics are ordered, samples are non-negative, partner tasks are gone
//! afterwards — never absolute latencies.

use crate::common::{
    assert_nothing_left_of, latlab_in_own_group, measurement, processes_in_group, shared,
};
use latlab_model::run::{Run, Stream};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `latlab run --probe PROBE -c CPUS -d 1s` (plus `extra`); returns the exit code,
/// the Run and stderr, after checking that no partner is left.
fn measure_on(cpus: &str, probe: &str, extra: &[&str]) -> (i32, Option<Run>, String) {
    let args = [&["--probe", probe, "-c", cpus, "-d", "1s"], extra].concat();
    let m = measurement(&args);
    (m.code, m.run, m.stderr)
}

fn measure(probe: &str, extra: &[&str]) -> (i32, Option<Run>, String) {
    measure_on("0", probe, extra)
}

/// Measures `probe` and checks the invariants every scheduling probe keeps.
fn measured(probe: &str) -> (Run, Stream) {
    let (code, run, stderr) = measure(probe, &[]);
    assert_eq!(code, 0, "{probe}: {stderr}");
    let run = run.unwrap();
    assert_eq!(run.streams.len(), 1);
    let s = run.streams[0].clone();
    assert_eq!(s.probe, probe.split(':').next().unwrap());
    assert_eq!(s.cpu, Some(0));
    let hist = s.decode_histogram().unwrap().unwrap();
    assert_eq!(hist.len(), s.samples, "{probe}: histogram total = samples");
    if s.samples > 0 {
        let st = &s.stats;
        let (min, max) = (st.min_ns.unwrap(), st.max_ns.unwrap());
        let p = |q| {
            st.percentile(q)
                .unwrap()
                .exact()
                .expect("a measured percentile is a value")
        };
        assert!(min.0 >= 0, "{probe}: a negative sample {min:?}");
        assert_eq!(s.early_wakes, Some(0), "{probe}: negative samples");
        assert!(
            min <= p(50.0) && p(50.0) <= p(99.0) && p(99.0) <= max,
            "{probe}"
        );
    }
    (run, s)
}

fn realtime(s: &Stream) -> bool {
    s.policy.is_some_and(|p| p.is_realtime())
}

#[test]
fn preempt_threads_and_processes_give_a_sample_a_period() {
    for probe in ["preempt:task=thread", "preempt:task=process"] {
        let (_, s) = measured(probe);
        assert!(s.samples > 0, "{probe}: no samples");
        // One cycle per 1 ms period: a sample or a missed cycle, never more, and no
        // period passed over uncounted.
        assert_eq!(
            s.samples + s.missed_periods.unwrap(),
            1_000,
            "{probe}: {} + {}",
            s.samples,
            s.missed_periods.unwrap()
        );
    }
}

#[test]
fn switch_rings_of_threads_and_processes_hand_over() {
    for probe in [
        "switch:method=yield,task=thread",
        "switch:method=yield,task=process,tasks=4",
        "switch:method=pipe,task=thread,tasks=4",
        "switch:method=pipe,task=process,burst=10",
    ] {
        let (_, s) = measured(probe);
        assert!(s.samples > 0, "{probe}: no samples");
        let burst: u64 = if probe.contains("burst=10") { 10 } else { 100 };
        assert!(
            s.samples <= 1_001 * burst,
            "{probe}: more samples than hand-overs"
        );
    }
}

#[test]
fn pi_inherit_bounds_the_wait_and_none_reports_inversions() {
    for task in ["thread", "process"] {
        let probe = format!("pi:protocol=inherit,task={task}");
        let (run, s) = measured(&probe);
        assert!(s.samples > 0, "{probe}: no samples");
        assert_eq!(
            s.samples + s.missed_periods.unwrap(),
            1_000,
            "{probe}: a sample or a missed cycle a period, none passed over: {} + {}",
            s.samples,
            s.missed_periods.unwrap()
        );
        let summary = run
            .events
            .iter()
            .find(|e| e.kind == "inversions")
            .expect("a summary event");
        assert!(
            summary.message.contains("protocol=inherit"),
            "{probe}: {}",
            summary.message
        );

        let probe = format!("pi:protocol=none,task={task}");
        let (run, s) = measured(&probe);
        assert_eq!(
            s.samples + s.missed_periods.unwrap(),
            1_000,
            "{probe}: a sample or a missed cycle a period, none passed over: {} + {}",
            s.samples,
            s.missed_periods.unwrap()
        );
        let inversions = run.events.iter().filter(|e| e.kind == "inversion").count() as u64;
        assert!(
            inversions <= s.missed_periods.unwrap(),
            "{probe}: each inversion is a missed cycle"
        );
        assert!(run.events.iter().any(|e| e.kind == "inversions"), "{probe}");
        if realtime(&s) {
            // Without inheritance the medium task always runs before the holder.
            assert!(inversions > 0, "{probe}: no inversion without inheritance");
            assert!(
                s.missed_periods.unwrap() > s.samples,
                "{probe}: {} missed, {} samples",
                s.missed_periods.unwrap(),
                s.samples
            );
        }
    }
}

#[test]
fn prio_wake_counts_rounds_out_of_priority_order() {
    for tasks in ["2", "8"] {
        let probe = format!("prio-wake:tasks={tasks}");
        let (run, s) = measured(&probe);
        assert!(s.samples > 0, "{probe}: no samples");
        let summary = run
            .events
            .iter()
            .find(|e| e.kind == "prio-order")
            .expect("a summary event");
        let out_of_order: u64 = summary
            .message
            .split(": ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(out_of_order <= s.samples);
        if realtime(&s) {
            // One CPU, SCHED_FIFO: the scheduler runs woken waiters highest first.
            assert_eq!(out_of_order, 0, "{}", summary.message);
        }
    }
}

#[test]
fn sigint_ends_process_partners_and_keeps_the_results() {
    for probe in [
        "preempt:task=process",
        "switch:method=pipe,task=process",
        "pi:protocol=inherit,task=process",
    ] {
        let _guard = shared();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let mut child = latlab_in_own_group()
            .args([
                "run",
                "--probe",
                probe,
                "-c",
                "0",
                "-d",
                "0",
                "-q",
                "--no-store",
                "--json",
            ])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        crate::common::await_handler(child.id(), libc::SIGINT);
        std::thread::sleep(Duration::from_millis(800));
        assert!(
            processes_in_group(child.id()).len() > 1,
            "{probe}: the partner runs as a process"
        );
        // kill(1) by the pid this test started, never by name.
        let status = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let begun = Instant::now();
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                begun.elapsed() < Duration::from_secs(10),
                "{probe}: did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(code, Some(0), "{probe}");
        let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(run.interrupted && run.streams[0].samples > 0, "{probe}");
        assert_nothing_left_of(child.id(), probe);
    }
}

#[test]
fn impossible_settings_are_usage_errors() {
    let (code, _, stderr) = measure("preempt:cpu=cross", &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("same"), "{stderr}");
    let (code, _, stderr) = measure("pi", &["-P", "f:2"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("f:3"), "{stderr}");
    let (code, _, stderr) = measure("switch", &["-P", "d:100us:1ms"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("SCHED_DEADLINE"), "{stderr}");
}

#[test]
fn a_partner_forked_for_one_cpu_costs_the_others_no_page_fault() {
    // A fork leaves every private page copy-on-write: a measuring thread that rehearsed
    // before another CPU's partner was forked used to fault on its first writes (it
    // depends on the order in which the threads prepare, so this catches it sometimes).
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    for probe in ["switch:method=pipe,task=process", "preempt:task=process"] {
        let (code, run, stderr) = measure_on("0,1", probe, &[]);
        assert_eq!(code, 0, "{probe}: {stderr}");
        let run = run.unwrap();
        assert_eq!(run.streams.len(), 2);
        for s in &run.streams {
            assert_eq!(s.page_faults, Some(0), "{probe} on CPU {:?}", s.cpu);
        }
    }
}
