//! `latlab run`: resolve the plan, measure phase by phase under its loads, judge,
//! keep, report.

use crate::cli::RunArgs;
use crate::cmd::explaining::Explaining;
use crate::cmd::journal::{self, CurrentPhase, Journal, Targets};
use crate::display::LiveDisplay;
use crate::error::CliError;
use crate::keep::keep;
use crate::labels::Labels;
use crate::listen::{Listener, LiveCauses, StreamId};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_measure::breaktrace::Tripwire;
use latlab_measure::check::{self, CheckContext};
use latlab_measure::checkpoint::PhaseCheckpoint;
use latlab_measure::cpus::CpuInventory;
use latlab_measure::facts::FactReader;
use latlab_measure::live::LiveStats;
use latlab_measure::load::running::{sweep_stale_dirs, RunningLoad};
use latlab_measure::load::LoadError;
use latlab_measure::notice::Notice;
use latlab_measure::plan::{self, PhasePlan, RunPlan};
use latlab_measure::runner::{self, RunError, RunObserver, SystemSetup};
use latlab_model::audit::Audit;
use latlab_model::run::{
    Conditions, Event, HostFacts, LoadRecord, Phase, Plan, Run, Stream, Tool, SCHEMA,
};
use latlab_model::spec::SchedSpec;
use latlab_model::stamp::{rfc3339, run_id};
use latlab_model::threshold::Verdict;
use latlab_rt::trace::BreakTrace;
use latlab_store::RunStore;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What the phases measured, gathered for the Run.
#[derive(Default)]
struct Measured {
    phases: Vec<Phase>,
    streams: Vec<Stream>,
    events: Vec<Event>,
    notices: Vec<Notice>,
    conditions: Conditions,
    started_at: Option<SystemTime>,
    ended_at: Option<SystemTime>,
    interrupted: bool,
    /// A phase could not measure, or a measuring thread failed: exit code 3.
    failed: bool,
}

/// Runs `latlab run`.
pub fn execute(args: &RunArgs) -> Result<u8, CliError> {
    let cpus = CpuInventory::of_this_process();
    if cpus.usable.is_empty() {
        return Err(CliError::runtime(
            "cannot read the CPUs this process may use (/sys/devices/system/cpu/online, \
             its affinity)",
        ));
    }
    let mut plan = plan::resolve(&args.input(), &cpus).map_err(CliError::config)?;
    let labels = Labels::from_args(&args.labels)?;
    let checkpoint_every = checkpoint_interval(&args.checkpoint)?;
    let store_location = match args.no_store {
        true => None,
        false => Some(StoreLocation::resolve(args.store.as_ref())?),
    };
    sweep_leftovers(&plan);
    let (mut json, human) =
        crate::store::open_run_json(args.json.as_deref(), store_location.as_ref())?;
    let mut store = store_location
        .as_ref()
        .map(crate::store::open_for_run)
        .transpose()?;
    if let Some(store) = &store {
        labels.check_name_is_free(&**store)?;
    }
    // Where the store is when the journal did not take it.
    let mut store_after: Option<Box<dyn RunStore + Send>> = None;

    let stop = crate::stop::flag_on(&crate::stop::ENDING)?;

    let host = FactReader::system().gather();
    // The run's id is stamped now: the store holds the run from its start, and the
    // live series carry the kept run's id.
    let id = run_id(SystemTime::now());
    // Bound before anything is measured: a port in use is an error, not a lost run.
    let listening = match &args.listen {
        Some(addr) => Some(Listener::start(addr, args.listen_any, &id, &host.hostname)?),
        None => None,
    };
    // The configuration judged for every CPU any phase measures, at the first phase's
    // policy (scenarios keep one policy).
    let audit = (!args.no_audit).then(|| {
        let cpus: Vec<usize> = plan
            .phases
            .iter()
            .flat_map(|p| p.request.cpus.clone())
            .collect();
        let policy = plan.phases[0].setup.policy;
        check::audit(&CheckContext::new(
            FactReader::system(),
            Some(&cpus),
            check::priority_of(&policy),
        ))
    });
    let setup = SystemSetup::apply(plan.lock_request(), plan.dma_latency_us);
    let mut measured = Measured::default();
    // Started before the phases, ended after them: its tracefs instance goes on every
    // way out of here, the signals above included (they end the run in order).
    // With --listen too, the endpoint shows the catalogue of causes as it grows.
    let live_causes = match (&listening, plan.explain) {
        (Some(listener), Some(_)) => {
            let causes = LiveCauses::default();
            listener.show_causes(causes.clone());
            Some(causes)
        }
        _ => None,
    };
    let explaining = Explaining::start(&mut plan, &mut measured.notices, live_causes);
    // The run as it starts, kept in the store (and the --json file) at once and
    // extended at every checkpoint.
    let journal = match checkpoint_every {
        Some(every) => {
            let mut base = assemble(
                &plan,
                host.clone(),
                audit.clone(),
                Measured::default(),
                false,
            );
            base.id = id.clone();
            base.conditions = None; // known once the first phase has set up
            labels.apply(&mut base);
            base.progress = Some(journal::starting(every));
            let mut begun = None;
            if let Some(mut store) = store.take() {
                match store.save(&base) {
                    Ok(()) => begun = Some(store),
                    Err(e) => {
                        eprintln!(
                            "latlab: warning: the run cannot be kept in the store from its \
                             start ({e}); it is saved when it ends"
                        );
                        store_after = Some(store);
                    }
                }
            }
            let json_file = match &json {
                Some(OutputTarget::File { path, .. }) => Some(path.clone()),
                _ => None,
            };
            let begun_in_store = begun.is_some();
            let housekeeping = latlab_rt::affinity::allowed_cpus()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !plan.phases.iter().any(|p| p.request.cpus.contains(c)))
                .collect();
            (begun_in_store || json_file.is_some()).then(|| {
                Journal::start(
                    base,
                    Targets {
                        store: begun,
                        json: json_file,
                    },
                    every,
                    housekeeping,
                    explaining.as_ref().map(Explaining::for_checkpoints),
                )
            })
        }
        None => None,
    };
    let wires: Vec<&Arc<Tripwire>> = plan
        .phases
        .iter()
        .filter_map(|p| p.request.breaktrace.as_ref())
        .collect();
    let breaktrace = match !wires.is_empty() {
        true => match BreakTrace::open() {
            Ok(bt) => {
                let bt = Arc::new(bt);
                for wire in &wires {
                    wire.attach_trace(bt.clone());
                }
                Some(bt)
            }
            Err(e) => {
                measured.notices.push(Notice::BreakTraceUnavailable {
                    reason: e.to_string(),
                });
                None
            }
        },
        false => None,
    };
    for phase in &plan.phases {
        if stop.load(Ordering::Relaxed) || measured.interrupted || measured.failed {
            break;
        }
        let result = run_phase(
            &plan,
            phase,
            &setup,
            &stop,
            &Watchers {
                human,
                quiet: args.quiet,
                listener: listening.as_ref(),
                journal: journal.as_ref(),
            },
            &mut measured,
        );
        match result {
            Ok(()) => {}
            // Nothing measured yet: a plain error, and no run to keep.
            Err(e) if measured.phases.is_empty() => {
                if let Some(journal) = journal {
                    if let (Some(mut store), _) = journal.finish() {
                        let _ = store.remove(std::slice::from_ref(&id));
                    }
                }
                return Err(e);
            }
            // Keep what earlier phases measured; the run ends with exit code 3.
            Err(e) => {
                measured.notices.push(Notice::MeasuringFailed {
                    reason: format!("phase {}: {e}", phase.request.phase),
                });
                measured.failed = true;
            }
        }
    }
    let explain = explaining.map(|e| e.finish(&mut measured.notices));
    let breaktrace_armed = breaktrace.is_some();
    drop(wires);
    drop(breaktrace);
    drop(setup);
    drop(listening);
    // The last checkpoint is written before the run's final form replaces it.
    let mut begun = false;
    let mut checkpoints = None;
    if let Some(journal) = journal {
        let (journal_store, stats) = journal.finish();
        if let Some(journal_store) = journal_store {
            store = Some(journal_store);
            begun = true;
        }
        checkpoints = Some(stats);
    }
    if store.is_none() {
        store = store_after;
    }

    let mut run = assemble(&plan, host, audit, measured, breaktrace_armed);
    run.id = id;
    run.explain = explain;
    crate::cmd::explaining::annotate_breaktrace(&mut run);
    labels.apply(&mut run);
    // The exit code is settled first: no output problem may change a verdict. A
    // threshold that cannot be judged on what was measured is not a pass (2); a failure
    // to measure, kept in the Run as a warning, outranks the verdict (3).
    let mut code = run.exit_status().code();
    // Keep the run before anything else can go wrong.
    let kept = keep(&run, store.as_deref_mut(), json.as_mut(), begun);
    code = code.max(kept.code);
    // A reader that went away (a pager, `head`) is not an error; the verdict stands.
    output::ignore_closed(human.write(&crate::cmd::show::summary_for(&run, human)))?;
    if let Some(explain) = &run.explain {
        let next = match (&args.store, args.no_store) {
            (_, true) => "latlab explain reads runs from a store (this one was not kept: \
                          --no-store)"
                .to_string(),
            (Some(location), false) => format!("latlab explain last --store {location}"),
            (None, false) => "latlab explain last".to_string(),
        };
        let summary = crate::display::explain_summary(explain, &next, human);
        output::ignore_closed(human.write(&summary))?;
    }
    output::ignore_closed(human.write(&kept.said))?;
    if let Some(stats) = checkpoints {
        output::ignore_closed(human.write(&journal_summary(&stats)))?;
    }
    if !kept.errors.is_empty() {
        let _ = Human::Stderr.write(&kept.errors);
    }
    Ok(code)
}

/// Removes what latlab runs killed before they could clean up (SIGKILL, the OOM
/// killer, a power cut) left behind — load directories, SysV objects, tracefs
/// instances — and says what was removed (a half-written --json file goes as the
/// flag is opened). Only what processes that no longer run owned is touched.
fn sweep_leftovers(plan: &RunPlan) {
    let load_base = plan.load_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut removed: Vec<String> = sweep_stale_dirs(&load_base)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    removed.extend(latlab_rt::ipc::leftovers::sweep_stale());
    removed.extend(latlab_rt::tracefs::sweep_stale());
    // After the instances: the tracer of a killed run's instance stops with it.
    removed.extend(latlab_rt::tracefs::osnoise::sweep_stale());
    // The statistics pages of periodic tasks whose process was killed.
    removed.extend(
        latlab_rt::periodic::shm::sweep()
            .iter()
            .map(|p| p.display().to_string()),
    );
    output::say_removed(&removed);
}

/// Who watches a phase as it measures.
#[derive(Clone, Copy)]
struct Watchers<'a> {
    /// Where the live display goes.
    human: Human,
    /// No live display.
    quiet: bool,
    /// The live metrics endpoint (`--listen`).
    listener: Option<&'a Listener>,
    /// The checkpoint writer.
    journal: Option<&'a Journal>,
}

/// `--checkpoint`: the interval, `None` for 0 or `off`.
fn checkpoint_interval(text: &str) -> Result<Option<Duration>, CliError> {
    if text == "off" {
        return Ok(None);
    }
    let every = latlab_model::units::parse_duration(text).map_err(|e| {
        CliError::usage(
            "--checkpoint",
            format!("{e} (give an interval such as 10s or 1m, or off)"),
        )
    })?;
    match every.0 {
        0 => Ok(None),
        ns if ns < 1_000_000_000 => Err(CliError::usage(
            "--checkpoint",
            format!(
                "{text} is shorter than 1 s: each checkpoint writes and syncs the whole run; \
                 give 1s or more, or off"
            ),
        )),
        ns => Ok(Some(Duration::from_nanos(ns as u64))),
    }
}

/// One line on how the checkpoints went (nothing for a run shorter than the interval,
/// unless one failed).
fn journal_summary(stats: &journal::JournalStats) -> String {
    let mut line = match stats.written {
        0 => String::new(),
        n => {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            format!(
                "Checkpoints: {n} written; gathering {:.1} ms on average (slowest {:.1} ms), \
                 writing and syncing {:.1} ms on average (slowest {:.1} ms)\n",
                ms(stats.gather_total) / n as f64,
                ms(stats.gather_slowest),
                ms(stats.write_total) / n as f64,
                ms(stats.write_slowest),
            )
        }
    };
    if let Some(failure) = &stats.failure {
        line.push_str(&format!(
            "latlab: warning: a checkpoint could not be written: {failure}\n"
        ));
    }
    line
}

/// The live display, also telling the journal what a phase's set-up found (a refused
/// policy, memory not locked), so a checkpoint says it before the phase ends.
struct Observed<'a> {
    display: &'a mut LiveDisplay,
    journal: Option<&'a Journal>,
}

impl RunObserver for Observed<'_> {
    fn ready(&mut self, notices: &[Notice]) {
        if let Some(journal) = self.journal {
            let mut so_far = journal.so_far();
            for notice in notices {
                if !so_far.notices.contains(notice) {
                    so_far.notices.push(notice.clone());
                }
            }
        }
        self.display.ready(notices);
    }

    fn progress(&mut self, live: &[LiveStats], elapsed: Duration) {
        self.display.progress(live, elapsed);
    }

    fn refresh_every(&self) -> Duration {
        self.display.refresh_every()
    }
}

/// One phase: its loads started, the probe run, the loads stopped and recorded.
fn run_phase(
    plan: &RunPlan,
    phase: &PhasePlan,
    setup: &SystemSetup,
    stop: &AtomicBool,
    watchers: &Watchers,
    measured: &mut Measured,
) -> Result<(), CliError> {
    let Watchers {
        human,
        quiet,
        listener,
        journal,
    } = *watchers;
    let loads = Arc::new(Mutex::new(start_loads(plan, phase)?));
    let mut request = phase.request.clone();
    if let Some(journal) = journal {
        let checkpoint = PhaseCheckpoint::new(request.cpus.len());
        request.checkpoint = Some(checkpoint.clone());
        journal.so_far().current = Some(CurrentPhase {
            name: request.phase.clone(),
            started_at: SystemTime::now(),
            checkpoint,
            loads: loads.clone(),
        });
    }
    let live: Arc<Vec<LiveStats>> = Arc::new(
        phase
            .request
            .cpus
            .iter()
            .map(|_| LiveStats::default())
            .collect(),
    );
    if let Some(listener) = listener {
        listener.begin_phase(
            live.clone(),
            &stream_ids(phase, measured.streams.len()),
            &phase.request.phase,
            loads.clone(),
        );
    }
    let mut display = LiveDisplay::new(human, quiet, &phase.request, &phase.describe());
    // A display nobody can read any more (a closed pipe, a hung-up terminal) is no
    // reason to lose the measurement.
    display.start();
    let started = SystemTime::now();
    let outcome = runner::run_probe(
        &*phase.probe,
        &request,
        setup,
        stop,
        &live,
        &mut Observed {
            display: &mut display,
            journal,
        },
    );
    display.finish();
    if let Some(listener) = listener {
        listener.end_phase();
    }
    let loads = std::mem::take(&mut *loads.lock().unwrap_or_else(|e| e.into_inner()));
    let records: Vec<LoadRecord> = RunningLoad::stop_all(loads);
    let outcome = outcome.map_err(|e| match e {
        RunError::Config(m) => CliError::config(m),
        RunError::Runtime(m) => CliError::runtime(m),
    })?;
    for record in records.iter().filter(|r| r.ended != "stopped") {
        measured.notices.push(Notice::LoadEndedEarly {
            load: record.spec.clone(),
            how: record.ended.clone(),
        });
    }
    measured.phases.push(Phase {
        name: phase.request.phase.clone(),
        started_at: Some(rfc3339(started)),
        elapsed_ns: Some(outcome.measured),
        loads: records,
    });
    measured.started_at.get_or_insert(outcome.started_at);
    measured.ended_at = Some(outcome.ended_at);
    measured.interrupted |= outcome.interrupted;
    measured.failed |= outcome.failure.is_some();
    measured.conditions = outcome.conditions;
    measured.streams.extend(outcome.streams);
    measured.events.extend(outcome.events);
    for notice in outcome.notices {
        if !measured.notices.contains(&notice) {
            measured.notices.push(notice);
        }
    }
    if let Some(journal) = journal {
        // One step: a checkpoint sees the phase either running or finished.
        let mut so_far = journal.so_far();
        so_far.current = None;
        so_far.phases = measured.phases.clone();
        so_far.streams = measured.streams.clone();
        so_far.events = measured.events.clone();
        so_far.conditions = Some(measured.conditions.clone());
        for notice in &measured.notices {
            if !so_far.notices.contains(notice) {
                so_far.notices.push(notice.clone());
            }
        }
    }
    Ok(())
}

/// What identifies the streams a phase will measure, the first being the run's
/// `first`-th: one per CPU, pinned unless under SCHED_DEADLINE (as the runner places
/// them).
fn stream_ids(phase: &PhasePlan, first: usize) -> Vec<StreamId> {
    let pinned = !matches!(phase.request.policy, SchedSpec::Deadline { .. });
    let method = phase.setup.variant(phase.spec.info());
    phase
        .request
        .cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| StreamId {
            probe: phase.spec.name.clone(),
            method: Some(method.clone()),
            phase: phase.request.phase.clone(),
            index: first + i,
            cpu: pinned.then_some(cpu),
        })
        .collect()
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

/// Builds the Run from the plan and what was measured.
fn assemble(
    plan: &RunPlan,
    host: HostFacts,
    audit: Option<Audit>,
    measured: Measured,
    breaktrace_armed: bool,
) -> Run {
    let mut notices = measured.notices;
    // Degrading warnings first.
    notices.sort_by_key(|n| !n.degrades());
    let warnings: Vec<_> = notices.iter().map(Notice::to_warning).collect();
    let degraded = warnings.iter().any(|w| w.degrades);
    let verdict = Verdict::judge(&plan.thresholds, &measured.streams);
    let mut conditions = measured.conditions;
    conditions.breaktrace_armed = breaktrace_armed;
    let started = measured.started_at.unwrap_or_else(SystemTime::now);
    let ended = measured.ended_at.unwrap_or(started);
    let first = &plan.phases[0];
    Run {
        schema: SCHEMA.to_string(),
        id: run_id(started),
        tool: Tool {
            name: "latlab".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        },
        started_at: Some(rfc3339(started)),
        ended_at: Some(rfc3339(ended)),
        command_line: Some(
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        ),
        scenario: plan.scenario.clone(),
        name: None,
        tags: Default::default(),
        note: None,
        plan: Plan {
            duration_ns: first.request.duration,
            warm_up_ns: first.request.warm_up,
            cpus: first.request.cpus.clone(),
            cpu_choice: Some(plan.cpu_choice),
            probes: plan.phases.iter().map(PhasePlan::probe_plan).collect(),
            dma_latency_us: plan.dma_latency_us,
            memory_lock: Some(plan.memory_lock),
            phases: plan.phases.iter().map(PhasePlan::planned).collect(),
        },
        host: Some(host),
        audit,
        conditions: Some(conditions),
        degraded,
        interrupted: measured.interrupted,
        warnings,
        phases: measured.phases,
        streams: measured.streams,
        events: measured.events,
        thresholds: plan.thresholds.clone(),
        verdict,
        import: None,
        published: None,
        explain: None,
        progress: None,
    }
}
