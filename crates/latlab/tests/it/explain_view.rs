//! `latlab explain` on stored runs that hold an explanation: the view of a fixed Run
//! (snapshot), one spike event by event, the JSON, and the errors — a run measured
//! without `--explain` (exit 1) and a `--spike` beyond those kept (exit 2).
//!
//! Until `latlab run --explain` fills it, the explanation is synthetic but
//! self-consistent: [`explained`] cuts each of a Run's largest spikes into parts that
//! add up to it and builds the catalogue as the explainer does
//! (`Explain::add_to_catalogue`).

use crate::common::with_store;
use latlab_model::explain::{
    AbSide, Cause, Coverage, Explain, ExplainMode, Explanation, ObserverEffect, Part, ReaderStats,
    Stage, Stages, WindowEvent,
};
use latlab_model::run::Run;
use latlab_model::Nanos;
use std::path::{Path, PathBuf};

/// `docs/example-run.json`, the real run the Run format documents.
fn example() -> Run {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
    Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One spike of `latency` cut into the parts of a late wake: idle exit, the timer
/// interrupt, an interrupt, a thread that kept the CPU, the scheduler, the return to
/// user and the unexplained rest (the parts never exceed the sample: small spikes get
/// fewer of them).
fn spike(phase: &str, cpu: Option<usize>, at: Nanos, latency: Nanos) -> Explanation {
    let l = latency.0.max(0);
    let shares = [
        (Cause::IdleExit { state: Some(1) }, Stage::Delivery, l / 20),
        (Cause::TimerInterrupt, Stage::Handler, l / 25),
        (
            Cause::Irq {
                irq: 24,
                name: "virtio0-input.0".into(),
            },
            Stage::Scheduling,
            l / 10,
        ),
        (
            Cause::Thread {
                comm: "spin".into(),
                pid: 4242,
                prio: 0,
                function: None,
                irq: None,
            },
            Stage::Scheduling,
            l / 2,
        ),
        (Cause::Scheduler, Stage::Scheduling, l / 25),
        (Cause::ReturnToUser, Stage::Return, l / 50),
    ];
    let mut parts = Vec::new();
    let mut events = Vec::new();
    let mut start = 0;
    for (cause, stage, duration) in shares {
        events.push(WindowEvent {
            t_ns: Nanos(start),
            event: match &cause {
                Cause::Irq { .. } => "irq:irq_handler_entry",
                Cause::Thread { .. } | Cause::Scheduler => "sched:sched_switch",
                Cause::IdleExit { .. } => "power:cpu_idle",
                _ => "irq_vectors:local_timer_entry",
            }
            .to_string(),
            detail: cause.label(),
        });
        parts.push(Part {
            cause,
            stage,
            start_ns: Nanos(start),
            duration_ns: Nanos(duration),
        });
        start += duration;
    }
    parts.push(Part {
        cause: Cause::Unexplained {
            current: Some("swapper/1:0".into()),
        },
        stage: Stage::Scheduling,
        start_ns: Nanos(start),
        duration_ns: Nanos(l - start),
    });
    Explanation {
        phase: phase.to_string(),
        thread: 0,
        cpu,
        at_ns: at,
        due_monotonic_ns: None,
        latency_ns: latency,
        coverage: Coverage::Complete,
        stages: Stages {
            delivery_ns: Some(Nanos(l / 20)),
            handler_ns: Some(Nanos(l / 25)),
            scheduling_ns: None,
            return_ns: Some(Nanos(l / 50)),
        },
        parts,
        events,
        events_left_out: 0,
    }
}

/// `run` with an explanation of its streams' largest spikes (every kept spike counted
/// in the catalogue, all of them explained).
pub fn explained(mut run: Run) -> Run {
    let mut spikes: Vec<Explanation> = run
        .streams
        .iter()
        .flat_map(|s| {
            s.spikes
                .top
                .iter()
                .map(|t| spike(&s.phase, s.cpu, t.at_ns, t.value_ns))
        })
        .collect();
    spikes.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
    let mut explain = Explain {
        mode: ExplainMode::Default,
        unavailable: None,
        events: vec![
            "sched:sched_switch".into(),
            "irq:irq_handler_entry".into(),
            "irq:irq_handler_exit".into(),
            "power:cpu_idle".into(),
        ],
        clock: Some("mono".into()),
        limits: vec!["no nmi:nmi_entry event: time in NMIs is unexplained".into()],
        buffer_kb: Some(4096),
        reader: ReaderStats {
            cpu: Some(0),
            pages: 64,
            events: 5_120,
            overrun: 0,
            pages_with_missing_events: 0,
            max_lag_ns: Some(Nanos(2_500_000)),
            held_bytes_max: 262_144,
        },
        observer: Some(ObserverEffect {
            off: AbSide {
                samples: 1_000,
                min_ns: Some(Nanos(2_000)),
                p50_ns: Some(Nanos(4_000)),
                p99_ns: Some(Nanos(9_000)),
            },
            on: AbSide {
                samples: 1_000,
                min_ns: Some(Nanos(2_100)),
                p50_ns: Some(Nanos(4_100)),
                p99_ns: Some(Nanos(9_500)),
            },
        }),
        spikes_seen: spikes.len() as u64,
        spikes_explained: spikes.len() as u64,
        spikes_incomplete: 0,
        spikes_unexplained: 0,
        catalogue: Vec::new(),
        spike_time: Vec::new(),
        spikes: Vec::new(),
    };
    for e in &spikes {
        assert_eq!(
            e.parts_total_ns(),
            e.latency_ns,
            "parts add up to the sample"
        );
        explain.add_to_catalogue(e);
    }
    explain.sort_catalogue();
    explain.spikes = spikes;
    run.explain = Some(explain);
    run
}

/// A store in `dir` holding only `run`, imported from its JSON.
pub fn store_holding(dir: &Path, run: &Run) -> PathBuf {
    let store = dir.join("runs.sqlite");
    let json = dir.join("run.json");
    std::fs::write(&json, run.to_json_pretty()).unwrap();
    let (code, _, err) = with_store(&store, &["import", json.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    store
}

#[test]
fn the_view_of_a_fixed_run_shows_the_catalogue_then_the_largest_spikes() {
    let dir = tempfile::tempdir().unwrap();
    let run = explained(example());
    let store = store_holding(dir.path(), &run);
    let (code, out, err) = with_store(&store, &["explain", "last", "--top", "3"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
}

#[test]
fn one_spike_is_shown_event_by_event_and_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let run = explained(example());
    let store = store_holding(dir.path(), &run);
    let (code, out, err) = with_store(&store, &["explain", "last", "--spike", "2"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(out);
    let (code, json, err) = with_store(&store, &["explain", "last", "--spike", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let second: Explanation = serde_json::from_str(&json).unwrap();
    assert_eq!(second, run.explain.as_ref().unwrap().spikes[1]);
    let (code, json, err) = with_store(&store, &["explain", "last", "--json"]);
    assert_eq!(code, 0, "{err}");
    let whole: Explain = serde_json::from_str(&json).unwrap();
    assert_eq!(Some(whole), run.explain);
}

#[test]
fn a_spike_beyond_those_kept_is_bad_input_naming_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let run = explained(example());
    let kept = run.explain.as_ref().unwrap().spikes.len();
    let store = store_holding(dir.path(), &run);
    for spike in ["0", &(kept + 1).to_string()] {
        let (code, out, err) = with_store(&store, &["explain", "last", "--spike", spike]);
        assert_eq!(code, 2, "--spike {spike}: {out}{err}");
        assert_eq!(
            err,
            format!(
                "latlab: error: --spike: there is no spike {spike}: this run kept {kept} \
                 spikes in full: give 1 to {kept}\n"
            )
        );
    }
}

#[test]
fn a_run_measured_without_explain_says_how_to_measure_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = example();
    let store = store_holding(dir.path(), &run);
    let (code, out, err) = with_store(&store, &["explain", "last"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "latlab: error: run {} was not measured with --explain, so there is nothing to \
             explain: measure with `latlab run --explain` (add -d, -c and the load as before)\n",
            run.id
        )
    );
}
