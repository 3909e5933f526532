//! A run from its plan to its Run: the system set up, tracing started for `--explain`,
//! each phase measured under its loads with the sinks watching, everything it measured
//! gathered in one [`Ledger`], and the Run sealed from it.
//!
//! The binary resolves the plan, wires the sinks, keeps and prints the Run; what a Run
//! holds and how it is judged is decided here and in the model, nowhere else.

use crate::error::CliError;
use crate::explaining::{annotate_breaktrace, ExplainSource, Explaining};
use crate::ledger::{CurrentPhase, Ledger, SharedLoads};
use crate::listen::LiveCauses;
use crate::output;
use crate::sink::{PhaseStart, Sink, Sinks};
use latlab_measure::breaktrace::Tripwire;
use latlab_measure::checkpoint::PhaseCheckpoint;
use latlab_measure::live::LiveStats;
use latlab_measure::load::running::{sweep_stale_dirs, RunningLoad};
use latlab_measure::load::LoadError;
use latlab_measure::notice::Notice;
use latlab_measure::plan::{PhasePlan, RunPlan};
use latlab_measure::runner::{self, RunError, SystemSetup};
use latlab_model::audit::Audit;
use latlab_model::run::{HostFacts, LoadRecord, Phase, Plan, Run, Tool};
use latlab_model::stamp::rfc3339;
use latlab_rt::trace::BreakTrace;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// One run being measured.
pub struct Session {
    plan: RunPlan,
    base: Run,
    ledger: Arc<Ledger>,
    setup: Option<SystemSetup>,
    explaining: Option<Explaining>,
    breaktrace: Option<Arc<BreakTrace>>,
}

impl Session {
    /// The Run of `plan` as it starts: its plan, the host, the audit, nothing measured
    /// yet; `id` is the run's from its start (the store holds it from then, `--listen`
    /// labels its series with it).
    pub fn base_run(plan: &RunPlan, host: HostFacts, audit: Option<Audit>, id: String) -> Run {
        let first = &plan.phases[0];
        let now = rfc3339(SystemTime::now());
        let mut run = Run::new(Tool::latlab());
        run.id = id;
        run.started_at = Some(now.clone());
        run.ended_at = Some(now);
        run.command_line = Some(
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        );
        // Saved as the run starts, before it is sealed: no password from the start.
        run.redact_command_line();
        run.scenario = plan.scenario.clone();
        run.plan = Plan {
            duration_ns: first.request.duration,
            warm_up_ns: first.request.warm_up,
            cpus: first.request.cpus.clone(),
            cpu_choice: Some(plan.cpu_choice),
            probes: plan.phases.iter().map(PhasePlan::probe_plan).collect(),
            dma_latency_us: plan.dma_latency_us,
            memory_lock: Some(plan.memory_lock),
            phases: plan.phases.iter().map(PhasePlan::planned).collect(),
        };
        run.host = Some(host);
        run.audit = audit;
        run.thresholds = plan.thresholds.clone();
        run.accepted = plan.accepted.clone();
        run.seal();
        run
    }

    /// Starts the run: the system set up as the plan asks (memory locked, the DMA
    /// latency held), tracing started when it explains (its catalogue published to
    /// `live_causes` as it grows), the break-trace armed. What cannot be had is a
    /// warning of the Run, not an error. `base` is [`Session::base_run`]'s, labelled.
    pub fn start(mut plan: RunPlan, base: Run, live_causes: Option<LiveCauses>) -> Session {
        let ledger = Arc::new(Ledger::default());
        let setup = SystemSetup::apply(plan.lock_request(), plan.dma_latency_us);
        // Started before the phases, ended after them: its tracefs instance goes on
        // every way out, the stop signals included (they end the run in order).
        let explaining = {
            let mut notices = Vec::new();
            let explaining = Explaining::start(&mut plan, &mut notices, live_causes);
            let mut measured = ledger.lock();
            notices.into_iter().for_each(|n| measured.note(n));
            explaining
        };
        let wires: Vec<&Arc<Tripwire>> = plan
            .phases
            .iter()
            .filter_map(|p| p.request.breaktrace.as_ref())
            .collect();
        let breaktrace = match wires.is_empty() {
            true => None,
            false => match BreakTrace::open() {
                Ok(bt) => {
                    let bt = Arc::new(bt);
                    for wire in &wires {
                        wire.attach_trace(bt.clone());
                    }
                    Some(bt)
                }
                Err(e) => {
                    ledger.lock().note(Notice::BreakTraceUnavailable {
                        reason: e.to_string(),
                    });
                    None
                }
            },
        };
        ledger.lock().breaktrace_armed = breaktrace.is_some();
        Session {
            plan,
            base,
            ledger,
            setup: Some(setup),
            explaining,
            breaktrace,
        }
    }

    /// The run as it started.
    pub fn base(&self) -> &Run {
        &self.base
    }

    /// What is measured so far, for a checkpoint writer.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.ledger.clone()
    }

    /// Where a checkpoint gets the explanation so far, when the run explains.
    pub fn explain_source(&self) -> Option<ExplainSource> {
        self.explaining.as_ref().map(Explaining::for_checkpoints)
    }

    /// The CPUs no phase measures: where helpers (the checkpoint writer) go.
    pub fn housekeeping_cpus(&self) -> Vec<usize> {
        latlab_rt::affinity::allowed_cpus()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !self.plan.phases.iter().any(|p| p.request.cpus.contains(c)))
            .collect()
    }

    /// Measures the phases in order until all are done, `stop` is set, one is
    /// interrupted or one fails. An error only when nothing was measured: there is no
    /// Run to keep then. A later phase that fails keeps what the earlier ones measured,
    /// with a warning (exit code 3).
    pub fn measure(
        &mut self,
        stop: &AtomicBool,
        sinks: &mut [&mut dyn Sink],
    ) -> Result<(), CliError> {
        let mut sinks = Sinks { sinks };
        let setup = self.setup.as_ref().expect("set up until finished");
        for phase in &self.plan.phases {
            {
                let mut m = self.ledger.lock();
                // Asked to stop before this phase began (during set-up, or between
                // phases): the run measured less than asked, as if stopped within it.
                m.interrupted |= stop.load(Ordering::Relaxed);
                if m.interrupted || m.failed {
                    break;
                }
            }
            match run_phase(&self.plan, phase, setup, stop, &mut sinks, &self.ledger) {
                Ok(()) => {}
                Err(e) if self.ledger.lock().phases.is_empty() => return Err(e),
                Err(e) => {
                    let mut m = self.ledger.lock();
                    m.note(Notice::MeasuringFailed {
                        reason: format!("phase {}: {e}", phase.request.phase),
                    });
                    m.failed = true;
                }
            }
        }
        Ok(())
    }

    /// Ends the run — tracing stopped and its explanation made, the system set back —
    /// and returns its Run, sealed.
    pub fn finish(mut self) -> Run {
        let explain = self.explaining.take().map(|e| {
            let mut notices = Vec::new();
            let explain = e.finish(&mut notices);
            let mut m = self.ledger.lock();
            notices.into_iter().for_each(|n| m.note(n));
            explain
        });
        // The tripwires hold the trace too; it closes with the plan.
        drop(self.breaktrace.take());
        drop(self.setup.take());
        let mut run = self.ledger.seal(self.base.clone());
        run.explain = explain;
        annotate_breaktrace(&mut run);
        run
    }
}

/// Removes what latlab runs killed before they could clean up (SIGKILL, the OOM
/// killer, a power cut) left behind — processes their loads started, load
/// directories, SysV objects, tracefs instances, `tracing_on` turned on by
/// `--breaktrace`, the pages of periodic tasks — and says what was removed. Only what
/// processes that no longer run owned is touched.
pub fn sweep_leftovers(plan: &RunPlan) {
    let load_base = plan.load_dir.clone().unwrap_or_else(std::env::temp_dir);
    // The processes first: a load's command may still write in its directory.
    let mut removed = latlab_rt::process::end_orphaned_loads();
    removed.extend(
        sweep_stale_dirs(&load_base)
            .iter()
            .map(|p| p.display().to_string()),
    );
    removed.extend(latlab_rt::trace::sweep_tracing_on());
    removed.extend(latlab_rt::ipc::leftovers::sweep_stale());
    removed.extend(latlab_rt::tracefs::sweep_stale());
    // After the instances: the tracer of a killed run's instance stops with it.
    removed.extend(latlab_rt::tracefs::osnoise::sweep_stale());
    removed.extend(
        latlab_rt::periodic::shm::sweep()
            .iter()
            .map(|p| p.display().to_string()),
    );
    output::say_removed(&removed);
}

/// One phase: its loads started, the probe run with the sinks watching, the loads
/// stopped and recorded, all of it entered in the ledger.
fn run_phase(
    plan: &RunPlan,
    phase: &PhasePlan,
    setup: &SystemSetup,
    stop: &AtomicBool,
    sinks: &mut Sinks<'_, '_>,
    ledger: &Ledger,
) -> Result<(), CliError> {
    let loads: SharedLoads = Arc::new(Mutex::new(start_loads(plan, phase)?));
    let mut request = phase.request.clone();
    let checkpoint = sinks
        .wants_checkpoints()
        .then(|| PhaseCheckpoint::new(request.cpus.len()));
    request.checkpoint = checkpoint.clone();
    // One start for the phase and, for the first, the run: a checkpoint and the final
    // Run give the same.
    let started = SystemTime::now();
    let first_stream = {
        let mut m = ledger.lock();
        m.current = Some(CurrentPhase {
            name: request.phase.clone(),
            started_at: started,
            checkpoint,
            loads: loads.clone(),
        });
        m.started_at.get_or_insert(started);
        m.streams.len()
    };
    let live: Arc<Vec<LiveStats>> =
        Arc::new(request.cpus.iter().map(|_| LiveStats::default()).collect());
    sinks.phase_begins(&PhaseStart {
        phase,
        live: &live,
        first_stream,
        loads: &loads,
    });
    let outcome = {
        let mut observer = Recording {
            sinks: &mut *sinks,
            ledger,
        };
        runner::run_probe(&*phase.probe, &request, setup, stop, &live, &mut observer)
    };
    sinks.phase_ends();
    let running = std::mem::take(&mut *loads.lock().unwrap_or_else(|e| e.into_inner()));
    let records: Vec<LoadRecord> = RunningLoad::stop_all(running);
    let mut m = ledger.lock();
    m.current = None;
    let outcome = outcome.map_err(|e| match e {
        RunError::Config(m) => CliError::config(m),
        RunError::Runtime(m) => CliError::runtime(m),
    })?;
    for record in records.iter().filter(|r| r.ended != "stopped") {
        m.note(Notice::LoadEndedEarly {
            load: record.spec.clone(),
            how: record.ended.clone(),
        });
    }
    // One step under the lock: a checkpoint sees the phase either running or finished.
    m.phases.push(Phase {
        name: phase.request.phase.clone(),
        started_at: Some(rfc3339(started)),
        elapsed_ns: Some(outcome.measured),
        loads: records,
    });
    m.ended_at = Some(outcome.ended_at);
    m.interrupted |= outcome.interrupted;
    m.failed |= outcome.failure.is_some();
    m.conditions = Some(outcome.conditions);
    m.streams.extend(outcome.streams);
    m.events.extend(outcome.events);
    if let Some(sampled) = outcome.telemetry {
        sampled.add_to(&mut m.telemetry);
    }
    for notice in outcome.notices {
        m.note(notice);
    }
    Ok(())
}

/// The sinks, with what the set-up found entered in the ledger at once (a checkpoint
/// says it before the phase ends).
struct Recording<'s, 'a, 'b> {
    sinks: &'s mut Sinks<'a, 'b>,
    ledger: &'s Ledger,
}

impl runner::RunObserver for Recording<'_, '_, '_> {
    fn ready(&mut self, notices: &[Notice]) {
        {
            let mut m = self.ledger.lock();
            for notice in notices {
                m.note(notice.clone());
            }
        }
        self.sinks.ready(notices);
    }

    fn progress(&mut self, live: &[LiveStats], elapsed: std::time::Duration) {
        self.sinks.progress(live, elapsed);
    }

    fn refresh_every(&self) -> std::time::Duration {
        self.sinks.refresh_every()
    }
}

/// Starts every load of a phase and waits until each is running; any that cannot
/// start ends the run before measuring (the ones already started are stopped).
fn start_loads(plan: &RunPlan, phase: &PhasePlan) -> Result<Vec<RunningLoad>, CliError> {
    if phase.loads.is_empty() {
        return Ok(Vec::new());
    }
    // Descendants of a load that outlive their parent can then still be reaped.
    let _ = latlab_rt::process::become_subreaper();
    // The running image itself, even if the file was replaced since latlab started.
    let exe = std::path::PathBuf::from("/proc/self/exe");
    let mut running = Vec::with_capacity(phase.loads.len());
    for spec in &phase.loads {
        match RunningLoad::start(spec, &plan.load_cpus, plan.load_dir.as_deref(), &exe) {
            Ok(load) => running.push(load),
            Err(LoadError::Failed(m)) => return Err(CliError::runtime(m)),
            Err(e) => return Err(CliError::usage("--load", e)),
        }
    }
    Ok(running)
}

#[cfg(test)]
mod tests;
