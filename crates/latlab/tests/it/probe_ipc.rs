//! End-to-end tests of the `msg` and `sem` probes through the `latlab` binary: every
//! transport and semaphore kind, with thread and process partners on the same and on
//! another CPU, for half a second each. They assert invariants only — every period is
//! a sample or a missed one, samples are never negative, statistics are ordered — and
//! that nothing is left behind: no SysV object, no partner process.

use crate::common::{assert_nothing_left_of, latlab, latlab_in_own_group, measurement, serial};
use latlab_model::run::Stream;
use std::time::Duration;

/// The ids of the system's SysV message queues and semaphore sets.
fn sysv_objects() -> Vec<String> {
    ["msg", "sem"]
        .iter()
        .flat_map(|kind| {
            std::fs::read_to_string(format!("/proc/sysvipc/{kind}"))
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().nth(1).map(|id| format!("{kind}:{id}")))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn two_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// Runs `latlab run --probe SPEC -c 0 -d 500ms` and returns its stream, after checking
/// the run ended cleanly and left nothing behind.
fn measure(spec: &str) -> Stream {
    let _guard = serial();
    let before = sysv_objects();
    let m = measurement(&["--probe", spec, "-c", "0", "-p", "1ms", "-d", "500ms"]);
    assert_eq!(m.code, 0, "{spec}: {}", m.stderr);
    let run = m.run.expect("a Run");
    assert!(!run.interrupted, "{spec}");
    assert_eq!(sysv_objects(), before, "{spec}: SysV objects left behind");
    assert_eq!(run.streams.len(), 1, "{spec}");
    run.streams.into_iter().next().unwrap()
}

/// What every stream of these probes must satisfy.
fn assert_sound(s: &Stream, probe: &str, variant: &str) {
    assert_eq!(s.probe, probe);
    assert_eq!(s.method.as_deref(), Some(variant));
    assert_eq!(s.cpu, Some(0));
    assert!(s.samples > 0, "{variant}: no sample");
    assert_eq!(
        s.samples + s.missed_periods.unwrap(),
        500,
        "{variant}: every period is a sample or a missed one"
    );
    assert_eq!(s.warm_up_samples, 0);
    assert_eq!(s.early_wakes, Some(0), "{variant}: a negative sample");
    assert!(s.stats.min_ns.unwrap().0 >= 0);
    assert!(s.first_sample_ns.unwrap().0 >= 0);
    assert_eq!(
        s.page_faults,
        Some(0),
        "{variant}: page faults while measuring"
    );
    let st = &s.stats;
    let p = |q| {
        st.percentile(q)
            .unwrap()
            .exact()
            .expect("a measured percentile is a value")
    };
    assert!(st.min_ns.unwrap() <= p(50.0) && p(50.0) <= p(99.0));
    assert!(p(99.0) <= p(99.9) && p(99.9) <= st.max_ns.unwrap());
    let mean = st.mean_ns.unwrap();
    assert!(st.min_ns.unwrap().0 as f64 <= mean && mean <= st.max_ns.unwrap().0 as f64);
    assert_eq!(s.decode_histogram().unwrap().unwrap().len(), s.samples);
    assert_eq!(s.timeline.count.iter().sum::<u64>(), s.samples);
}

/// Pairs of (task, cpu) that together cover both values of each.
fn placements() -> Vec<[(&'static str, &'static str); 2]> {
    let cross = if two_cpus() { "cross" } else { "same" };
    vec![
        [("thread", "same"), ("process", cross)],
        [("process", "same"), ("thread", cross)],
    ]
}

#[test]
fn msg_every_transport_thread_and_process_same_and_cross_cpu() {
    let transports = ["sysv", "posix-mq", "pipe", "unix", "eventfd"];
    for (i, transport) in transports.iter().enumerate() {
        for (task, cpu) in placements()[i % 2] {
            let spec = format!("msg:transport={transport},task={task},cpu={cpu}");
            let s = measure(&spec);
            assert_sound(&s, "msg", &format!("{transport} {task} {cpu}"));
        }
    }
}

#[test]
fn sem_every_kind_thread_and_process_same_and_cross_cpu() {
    for (i, kind) in ["sysv", "posix", "mutex", "futex"].iter().enumerate() {
        for (task, cpu) in placements()[i % 2] {
            let spec = format!("sem:kind={kind},task={task},cpu={cpu}");
            let s = measure(&spec);
            assert_sound(&s, "sem", &format!("{kind} {task} {cpu}"));
        }
    }
}

#[test]
fn stopping_a_run_stops_and_reaps_the_partner_process() {
    for spec in ["msg:task=process", "sem:kind=mutex,task=process"] {
        let _guard = serial();
        let before = sysv_objects();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let mut child = latlab_in_own_group()
            .args([
                "run",
                "--probe",
                spec,
                "-c",
                "0",
                "-d",
                "0",
                "-q",
                "--no-store",
            ])
            .arg("--json")
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        crate::common::await_handler(child.id(), libc::SIGINT);
        std::thread::sleep(Duration::from_millis(700));
        let sent = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "SIGINT to latlab");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{spec}: Ctrl-C ends a run cleanly");
        let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(run.interrupted);
        assert!(
            run.streams[0].samples > 0,
            "{spec}: what was measured is kept"
        );
        assert_nothing_left_of(child.id(), spec);
        assert_eq!(sysv_objects(), before, "{spec}: SysV objects left behind");
    }
}

#[test]
fn bad_parameters_are_usage_errors_that_say_what_is_accepted() {
    let _guard = serial();
    let out = latlab()
        .args(["run", "--probe", "msg:transport=carrier-pigeon", "-d", "1s"])
        .args(["-q", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("posix-mq"));
    let out = latlab()
        .args([
            "run",
            "--probe",
            "sem:kind=spinlock",
            "-d",
            "1s",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("futex"));
}

#[test]
fn a_partner_on_another_cpu_needs_a_second_cpu() {
    let _guard = serial();
    let Ok(out) = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(crate::common::latlab_path())
        .args([
            "run",
            "--probe",
            "msg:cpu=cross",
            "-c",
            "0",
            "-d",
            "1s",
            "-q",
            "--no-store",
        ])
        .output()
    else {
        return; // no taskset (util-linux) on this machine
    };
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cpu=cross needs two CPUs"));
}
