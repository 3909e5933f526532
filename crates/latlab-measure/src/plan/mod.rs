//! Flags and scenarios resolve into one validated plan: `latlab run` with flags, with a
//! built-in scenario, or with a scenario file all end here.
//!
//! The binary fills a [`RunInput`] (the options as the user wrote them, independent of
//! how they were parsed) and calls [`resolve`]; what comes back is checked and built —
//! probes included — so nothing can fail for a bad value once measuring has begun.
//! Each setting is taken from the flag if given, else from the scenario, else from the
//! default ([`Layered`]), and every error names where the value came from (`--period`,
//! or `osadl: timer.period`).
//!
//! The plan is resolved in steps, one file each: the scenario ([`scenarios`]), the
//! settings every probe shares ([`settings`]), the system setup ([`system`]), the loads
//! ([`loads`]), the phases and their probes ([`phases`]), the thresholds
//! ([`thresholds`]).

pub mod error;
pub mod layered;
pub mod loads;
pub mod phases;
pub mod scenarios;
pub mod settings;
pub mod system;
pub mod thresholds;

pub use error::ResolveError;
pub use layered::{Layered, Origin};

use crate::cpus::CpuInventory;
use crate::load::LoadSpec;
use crate::probe::catalogue::ProbeSpec;
use crate::probe::info::{Policies, ProbeSetup, Setting};
use crate::probe::{Probe, Site};
use crate::runner::{mapped_while_locked, PhaseFootprint, RunRequest};
use latlab_model::explain::ExplainMode;
use latlab_model::outcome::Shortfall;
use latlab_model::run::{CpuChoice, MemoryLockPlan, PlannedPhase, ProbePlan};
use latlab_model::scenario::Scenario;
use latlab_model::threshold::Threshold;
use latlab_model::Nanos;
use latlab_rt::memory::{LockRequest, LockScope};
use std::path::PathBuf;

/// The options of a run as the user gave them: text where the user wrote text, so that
/// every value is checked here, with its origin named in the error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunInput {
    /// A built-in scenario's name or a scenario file.
    pub scenario: Option<String>,
    /// `--cpus`.
    pub cpus: Option<String>,
    /// `--priority`.
    pub priority: Option<String>,
    /// `--period`.
    pub period: Option<String>,
    /// `--duration`.
    pub duration: Option<String>,
    /// `--method`.
    pub method: Option<String>,
    /// `--clock`.
    pub clock: Option<String>,
    /// `--warm-up`.
    pub warm_up: Option<String>,
    /// `--dma-latency`, in µs.
    pub dma_latency_us: i32,
    /// `--no-tune`: no `/dev/cpu_dma_latency` request.
    pub no_tune: bool,
    /// `--no-mlock`.
    pub no_mlock: bool,
    /// `--mlock-all`.
    pub mlock_all: bool,
    /// `--timer-slack`.
    pub timer_slack: Option<String>,
    /// `--hybrid-margin`.
    pub hybrid_margin: Option<String>,
    /// `--breaktrace`.
    pub breaktrace: Option<String>,
    /// `--spike`.
    pub spike: Option<String>,
    /// `--spike-nodes`.
    pub spike_nodes: usize,
    /// `--top`.
    pub top: Option<usize>,
    /// `--interval`.
    pub interval: Option<String>,
    /// `--max`.
    pub max: Option<String>,
    /// `--threshold METRIC=LIMIT`, each.
    pub thresholds: Vec<String>,
    /// The percentile flags (`--p99 50us`) as `p99=50us`.
    pub percentile_limits: Vec<String>,
    /// `--accept LIST`.
    pub accept: Option<String>,
    /// `--load`, each.
    pub loads: Vec<String>,
    /// `--probe`, each.
    pub probes: Vec<String>,
    /// `--load-cpus`.
    pub load_cpus: Option<String>,
    /// `--load-dir`.
    pub load_dir: Option<PathBuf>,
    /// `--explain[=MODE]`: the mode's text (empty for the bare flag).
    pub explain: Option<String>,
    /// `--no-telemetry`: no interrupt, softirq, ... counts beside the timeline.
    pub no_telemetry: bool,
}

/// A validated run.
#[derive(Debug)]
pub struct RunPlan {
    /// The scenario's name, when one was given.
    pub scenario: Option<String>,
    /// Phases, in order.
    pub phases: Vec<PhasePlan>,
    /// What memory is locked.
    pub memory_lock: MemoryLockPlan,
    /// `/dev/cpu_dma_latency` request (`None` = leave the system alone).
    pub dma_latency_us: Option<i32>,
    /// Limits to judge by.
    pub thresholds: Vec<Threshold>,
    /// What the run's gate lets through (`--accept`).
    pub accepted: Vec<Shortfall>,
    /// CPUs the loads run on.
    pub load_cpus: Vec<usize>,
    /// Where the loads' temporary directories go.
    pub load_dir: Option<PathBuf>,
    /// The trace events to explain spikes by (`--explain`), if asked.
    pub explain: Option<ExplainMode>,
    /// How the measured CPUs were chosen.
    pub cpu_choice: CpuChoice,
}

/// One phase: what the runner gets, the probe, the loads.
pub struct PhasePlan {
    /// What the runner gets (its `phase` is the phase's name).
    pub request: RunRequest,
    /// The probe measured, with its parameters.
    pub spec: ProbeSpec,
    /// What the probe was built from.
    pub setup: ProbeSetup,
    /// The probe, built once while planning.
    pub probe: Box<dyn Probe>,
    /// Loads during the phase.
    pub loads: Vec<LoadSpec>,
}

/// Where values come from: the flags, then the scenario (an empty one when none is
/// named).
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    /// The flags.
    pub input: &'a RunInput,
    /// The scenario.
    pub scenario: &'a Scenario,
}

impl Sources<'_> {
    /// The scenario's name, as errors name it.
    pub fn name(&self) -> &str {
        &self.scenario.name
    }
}

/// Turns the options (and the scenario they name) into a validated plan for the CPUs of
/// `cpus`.
pub fn resolve(input: &RunInput, cpus: &CpuInventory) -> Result<RunPlan, ResolveError> {
    let scenario = match &input.scenario {
        Some(name) => scenarios::load(name)?,
        None => scenarios::none(),
    };
    let sources = Sources {
        input,
        scenario: &scenario,
    };
    let explain = explain_mode(input)?;
    let shared = settings::resolve(&sources, cpus)?;
    let system = system::resolve(input, &scenario, cpus)?;
    let extra_loads = loads::from_flags(input)?;
    let phases = phases::resolve(&sources, &shared, &extra_loads)?;
    if let (Some(_), Some(phase)) = (
        explain,
        phases.iter().find(|p| p.probe.site() == Site::Elsewhere),
    ) {
        return Err(Origin::flag("--explain").invalid(format!(
            "the {} probe's samples are the kernel's own threads' wake-ups, which \
             --explain cannot follow: explain the timer probe's instead (latlab run \
             --explain), or use rtla's auto-analysis for the tracer's",
            phase.spec.info().name
        )));
    }
    let thresholds = thresholds::resolve(input, &scenario)?;
    let accepted = match &input.accept {
        Some(list) => {
            Shortfall::parse_list(list).map_err(|e| Origin::flag("--accept").invalid(e))?
        }
        None => Vec::new(),
    };
    loads::check(&phases, system.load_dir.as_deref())?;
    Ok(RunPlan {
        scenario: input.scenario.as_ref().map(|_| scenario.name.clone()),
        phases,
        memory_lock: system.memory_lock,
        dma_latency_us: system.dma_latency_us,
        thresholds,
        accepted,
        load_cpus: system.load_cpus,
        load_dir: system.load_dir,
        explain,
        cpu_choice: shared.cpu_choice,
    })
}

/// The spike threshold `--explain` uses when no `--spike` is given: every sample above
/// it is explained.
pub const EXPLAIN_SPIKE_DEFAULT: Nanos = Nanos(100_000);

/// `--explain` and `--explain=deep`.
fn explain_mode(input: &RunInput) -> Result<Option<ExplainMode>, ResolveError> {
    let Some(text) = input.explain.as_deref() else {
        return Ok(None);
    };
    ExplainMode::parse(text).map(Some).ok_or_else(|| {
        Origin::flag("--explain").invalid(format!(
            "'{text}' is not an event set: use --explain (the default set) or --explain=deep"
        ))
    })
}

impl PhasePlan {
    /// The probe of this phase as the Run's plan records it.
    pub fn probe_plan(&self) -> ProbePlan {
        self.spec.info().plan_of(&self.setup)
    }

    /// The phase as the Run's plan records it.
    pub fn planned(&self) -> PlannedPhase {
        PlannedPhase {
            name: self.request.phase.clone(),
            duration_ns: self.request.duration,
            warm_up_ns: self.request.warm_up,
            cpus: self.request.cpus.clone(),
        }
    }

    /// What the phase runs, to size the memory lock.
    pub fn footprint(&self) -> PhaseFootprint {
        PhaseFootprint {
            measuring_threads: self.request.cpus.len(),
            spikes_kept: match self.setup.spike_threshold {
                Some(_) => self.setup.spike_capacity,
                None => 0,
            },
            top_spikes: self.setup.top_spikes,
            // Only a probe that starts partner tasks is kept off SCHED_DEADLINE.
            partners: (self.spec.info().policies)(&self.setup.params) != Policies::Any,
            loads: self.loads.len(),
        }
    }

    /// What the phase measures, for the live display's banner.
    pub fn describe(&self) -> String {
        match self.spec.info().honours(Setting::Period) {
            true => format!("{} probe, period {}", self.spec, self.setup.period),
            // Its cycle, if any, is its parameters' (noise, osnoise).
            false => format!("{} probe", self.spec),
        }
    }
}

impl std::fmt::Debug for PhasePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhasePlan")
            .field("request", &self.request)
            .field("spec", &self.spec)
            .field("setup", &self.setup)
            .field("loads", &self.loads)
            .finish_non_exhaustive()
    }
}

impl RunPlan {
    /// The memory lock scope for the runner.
    pub fn lock_scope(&self) -> Option<LockScope> {
        match self.memory_lock {
            MemoryLockPlan::Touched => Some(LockScope::Touched),
            MemoryLockPlan::All => Some(LockScope::All),
            MemoryLockPlan::None => None,
        }
    }

    /// The memory lock to take for the whole run: its scope, and what the run maps
    /// while holding it, so that a limit too small for that is never asked to hold it.
    pub fn lock_request(&self) -> Option<LockRequest> {
        let mapped_later = mapped_while_locked(self.phases.iter().map(PhasePlan::footprint));
        self.lock_scope().map(|scope| LockRequest {
            scope,
            mapped_later,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::spec::SchedSpec;
    use latlab_model::units::Nanos;

    /// A run with these flags on CPUs 0 and 1.
    pub(super) fn input() -> RunInput {
        RunInput {
            spike_nodes: 1024,
            ..RunInput::default()
        }
    }

    #[test]
    fn defaults_are_every_cpu_fifo_95_one_ms_thirty_s() {
        let p = resolve(&input(), &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(p.phases[0].request.cpus, vec![0, 1]);
        assert_eq!(p.phases[0].request.policy, SchedSpec::Fifo { priority: 95 });
        assert_eq!(p.phases[0].setup.period, Nanos::MILLISECOND);
        assert_eq!(p.phases[0].request.duration, Some(Nanos::from_secs(30)));
        assert_eq!(p.phases[0].spec.to_string(), "timer:method=abs");
        assert_eq!(p.dma_latency_us, Some(0));
        assert_eq!(p.phases[0].request.phase, "main");
        assert_eq!(p.memory_lock, MemoryLockPlan::Touched);
        assert_eq!(p.lock_scope(), Some(LockScope::Touched));
        assert_eq!(p.scenario, None);
    }

    #[test]
    fn explain_defaults_the_spike_threshold_and_names_its_modes() {
        let p = resolve(&input(), &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!((p.explain, p.phases[0].setup.spike_threshold), (None, None));
        let with = |mode: &str, spike: Option<&str>| RunInput {
            explain: Some(mode.to_string()),
            spike: spike.map(str::to_string),
            ..input()
        };
        let p = resolve(&with("default", None), &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(p.explain, Some(ExplainMode::Default));
        assert_eq!(
            p.phases[0].setup.spike_threshold,
            Some(EXPLAIN_SPIKE_DEFAULT)
        );
        let p = resolve(&with("deep", Some("250us")), &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(p.explain, Some(ExplainMode::Deep));
        assert_eq!(p.phases[0].setup.spike_threshold, Some(Nanos(250_000)));
        let e = resolve(&with("full", None), &CpuInventory::plain(&[0, 1]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--explain") && e.contains("deep"), "{e}");
    }

    #[test]
    fn flags_override_a_scenarios_values() {
        let run = RunInput {
            scenario: Some("osadl".to_string()),
            duration: Some("2s".to_string()),
            period: Some("1ms".to_string()),
            ..input()
        };
        let p = resolve(&run, &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(p.scenario.as_deref(), Some("osadl"));
        let names: Vec<&str> = p
            .phases
            .iter()
            .map(|ph| ph.request.phase.as_str())
            .collect();
        assert_eq!(names, ["idle", "load"]);
        for ph in &p.phases {
            assert_eq!(ph.request.duration, Some(Nanos::from_secs(2)));
            assert_eq!(ph.setup.period, Nanos::MILLISECOND);
        }
        assert_eq!(p.phases[1].loads.len(), 2);
        let osadl = RunInput {
            scenario: Some("osadl".to_string()),
            ..input()
        };
        let p = resolve(&osadl, &CpuInventory::plain(&[0, 1])).unwrap();
        assert_eq!(p.phases[0].setup.period, Nanos(200_000));
        assert_eq!(p.phases[0].request.duration, Some(Nanos::from_secs(30)));
        assert_eq!(p.phases[1].request.duration, Some(Nanos::from_secs(60)));
    }

    #[test]
    fn every_built_in_scenario_resolves() {
        for (name, _) in scenarios::BUILT_IN {
            let run = RunInput {
                scenario: Some(name.to_string()),
                ..input()
            };
            let plan = resolve(&run, &CpuInventory::plain(&[0, 1]));
            assert!(plan.is_ok(), "{name}: {:?}", plan.err());
        }
    }
}
