//! A small Run with known figures, for the tests of every crate that reads Runs
//! (compiled for tests, and with the `fixture` feature for other crates' tests).

use crate::hist::LatencyHistogram;
use crate::progress::{Progress, RunState};
use crate::run::*;
use crate::spec::{ClockName, SchedSpec, TimerMethod};
use crate::threshold::{Threshold, Verdict};
use crate::Nanos;

/// A small two-stream Run with known samples.
pub fn run() -> Run {
    let stream = |cpu: usize, values: &[i64]| {
        let mut sums = ExactSums::default();
        let mut hist = LatencyHistogram::new();
        for &v in values {
            sums.add(v);
            hist.record(v);
        }
        Stream {
            probe: "timer".into(),
            method: Some("abs".into()),
            phase: "main".into(),
            thread: cpu,
            cpu: Some(cpu),
            policy: Some(SchedSpec::DEFAULT),
            period_ns: Some(Nanos::MILLISECOND),
            samples: values.len() as u64,
            missed_periods: Some(1),
            overrun_wakes: Some(1),
            early_wakes: Some(0),
            first_sample_ns: Some(Nanos(values[0])),
            warm_up_samples: 0,
            drift_ns: None,
            elapsed_ns: Some(Nanos::SECOND),
            timer_slack_ns: Some(0),
            page_faults: Some(0),
            stats: Statistics::compute(&sums, &hist),
            histogram: Some(EncodedHistogram::from_histogram(&hist)),
            spikes: Spikes::default(),
            timeline: Timeline::default(),
        }
    };
    let streams = vec![
        stream(0, &[2_500, 3_100, 3_900, 12_400]),
        stream(1, &[1_200, 1_900, 2_000, 45_000, 2_300]),
    ];
    let thresholds = vec![Threshold::parse("max=20us").unwrap()];
    let verdict = Verdict::judge(&thresholds, &streams);
    Run {
        schema: SCHEMA.into(),
        id: "20261121T000000Z-abcdef".into(),
        tool: Tool {
            name: "latlab".into(),
            version: Some("0.1.0".into()),
        },
        started_at: Some("2026-11-21T00:00:00.000Z".into()),
        ended_at: Some("2026-11-21T00:00:01.000Z".into()),
        command_line: Some(vec!["latlab".into(), "run".into()]),
        scenario: None,
        name: None,
        tags: Default::default(),
        note: None,
        plan: Plan {
            duration_ns: Some(Nanos::SECOND),
            warm_up_ns: Nanos::ZERO,
            cpus: vec![0, 1],
            cpu_choice: None,
            probes: vec![ProbePlan::Timer(TimerSettings {
                method: TimerMethod::Abs,
                period_ns: Nanos::MILLISECOND,
                clock: ClockName::Monotonic,
                policy: SchedSpec::DEFAULT,
                hybrid_margin_ns: Nanos(50_000),
                timer_slack_ns: None,
                top_spikes: 10,
                spike_threshold_ns: None,
                spike_capacity: 0,
                timeline_interval_ns: Nanos::SECOND,
                breaktrace_ns: None,
            })],
            dma_latency_us: Some(0),
            memory_lock: Some(MemoryLockPlan::Touched),
            phases: Vec::new(),
        },
        host: Some(HostFacts {
            hostname: "rig".into(),
            rig: None,
            kernel_release: "6.18.0".into(),
            ..HostFacts::default()
        }),
        audit: None,
        conditions: Some(Conditions::default()),
        degraded: false,
        interrupted: false,
        warnings: vec![],
        phases: vec![],
        streams,
        events: vec![],
        thresholds,
        accepted: Vec::new(),
        verdict,
        import: None,
        published: None,
        explain: None,
        progress: None,
        telemetry: None,
    }
}

/// [`run`] measured with `--explain`: two spikes on CPU 1 cut into parts that add
/// up to them, and a cause whose name holds a quote, a comma and a backslash.
pub fn explained_run() -> Run {
    use crate::explain::*;
    let part = |cause: Cause, start: i64, duration: i64| Part {
        cause,
        stage: Stage::Scheduling,
        start_ns: Nanos(start),
        duration_ns: Nanos(duration),
    };
    let spike = |at: i64, latency: i64| Explanation {
        phase: "main".into(),
        thread: 1,
        cpu: Some(1),
        at_ns: Nanos(at),
        due_monotonic_ns: None,
        latency_ns: Nanos(latency),
        coverage: Coverage::Complete,
        stages: Stages::default(),
        parts: vec![
            part(
                Cause::Irq {
                    irq: 24,
                    name: "virtio0-input.0".into(),
                },
                0,
                2_000,
            ),
            part(
                Cause::Thread {
                    comm: "odd \"name\", \\x".into(),
                    pid: 77,
                    prio: 0,
                    function: None,
                    irq: None,
                },
                2_000,
                latency - 3_000,
            ),
            part(Cause::Unexplained { current: None }, latency - 1_000, 1_000),
        ],
        events: Vec::new(),
        events_left_out: 0,
    };
    let mut explain = Explain {
        mode: ExplainMode::Default,
        unavailable: None,
        events: vec!["sched:sched_switch".into()],
        clock: Some("mono".into()),
        limits: Vec::new(),
        buffer_kb: Some(4096),
        reader: ReaderStats::default(),
        observer: None,
        spikes_seen: 3,
        spikes_explained: 2,
        spikes_incomplete: 0,
        spikes_unexplained: 1,
        catalogue: Vec::new(),
        spike_time: Vec::new(),
        spikes: vec![spike(400_000_000, 45_000), spike(100_000_000, 12_400)],
    };
    for e in explain.spikes.clone() {
        explain.add_to_catalogue(&e);
    }
    explain.sort_catalogue();
    let mut run = run();
    run.explain = Some(explain);
    run
}

/// The progress of a run in `state` (running, or died) at its first checkpoint, by a
/// process that latlab does not know.
pub fn progress(state: RunState) -> Progress {
    Progress {
        state,
        pid: 1,
        pid_start_ticks: None,
        boot_id: None,
        rig: None,
        checkpoints: 1,
        checkpoint_at: None,
        checkpoint_every_ns: 1_000_000_000,
        death: None,
    }
}
