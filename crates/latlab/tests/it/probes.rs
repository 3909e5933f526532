//! The primitive probes through the command line: listing, specifications and their
//! mistakes, and the clock probe measured for real (invariants only).

use crate::common::{latlab, measure, serial};

use latlab_model::run::ProbePlan;

#[test]
fn probes_are_listed_with_their_definitions() {
    let short = latlab().arg("probes").output().unwrap();
    assert!(short.status.success());
    let text = String::from_utf8_lossy(&short.stdout);
    assert!(text.contains("timer") && text.contains("clock"), "{text}");
    let long = latlab().args(["probes", "--long"]).output().unwrap();
    let text = String::from_utf8_lossy(&long.stdout);
    assert!(
        text.contains("burst=100"),
        "parameters with defaults: {text}"
    );
    assert!(text.contains("consecutive"), "definitions: {text}");
}

#[test]
fn bad_probe_specifications_name_the_flag_and_the_choices() {
    for (spec, says) in [
        ("sundial", "unknown probe"),
        ("clock:clock=sundial", "monotonic"),
        ("clock:speed=1", "no parameter"),
        ("clock:burst", "key=value"),
    ] {
        let out = latlab()
            .args(["run", "-d", "1s", "--no-store", "--probe", spec])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--probe") && err.contains(says),
            "{spec}: {err}"
        );
    }
}

#[test]
fn the_clock_probe_measures_each_clock_as_a_distribution() {
    let (code, run, out) = measure(&[
        "-c",
        "0",
        "-d",
        "1s",
        "--probe",
        "clock",
        "--probe",
        "clock:clock=tsc,burst=10",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(run.phases.len(), 2, "a phase per probe");
    assert_eq!(run.streams.len(), 2);
    for (stream, burst) in run.streams.iter().zip([100u64, 10]) {
        assert_eq!(stream.probe, "clock");
        assert!(stream.samples > 0);
        assert_eq!(
            stream.samples % burst,
            0,
            "whole bursts of {burst}: {}",
            stream.samples
        );
        assert_eq!(
            stream.decode_histogram().unwrap().unwrap().len(),
            stream.samples
        );
        let st = &stream.stats;
        let (min, max) = (st.min_ns.unwrap(), st.max_ns.unwrap());
        let p = |q| {
            st.percentile(q)
                .unwrap()
                .exact()
                .expect("a measured percentile is a value")
        };
        assert!(min.0 >= 0, "a clock read never goes back in time: {min:?}");
        assert!(min <= p(50.0) && p(50.0) <= p(99.0) && p(99.0) <= max);
        assert_eq!(stream.early_wakes, Some(0));
    }
    match &run.plan.probes[1] {
        ProbePlan::Primitive(p) => {
            assert_eq!(p.name, "clock");
            assert_eq!(p.params["clock"], "tsc");
            assert_eq!(p.params["burst"], "10");
        }
        other => panic!("{other:?}"),
    }
}

/// Every probe in `latlab probes`, by name.
fn probe_names() -> Vec<String> {
    let out = latlab().arg("probes").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Puts `tracing_on` back as it was: `--breaktrace` stops tracing at the event.
struct TracingOnRestore(Option<String>);

impl TracingOnRestore {
    const PATH: &'static str = "/sys/kernel/tracing/tracing_on";

    fn capture() -> Self {
        TracingOnRestore(std::fs::read_to_string(Self::PATH).ok())
    }
}

impl Drop for TracingOnRestore {
    fn drop(&mut self) {
        if let Some(on) = &self.0 {
            let _ = std::fs::write(Self::PATH, on.trim());
        }
    }
}

type Honoured = fn(&latlab_model::run::Run) -> bool;

/// The timer's settings in the Run's plan, when the probe is the timer.
fn timer_plan(run: &latlab_model::run::Run) -> Option<&latlab_model::run::TimerSettings> {
    match run.plan.probes.first()? {
        ProbePlan::Timer(t) => Some(t),
        ProbePlan::Primitive(_) => None,
    }
}

/// Every `latlab run` flag that shapes a measurement, and how the Run shows it was
/// honoured. Flags about where the Run goes or who watches it (--json, --store,
/// --no-store, -q, --no-audit, --listen) and where loads keep their files (--load-dir)
/// are tested on their own elsewhere.
const FLAGS: &[(&[&str], Honoured)] = &[
    (&["-c", "1"], |r| {
        r.plan.cpus == [1] && r.streams.iter().all(|s| s.cpu == Some(1))
    }),
    (&["-P", "r:90"], |r| {
        r.streams
            .iter()
            .all(|s| s.policy == Some(latlab_model::spec::SchedSpec::Rr { priority: 90 }))
    }),
    (&["-p", "2ms"], |r| {
        r.streams
            .iter()
            .all(|s| s.period_ns == Some(latlab_model::Nanos(2_000_000)))
    }),
    (&["-d", "120ms"], |r| {
        r.plan.phases[0].duration_ns == Some(latlab_model::Nanos(120_000_000))
    }),
    (&["--warm-up", "20ms"], |r| {
        r.plan.phases[0].warm_up_ns == latlab_model::Nanos(20_000_000)
    }),
    (&["--method", "rel"], |r| {
        r.streams.iter().all(|s| s.method.as_deref() == Some("rel"))
    }),
    (&["--clock", "boottime"], |r| {
        timer_plan(r).is_some_and(|t| t.clock == latlab_model::spec::ClockName::Boottime)
    }),
    (&["--hybrid-margin", "100us"], |r| {
        timer_plan(r).is_some_and(|t| t.hybrid_margin_ns == latlab_model::Nanos(100_000))
    }),
    // A real-time thread has no timer slack: the kernel reads it as 0.
    (&["--timer-slack", "1us", "-P", "o:0"], |r| {
        r.streams.iter().all(|s| s.timer_slack_ns == Some(1_000))
    }),
    (&["-b", "1ns", "-d", "2s"], |r| {
        r.interrupted
            && r.events.iter().filter(|e| e.kind == "breaktrace").count() == 1
            && r.events[0].value_ns.is_some_and(|v| v.0 > 1)
    }),
    (&["--spike", "1ns", "--spike-nodes", "5"], |r| {
        r.streams.iter().all(|s| {
            s.spikes.threshold_ns == Some(latlab_model::Nanos(1))
                && s.spikes.above_threshold.len() as u64 == s.samples.min(5)
        })
    }),
    (&["--top", "3"], |r| {
        r.streams
            .iter()
            .all(|s| s.spikes.top.len() as u64 == s.samples.min(3))
    }),
    (&["--interval", "10ms"], |r| {
        r.streams
            .iter()
            .all(|s| s.timeline.interval_ns == latlab_model::Nanos(10_000_000))
    }),
    (&["--no-mlock"], |r| {
        r.plan.memory_lock == Some(latlab_model::run::MemoryLockPlan::None)
    }),
    (&["--mlock-all"], |r| {
        r.plan.memory_lock == Some(latlab_model::run::MemoryLockPlan::All)
    }),
    (&["--dma-latency", "10"], |r| {
        r.plan.dma_latency_us == Some(10)
    }),
    (&["--no-tune"], |r| {
        r.plan.dma_latency_us.is_none()
            && r.conditions
                .as_ref()
                .is_some_and(|c| c.dma_latency_us.is_none())
    }),
    (&["--max", "1h"], |r| {
        r.thresholds.len() == 1 && r.verdict.status == latlab_model::threshold::Status::Pass
    }),
    (&["--threshold", "p99=1h"], |r| {
        r.thresholds.len() == 1 && r.verdict.status == latlab_model::threshold::Status::Pass
    }),
    // The load on the CPU that is not measured, so the probe keeps its own.
    (&["--load", "cpu:threads=1", "--load-cpus", "1"], |r| {
        r.phases
            .iter()
            .all(|p| p.loads.len() == 1 && p.loads[0].name == "cpu" && p.loads[0].cpus == [1])
    }),
];

#[test]
fn every_run_flag_is_honoured_by_every_probe_or_refused_naming_it() {
    // tracing_on is restored after every break trace here: no other may come between.
    let _guard = serial();
    let _tracing = TracingOnRestore::capture();
    let probes = probe_names();
    assert!(
        probes.len() >= 10 && probes.contains(&"timer".to_string()),
        "{probes:?}"
    );
    // The kernel's own tracers (timerlat, osnoise) need a kernel that has them (the
    // PREEMPT_RT lane runs them); where it has not, they are refused, saying which
    // tracer is missing. Wherever they run, a timer-only flag is refused first.
    let (tracers, probes): (Vec<String>, Vec<String>) = probes
        .into_iter()
        .partition(|p| matches!(p.as_str(), "timerlat" | "osnoise"));
    let offered =
        std::fs::read_to_string("/sys/kernel/tracing/available_tracers").unwrap_or_default();
    for probe in &tracers {
        let run = |flags: &[&str]| {
            let out = latlab()
                .args([
                    "run",
                    "--probe",
                    probe,
                    "-c",
                    "0",
                    "-d",
                    "60ms",
                    "-q",
                    "--no-store",
                ])
                .args(flags)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(2), "{probe} {flags:?}: {stderr}");
            stderr
        };
        // osnoise's period is its parameter: -p is refused too.
        let mut refused: Vec<&[&str]> = vec![&["--method", "rel"], &["--clock", "realtime"]];
        if probe == "osnoise" {
            refused.push(&["-p", "2ms"]);
        }
        for flag in refused {
            let stderr = run(flag);
            assert!(
                stderr.contains(&format!("probe {probe} ")) && stderr.contains(flag[0]),
                "{probe} {flag:?}: {stderr}"
            );
        }
        if !offered.split_whitespace().any(|t| t == probe) {
            let stderr = run(&[]);
            assert!(
                stderr.contains(&format!("probe {probe}: this kernel has no {probe} tracer")),
                "{probe}: {stderr}"
            );
        }
    }
    // Each probe's runs in turn, three probes at a time: the runs only check what they
    // were told, never a latency, and most of their time is a process starting. The
    // noise probe spins on its CPU, which would starve the others' partner tasks: it
    // runs after them, alone.
    let (spinning, probes): (Vec<String>, Vec<String>) =
        probes.into_iter().partition(|p| p == "noise");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut refused: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut refused = Vec::new();
                    while let Some(probe) =
                        probes.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        refused.extend(flags_of(probe));
                    }
                    refused
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    for probe in &spinning {
        refused.extend(flags_of(probe));
    }
    let probes: Vec<String> = probes.into_iter().chain(spinning).collect();
    // The ground truth: only the timer-only settings, and noise's period, are refused.
    let mut expected: Vec<String> = probes
        .iter()
        .filter(|p| *p != "timer")
        .flat_map(|p| ["--method", "--clock", "--hybrid-margin"].map(|f| format!("{p} {f}")))
        .collect();
    expected.push("noise -p".to_string());
    refused.sort();
    expected.sort();
    assert_eq!(refused, expected);
}

/// Runs `probe` with each of [`FLAGS`], checking that each is honoured or refused naming
/// both; returns the refused ones ("PROBE FLAG").
fn flags_of(probe: &str) -> Vec<String> {
    let mut refused = Vec::new();
    for (flag, honoured) in FLAGS {
        let mut args = vec!["--probe", probe, "--no-audit"];
        for (name, default) in [("-c", "0"), ("-d", "60ms")] {
            if !flag.contains(&name) {
                args.extend([name, default]);
            }
        }
        args.extend_from_slice(flag);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let out = latlab()
            .arg("run")
            .args(&args)
            .args(["-q", "--no-store", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) {
            assert!(
                stderr.contains(&format!("probe {probe} ")) && stderr.contains(flag[0]),
                "{probe} {flag:?} refused without naming both: {stderr}"
            );
            assert!(!json.exists(), "a refused run writes no Run");
            refused.push(format!("{probe} {}", flag[0]));
            continue;
        }
        // Memory not locked degrades a run: untrusted, exit 5.
        let exit = if flag.contains(&"--no-mlock") { 5 } else { 0 };
        assert_eq!(out.status.code(), Some(exit), "{probe} {flag:?}: {stderr}");
        let run = crate::common::written_run(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(honoured(&run), "{probe} {flag:?} was accepted and ignored");
    }
    refused
}

#[test]
fn a_scenarios_timer_only_setting_in_a_phase_whose_probe_ignores_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let json = dir.path().join("run.json");
    for (timer, probe, field) in [
        ("method = \"rel\"", "noise", "timer.method"),
        ("clock = \"boottime\"", "clock", "timer.clock"),
    ] {
        std::fs::write(
            &file,
            format!(
                "name = \"s\"\ndescription = \"d\"\nduration = \"100ms\"\n[timer]\n{timer}\n\
                 [[phase]]\nname = \"x\"\nprobe = \"{probe}\"\n"
            ),
        )
        .unwrap();
        let out = latlab()
            .arg("run")
            .arg(&file)
            .args(["-c", "0", "--no-audit", "-q", "--no-store", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{probe} {field}: {stderr}");
        assert!(
            stderr.contains(&format!("s: {field}: probe {probe} does not use")),
            "{stderr}"
        );
        assert!(!json.exists(), "a refused run writes no Run");
    }
}
