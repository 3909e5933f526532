//! The rules that decide a Run's warnings, degradation and verdict, on streams the
//! measuring loop makes from a replayed clock (the one its rehearsal runs on): the
//! final Run and a checkpoint of the same ledger must say the same.

use super::Session;
use crate::ledger::{CurrentPhase, Ledger, SharedLoads};
use latlab_measure::cpus::CpuInventory;
use latlab_measure::live::LiveStats;
use latlab_measure::notice::Notice;
use latlab_measure::notice::StreamContext;
use latlab_measure::plan::{self, RunInput, RunPlan};
use latlab_measure::probe::timer::{self, LoopConfig, LoopSummary};
use latlab_measure::probe::{Placement, Window};
use latlab_measure::record::{RecorderLimits, SampleRecorder};
use latlab_model::run::{Conditions, Phase, Run, Stream};
use latlab_model::run::{HostFacts, TimerSettings};
use latlab_model::seal::WarningCode;
use latlab_model::spec::{ClockName, SchedSpec, TimerMethod};
use latlab_model::threshold::Status;
use latlab_model::Nanos;
use latlab_rt::wake::{ReplayStep, Sleeper};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

const P: i64 = 1_000_000;

/// The plan of `latlab run -c 0 -p 1ms -d 20ms` with `max`.
fn plan_with(max: &str) -> RunPlan {
    let cpus = CpuInventory {
        online: vec![0],
        usable: vec![0],
        affinity: vec![0],
        isolcpus: Vec::new(),
        nohz_full: Vec::new(),
    };
    let input = RunInput {
        cpus: Some("0".to_string()),
        period: Some("1ms".to_string()),
        duration: Some("20ms".to_string()),
        max: Some(max.to_string()),
        ..RunInput::default()
    };
    plan::resolve(&input, &cpus).expect("a plain plan resolves")
}

fn host() -> HostFacts {
    HostFacts {
        hostname: "rig".to_string(),
        rig: None,
        ..HostFacts::default()
    }
}

/// The stream of a timer thread whose wake-ups come `late` ns after their deadlines,
/// in order, over 20 periods: the measuring loop itself, on the replayed clock.
fn timer_stream(late: &[i64]) -> Stream {
    let script: Vec<ReplayStep> = late
        .iter()
        .map(|&late_ns| ReplayStep::Wake {
            late_ns,
            expirations: None,
        })
        .collect();
    let settings = TimerSettings {
        method: TimerMethod::Abs,
        period_ns: Nanos(P),
        clock: ClockName::Monotonic,
        policy: SchedSpec::Fifo { priority: 95 },
        hybrid_margin_ns: Nanos::ZERO,
        timer_slack_ns: None,
        top_spikes: 4,
        spike_threshold_ns: None,
        spike_capacity: 0,
        timeline_interval_ns: Nanos(10 * P),
        breaktrace_ns: None,
    };
    let mut recorder = SampleRecorder::new(RecorderLimits {
        top: 4,
        spike_threshold: None,
        spike_capacity: 0,
        timeline_interval: 10 * P,
        timeline_slots: 10,
    });
    let mut summary = LoopSummary::default();
    let config = LoopConfig {
        period: P,
        relative: false,
        window: Window {
            start: 0,
            warm_up_end: 0,
            end: Some(20 * P),
        },
    };
    timer::measure_loop(
        &mut Sleeper::replay(&script),
        &config,
        &mut recorder,
        &LiveStats::default(),
        &AtomicBool::new(false),
        &mut summary,
    )
    .expect("the replayed clock never fails");
    let placement = Placement {
        thread: 0,
        cpu: Some(0),
        policy: SchedSpec::Fifo { priority: 95 },
        timer_slack_ns: 0,
        feed: None,
        checkpoint: None,
    };
    timer::stream_of(&settings, &placement, &recorder, &summary, 0, "main")
}

/// A ledger holding one finished phase of `stream`, with the notices the runner draws
/// from it and `more`.
fn ledger_of(stream: Stream, more: Vec<Notice>) -> Ledger {
    let ledger = Ledger::default();
    {
        let mut m = ledger.lock();
        let context = StreamContext {
            memory_locked: true,
            ..StreamContext::default()
        };
        for notice in Notice::from_streams(std::slice::from_ref(&stream), &context) {
            m.note(notice);
        }
        for notice in more {
            m.note(notice);
        }
        m.phases.push(Phase {
            name: "main".to_string(),
            started_at: None,
            elapsed_ns: stream.elapsed_ns,
            loads: Vec::new(),
        });
        m.streams.push(stream);
        m.conditions = Some(Conditions::default());
        m.started_at = Some(SystemTime::now());
        m.ended_at = Some(SystemTime::now());
    }
    ledger
}

fn codes(run: &Run) -> Vec<&str> {
    run.warnings.iter().map(|w| w.code.as_str()).collect()
}

#[test]
fn a_late_wake_is_missed_periods_and_fails_the_maximum_in_run_and_checkpoint() {
    // The third wake-up comes 2.5 periods late: two deadlines pass without one.
    let stream = timer_stream(&[10_000, 10_000, 2 * P + P / 2]);
    assert_eq!(stream.missed_periods, Some(2));
    assert_eq!(stream.samples + 2, 20, "samples + missed = periods");
    let plan = plan_with("1ms");
    let base = Session::base_run(&plan, host(), None, "r1".to_string());
    let ledger = ledger_of(stream, Vec::new());
    let run = ledger.seal(base.clone());
    assert_eq!(codes(&run), [WarningCode::MissedPeriods.as_str()]);
    assert!(!run.degraded);
    assert_eq!(
        run.verdict.status,
        Status::Fail,
        "2.5 ms late against --max 1ms"
    );
    assert_eq!(run.exit_status().code(), 1);
    // A checkpoint of the same ledger says the same.
    let checkpoint = ledger.checkpoint(&base, Duration::ZERO);
    assert_eq!(checkpoint.warnings, run.warnings);
    assert_eq!(checkpoint.verdict, run.verdict);
    assert_eq!(checkpoint.degraded, run.degraded);
    assert_eq!(checkpoint.streams, run.streams);
}

#[test]
fn a_refused_policy_degrades_and_comes_first_a_requested_one_does_not() {
    let stream = timer_stream(&[10_000, 3 * P]);
    let plan = plan_with("10ms");
    let base = Session::base_run(&plan, host(), None, "r2".to_string());
    let refused = Notice::NotRealtime {
        wanted: SchedSpec::Fifo { priority: 95 },
        got: SchedSpec::Other { nice: 0 },
        thread: 0,
        reason: "not permitted".to_string(),
    };
    let run = ledger_of(stream.clone(), vec![refused]).seal(base.clone());
    assert_eq!(
        codes(&run),
        [
            WarningCode::NotRealtime.as_str(),
            WarningCode::MissedPeriods.as_str()
        ]
    );
    assert!(run.degraded);
    assert_eq!(run.verdict.status, Status::Pass);
    let asked = Notice::NonRealtimeRequested {
        policy: SchedSpec::Other { nice: 0 },
    };
    let run = ledger_of(stream, vec![asked]).seal(base);
    assert!(!run.degraded, "{:?}", run.warnings);
}

#[test]
fn a_phase_measuring_shows_in_a_checkpoint_only_once_its_threads_measure() {
    let plan = plan_with("1ms");
    let base = Session::base_run(&plan, host(), None, "r3".to_string());
    let ledger = ledger_of(timer_stream(&[10_000]), Vec::new());
    let checkpoint = latlab_measure::checkpoint::PhaseCheckpoint::new(1);
    ledger.lock().current = Some(CurrentPhase {
        name: "second".to_string(),
        started_at: SystemTime::now(),
        checkpoint: Some(checkpoint),
        loads: SharedLoads::default(),
    });
    // Its threads have not started: the finished phase alone.
    let run = ledger.checkpoint(&base, Duration::ZERO);
    assert_eq!(run.phases.len(), 1);
    assert_eq!(run.streams.len(), 1);
}

#[test]
fn a_checkpoint_and_the_final_run_give_one_start_and_one_set_of_conditions() {
    let plan = plan_with("1ms");
    let base = Session::base_run(&plan, host(), None, "r4".to_string());
    let ledger = ledger_of(timer_stream(&[10_000]), Vec::new());
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    {
        let mut m = ledger.lock();
        m.started_at = Some(started);
        m.breaktrace_armed = true;
    }
    let checkpoint = ledger.checkpoint(&base, Duration::ZERO);
    let run = ledger.seal(base.clone());
    assert_ne!(base.started_at, run.started_at, "the start is the ledger's");
    assert_eq!(checkpoint.started_at, run.started_at);
    assert_eq!(
        run.started_at.as_deref(),
        Some(latlab_model::stamp::rfc3339(started).as_str())
    );
    let armed = |r: &Run| r.conditions.as_ref().map(|c| c.breaktrace_armed);
    assert_eq!(armed(&checkpoint), Some(true));
    assert_eq!(armed(&run), Some(true));
}
