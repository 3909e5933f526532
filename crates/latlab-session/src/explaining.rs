//! `latlab run --explain`: the trace session around the phases, and the Run's
//! explanation from what it gathered.

use crate::listen::LiveCauses;
use latlab_measure::explain::{
    ExplainSoFar, ReaderSettings, RunExplainer, Session, KEPT_EXPLANATIONS,
};
use latlab_measure::notice::Notice;
use latlab_measure::observer::measure_ab;
use latlab_measure::plan::RunPlan;
use latlab_model::explain::{Explain, ExplainMode, ObserverEffect};
use latlab_model::spec::SchedSpec;
use std::sync::Arc;
use std::time::Duration;

/// The explanation being gathered for a run.
pub enum Explaining {
    /// Tracing the measured CPUs, with what tracing was measured to cost (or why not),
    /// and where checkpoints get what is explained so far.
    Tracing(
        Box<Session<RunExplainer>>,
        Result<ObserverEffect, String>,
        ExplainMode,
        Arc<ExplainSoFar>,
    ),
    /// Asked for, but tracing could not start: the Run says why.
    Unavailable(Box<Explain>),
}

impl Explaining {
    /// Starts tracing the CPUs of every phase when the plan asks to explain, and gives
    /// each phase's measuring threads their spike feeds. When tracing cannot start,
    /// the run goes on and a notice says why.
    /// With `live`, the catalogue is published there as it grows (`--listen`).
    pub fn start(
        plan: &mut RunPlan,
        notices: &mut Vec<Notice>,
        live: Option<LiveCauses>,
    ) -> Option<Explaining> {
        let mode = plan.explain?;
        let mut cpus: Vec<usize> = plan
            .phases
            .iter()
            .flat_map(|p| p.request.cpus.iter().copied())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let wires = plan
            .phases
            .iter()
            .filter_map(|p| {
                let wire = p.request.breaktrace.clone()?;
                Some((p.request.phase.clone(), wire))
            })
            .collect();
        let so_far = Arc::new(ExplainSoFar::default());
        let mut explainer =
            RunExplainer::new(mode, KEPT_EXPLANATIONS, wires).snapshotting(so_far.clone());
        if let Some(live) = live {
            explainer = explainer.publishing(live);
        }
        match Session::start(&cpus, mode, &ReaderSettings::default(), explainer) {
            Ok(session) => {
                for phase in &mut plan.phases {
                    let request = &mut phase.request;
                    request.feeds = match request.policy {
                        // SCHED_DEADLINE threads run unpinned: their spikes have no CPU.
                        SchedSpec::Deadline { .. } => (0..request.cpus.len())
                            .map(|thread| session.feed(&request.phase, thread, None))
                            .collect(),
                        _ => session.feeds_for(&request.phase, &request.cpus),
                    };
                }
                match observe(plan, &session) {
                    Observed::Measured(effect) => Some(Explaining::Tracing(
                        Box::new(session),
                        Ok(effect),
                        mode,
                        so_far,
                    )),
                    Observed::NotMeasured(why) => Some(Explaining::Tracing(
                        Box::new(session),
                        Err(why),
                        mode,
                        so_far,
                    )),
                    // Traced on, the run would explain nothing and say it had.
                    Observed::EventsLeftOff(why) => {
                        drop(session);
                        for phase in &mut plan.phases {
                            phase.request.feeds.clear();
                        }
                        notices.push(Notice::ExplainUnavailable {
                            reason: why.clone(),
                        });
                        Some(Explaining::Unavailable(Box::new(unavailable(mode, why))))
                    }
                }
            }
            Err(e) => {
                let reason = e.to_string();
                notices.push(Notice::ExplainUnavailable {
                    reason: reason.clone(),
                });
                Some(Explaining::Unavailable(Box::new(unavailable(mode, reason))))
            }
        }
    }

    /// Ends tracing and returns the Run's explanation, with notices for what it could
    /// not explain.
    pub fn finish(self, notices: &mut Vec<Notice>) -> Explain {
        let (session, observed, mode) = match self {
            Explaining::Unavailable(explain) => return *explain,
            Explaining::Tracing(session, observed, mode, _) => (session, observed, mode),
        };
        let finished = match session.finish() {
            Ok(finished) => finished,
            Err(e) => {
                let reason = e.to_string();
                notices.push(Notice::ExplainUnavailable {
                    reason: reason.clone(),
                });
                return unavailable(mode, reason);
            }
        };
        let mut explain = finished.explainer.into_explain(&finished.events);
        match observed {
            Ok(effect) => explain.observer = Some(effect),
            Err(why) => explain.limits.push(why),
        }
        explain.events = finished.events;
        explain.clock = Some(finished.clock);
        let mut limits = finished.limits;
        limits.append(&mut explain.limits);
        limits.extend(finished.problems);
        explain.limits = limits;
        explain.buffer_kb = Some(finished.buffer_kb);
        explain.reader = finished.reader;
        // Spikes the feeds could not take were never handed over.
        explain.spikes_seen += finished.spikes_dropped;
        explain.spikes_unexplained += finished.spikes_dropped;
        if explain.spikes_incomplete + explain.spikes_unexplained > 0 {
            notices.push(Notice::ExplainIncomplete {
                seen: explain.spikes_seen,
                incomplete: explain.spikes_incomplete,
                unexplained: explain.spikes_unexplained,
            });
        }
        explain
    }
}

/// Where a checkpoint gets the run's explanation as it stands.
#[derive(Clone)]
pub enum ExplainSource {
    /// Tracing: what is explained so far, with what tracing was measured to cost.
    Tracing {
        /// The explaining thread's copies.
        so_far: Arc<ExplainSoFar>,
        /// The cost of tracing, or why it was not measured.
        observed: Result<ObserverEffect, String>,
    },
    /// Asked for, but unavailable: the Run says why.
    Unavailable(Box<Explain>),
}

impl Explaining {
    /// Where checkpoints get the explanation so far.
    pub fn for_checkpoints(&self) -> ExplainSource {
        match self {
            Explaining::Unavailable(explain) => ExplainSource::Unavailable(explain.clone()),
            Explaining::Tracing(_, observed, _, so_far) => ExplainSource::Tracing {
                so_far: so_far.clone(),
                observed: observed.clone(),
            },
        }
    }
}

impl ExplainSource {
    /// The explanation as it stands now (waiting up to `wait` for the explaining
    /// thread); `None` before it made any.
    pub fn now(&self, wait: Duration) -> Option<Explain> {
        match self {
            ExplainSource::Unavailable(explain) => Some((**explain).clone()),
            ExplainSource::Tracing { so_far, observed } => {
                let mut explain = so_far.fresh(wait)?;
                match observed {
                    Ok(effect) => explain.observer = Some(effect.clone()),
                    Err(why) => explain.limits.push(why.clone()),
                }
                Some(explain)
            }
        }
    }
}

/// Spans of each side of the observer A/B, and its rounds (ABBA: two spans of each side
/// a round, 1 s in all).
const AB_SPAN: Duration = Duration::from_millis(250);
const AB_ROUNDS: usize = 2;

/// What the A/B of the events' cost came to.
enum Observed {
    Measured(ObserverEffect),
    /// The A/B could not measure; the events are on again.
    NotMeasured(String),
    /// The events could not be turned on again after it.
    EventsLeftOff(String),
}

/// Measures what the event set costs before the first phase: wake-up latency on the
/// first measured CPU at the first phase's policy and timer period, in spans with the
/// events off and on, and the events on again afterwards.
fn observe(plan: &RunPlan, session: &Session<RunExplainer>) -> Observed {
    let first = &plan.phases[0];
    let policy = first.request.policy;
    if let SchedSpec::Deadline { .. } = policy {
        return Observed::NotMeasured(
            "the cost of tracing was not measured: the A/B does not run under \
             SCHED_DEADLINE"
                .to_string(),
        );
    }
    let cpu = first.request.cpus.first().copied();
    let period = first.setup.period;
    let mut toggle = |on: bool| session.set_events(on);
    let effect = measure_ab(cpu, policy, period, AB_SPAN, AB_ROUNDS, &mut toggle);
    // The A/B ends with the events off, also when it failed.
    if let Err(e) = session.set_events(true) {
        return Observed::EventsLeftOff(format!(
            "the trace events could not be turned on again after measuring their cost ({e})"
        ));
    }
    match effect {
        Ok(effect) => Observed::Measured(effect),
        Err(e) => Observed::NotMeasured(format!("the cost of tracing was not measured: {e}")),
    }
}

/// The explanation of a run that could not trace.
fn unavailable(mode: ExplainMode, reason: String) -> Explain {
    Explain {
        unavailable: Some(reason),
        ..Explain::empty(mode)
    }
}

/// Adds to the break-trace event of a run the explanation of the sample that stopped
/// it: its largest parts, and where to read the rest.
pub fn annotate_breaktrace(run: &mut latlab_model::run::Run) {
    let Some(explain) = &run.explain else {
        return;
    };
    for event in run.events.iter_mut().filter(|e| e.kind == "breaktrace") {
        let found = explain.spikes.iter().enumerate().find(|(_, s)| {
            s.thread == event.thread
                && s.at_ns == event.at_ns
                && Some(s.latency_ns) == event.value_ns
        });
        let Some((rank, spike)) = found else {
            let why = match (&explain.unavailable, explain.spikes.is_empty()) {
                (Some(why), _) => format!("tracing was unavailable: {why}"),
                // Below --spike, it was never handed to the explainer.
                (None, true) => "it was not among the spikes explained".to_string(),
                (None, false) => "it was not explained: latlab explain lists why".to_string(),
            };
            event.message.push_str(&format!("; {why}"));
            continue;
        };
        let mut parts: Vec<(String, i64)> = Vec::new();
        for part in &spike.parts {
            let label = part.cause.label();
            match parts.iter_mut().find(|(l, _)| *l == label) {
                Some((_, d)) => *d += part.duration_ns.0,
                None => parts.push((label, part.duration_ns.0)),
            }
        }
        parts.sort_by_key(|(_, d)| std::cmp::Reverse(*d));
        let largest: Vec<String> = parts
            .iter()
            .take(3)
            .map(|(label, d)| format!("{label} {:.1} µs", *d as f64 / 1e3))
            .collect();
        event.message.push_str(&format!(
            "; what got in the way: {} (latlab explain RUN --spike {})",
            largest.join(", "),
            rank + 1
        ));
    }
}
