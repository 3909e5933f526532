//! The runner's spike feeds read by an explanation session (needs root and tracefs).

use crate::explain::tests::{serial, start, Recording, TRACED};
use crate::explain::ExplainMode;
use crate::live::LiveStats;
use crate::notice::Notice;
use crate::probe::{info, timer};
use crate::runner::{run_probe, RunObserver, RunRequest, SystemSetup};
use latlab_model::spec::SchedSpec;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

struct Silent;

impl RunObserver for Silent {
    fn ready(&mut self, _: &[Notice]) {}
    fn progress(&mut self, _: &[LiveStats], _: Duration) {}
    fn refresh_every(&self) -> Duration {
        Duration::from_secs(1)
    }
}

/// The runner's feed: every sample of a timer run on the traced CPU is a spike (the
/// threshold is 0), placed on the trace clock where its thread was woken.
#[test]
fn a_timer_runs_spikes_are_placed_where_its_thread_woke() {
    let _serial = serial();
    let session = start(ExplainMode::Default, Recording::default());
    let mut setup = info::test_setup(&timer::INFO, &[], &[0, TRACED]);
    setup.spike_threshold = Some(latlab_model::Nanos(0));
    setup.span = Some(latlab_model::Nanos::from_millis(300));
    let probe = (timer::INFO.build)(&setup).unwrap();
    let request = RunRequest {
        cpus: vec![TRACED],
        policy: SchedSpec::Other { nice: 0 },
        timer_slack_ns: None,
        duration: Some(latlab_model::Nanos::from_millis(200)),
        warm_up: latlab_model::Nanos::from_millis(50),
        phase: "main".to_string(),
        breaktrace: None,
        feeds: session.feeds_for("main", &[TRACED]),
        checkpoint: None,
        telemetry: None,
    };
    let system = SystemSetup::apply(None, None);
    let outcome = run_probe(
        probe.as_ref(),
        &request,
        &system,
        &AtomicBool::new(false),
        &[LiveStats::default()],
        &mut Silent,
    )
    .unwrap();
    let finished = session.finish().expect("the reader thread ran to the end");
    let samples = outcome.streams[0].samples;
    let seen = &finished.explainer.seen;
    assert_eq!(seen.len() as u64 + finished.spikes_dropped, samples);
    assert!(seen.iter().all(|s| s.covered && s.spike.tid > 0));
    // The timer wakes the thread at or after its deadline, and before its clock read.
    let placed = seen.iter().filter(|s| !s.wakings_in.is_empty()).count();
    assert!(
        placed * 10 >= seen.len() * 9,
        "{placed} of {} spikes have their thread's wake-up inside their window",
        seen.len()
    );
}
