//! Flags and scenarios resolve into one validated plan: `latlab run` with flags, with a
//! built-in scenario, or with a scenario file all end here.
//!
//! For each setting the value comes from the flag if given, else from the scenario,
//! else from the default; every error names where the value came from (`--period`, or
//! `osadl: timer.period`) and exits 2.

use crate::cli::RunArgs;
use crate::error::CliError;
use crate::scenarios;
use latlab_measure::breaktrace::Tripwire;
use latlab_measure::load::LoadSpec;
use latlab_measure::probe::catalogue::{self, ProbeSpec};
use latlab_measure::probe::info::{BuildError, PlanError, Policies, ProbeSetup, Setting};
use latlab_measure::probe::Probe;
use latlab_measure::runner::{mapped_while_locked, PhaseFootprint, RunRequest};
use latlab_model::run::{MemoryLockPlan, PlannedPhase, ProbePlan};
use latlab_model::scenario::{PhaseSection, Scenario};
use latlab_model::spec::{ClockName, CpuSelection, SchedSpec, TimerMethod};
use latlab_model::threshold::Threshold;
use latlab_model::units::{parse_duration, Nanos};
use latlab_rt::memory::{LockRequest, LockScope};
use std::path::PathBuf;
use std::sync::Arc;

/// Shortest period accepted: below it no timer method can keep up and the loop would
/// only count missed periods.
const MIN_PERIOD: Nanos = Nanos(1_000);
/// Longest period accepted.
const MAX_PERIOD: Nanos = Nanos(3_600_000_000_000);

/// A validated `latlab run`.
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
    /// Where the JSON goes.
    pub json: Option<PathBuf>,
    /// Where the run is stored (`None` = not stored).
    pub store: Option<PathBuf>,
    /// No live display.
    pub quiet: bool,
    /// CPUs the loads run on.
    pub load_cpus: Vec<usize>,
    /// Where the loads' temporary directories go.
    pub load_dir: Option<PathBuf>,
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
        format!("{} probe, period {}", self.spec, self.setup.period)
    }
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

/// Where a value comes from, for error messages.
struct Pick<'a> {
    value: Option<&'a str>,
    label: String,
}

/// The flag's value if given, else the scenario's, else `None`; labelled for errors.
fn pick<'a>(
    flag: &str,
    cli: Option<&'a str>,
    scenario: &str,
    key: &str,
    from_file: Option<&'a str>,
) -> Pick<'a> {
    match (cli, from_file) {
        (Some(v), _) => Pick {
            value: Some(v),
            label: flag.to_string(),
        },
        (None, Some(v)) => Pick {
            value: Some(v),
            label: format!("{scenario}: {key}"),
        },
        (None, None) => Pick {
            value: None,
            label: flag.to_string(),
        },
    }
}

fn duration_of(label: &str, text: &str) -> Result<Nanos, CliError> {
    parse_duration(text).map_err(|e| CliError::usage(label, e))
}

/// Turns flags (and the scenario they name) into a validated plan.
pub fn plan(args: &RunArgs, available_cpus: &[usize]) -> Result<RunPlan, CliError> {
    let scenario = match &args.scenario {
        Some(name) => Some(scenarios::load(name)?),
        None => None,
    };
    let empty = Scenario {
        name: String::new(),
        description: String::new(),
        cpus: None,
        load_cpus: None,
        duration: None,
        warm_up: None,
        timer: Default::default(),
        phases: vec![PhaseSection {
            name: "main".to_string(),
            ..Default::default()
        }],
        thresholds: Default::default(),
    };
    let s = scenario.as_ref().unwrap_or(&empty);
    let sn = s.name.as_str();
    let t = &s.timer;

    let cpus_pick = pick(
        "--cpus",
        args.cpus.as_deref(),
        sn,
        "cpus",
        s.cpus.as_deref(),
    );
    let cpus = CpuSelection::parse(cpus_pick.value.unwrap_or("all"))
        .and_then(|sel| sel.resolve(available_cpus))
        .map_err(|e| CliError::usage(&cpus_pick.label, e))?;
    if cpus.is_empty() {
        return Err(CliError::usage(&cpus_pick.label, "no CPU selected"));
    }
    let prio = pick(
        "--priority",
        args.priority.as_deref(),
        sn,
        "timer.priority",
        t.priority.as_deref(),
    );
    let policy = SchedSpec::parse(prio.value.unwrap_or("f:95"))
        .map_err(|e| CliError::usage(&prio.label, e))?;
    let clock_pick = pick(
        "--clock",
        args.clock.as_deref(),
        sn,
        "timer.clock",
        t.clock.as_deref(),
    );
    let clock = ClockName::parse(clock_pick.value.unwrap_or("monotonic"))
        .map_err(|e| CliError::usage(&clock_pick.label, e))?;
    let warm = pick(
        "--warm-up",
        args.warm_up.as_deref(),
        sn,
        "warm_up",
        s.warm_up.as_deref(),
    );
    let warm_up = duration_of(&warm.label, warm.value.unwrap_or("0"))?;
    let margin = pick(
        "--hybrid-margin",
        args.hybrid_margin.as_deref(),
        sn,
        "timer.hybrid_margin",
        t.hybrid_margin.as_deref(),
    );
    let hybrid_margin = duration_of(&margin.label, margin.value.unwrap_or("50us"))?;
    let optional_duration = |flag: &str, cli: Option<&str>, key: &str, file: Option<&str>| {
        let p = pick(flag, cli, sn, key, file);
        p.value.map(|v| duration_of(&p.label, v)).transpose()
    };
    let slack = pick(
        "--timer-slack",
        args.timer_slack.as_deref(),
        sn,
        "timer.timer_slack",
        t.timer_slack.as_deref(),
    );
    let timer_slack = slack
        .value
        .map(|v| duration_of(&slack.label, v))
        .transpose()?;
    let max_slack = Nanos(latlab_rt::slack::MAX_TIMER_SLACK_NS as i64);
    if timer_slack.is_some_and(|n| n > max_slack) {
        return Err(CliError::usage(
            &slack.label,
            format!("give at most {max_slack}: the kernel may delay every sleep by the slack"),
        ));
    }
    let timer_slack = timer_slack.map(|n| n.0 as u64);
    let breaktrace = optional_duration(
        "--breaktrace",
        args.breaktrace.as_deref(),
        "timer.breaktrace",
        t.breaktrace.as_deref(),
    )?;
    let spike = optional_duration(
        "--spike",
        args.spike.as_deref(),
        "timer.spike",
        t.spike.as_deref(),
    )?;
    let iv = pick(
        "--interval",
        args.interval.as_deref(),
        sn,
        "timer.interval",
        t.interval.as_deref(),
    );
    let interval = duration_of(&iv.label, iv.value.unwrap_or("1s"))?;
    if interval < Nanos::MILLISECOND {
        return Err(CliError::usage(
            &iv.label,
            "the timeline interval must be at least 1ms",
        ));
    }
    let top = args.top.or(t.top).unwrap_or(10);
    if top > 1_000 {
        return Err(CliError::usage(
            "--top",
            "keep at most 1000 spikes per thread",
        ));
    }
    if args.spike_nodes > 1_000_000 {
        return Err(CliError::usage(
            "--spike-nodes",
            "keep at most 1000000 spikes per thread",
        ));
    }
    if !(0..=1_000_000).contains(&args.dma_latency) {
        return Err(CliError::usage("--dma-latency", "give 0 to 1000000 µs"));
    }
    let memory_lock = match (args.no_mlock, args.mlock_all) {
        (true, _) => MemoryLockPlan::None,
        (false, true) => MemoryLockPlan::All,
        (false, false) => MemoryLockPlan::Touched,
    };
    let lc = pick(
        "--load-cpus",
        args.load_cpus.as_deref(),
        sn,
        "load_cpus",
        s.load_cpus.as_deref(),
    );
    let load_cpus = CpuSelection::parse(lc.value.unwrap_or("all"))
        .and_then(|sel| sel.resolve(available_cpus))
        .map_err(|e| CliError::usage(&lc.label, e))?;
    if let Some(dir) = &args.load_dir {
        if !dir.is_dir() {
            return Err(CliError::usage(
                "--load-dir",
                format!("{} is not a directory", dir.display()),
            ));
        }
    }
    let extra_loads = args
        .loads
        .iter()
        .map(|l| LoadSpec::parse(l).map_err(|e| CliError::usage("--load", e)))
        .collect::<Result<Vec<_>, _>>()?;

    let probe_flags = args
        .probes
        .iter()
        .map(|p| catalogue::parse(p).map_err(|e| CliError::usage("--probe", e)))
        .collect::<Result<Vec<_>, _>>()?;
    // Each --probe is a phase of its own, run with every phase section's settings.
    let mut sections: Vec<(PhaseSection, Option<(ProbeSpec, String)>)> = Vec::new();
    for section in &s.phases {
        if probe_flags.is_empty() {
            let spec = match &section.probe {
                None => None,
                Some(text) => Some((
                    catalogue::parse(text).map_err(|e| {
                        CliError::usage(&format!("{sn}: phase {}: probe", section.name), e)
                    })?,
                    format!("{sn}: phase {}: probe", section.name),
                )),
            };
            sections.push((section.clone(), spec));
            continue;
        }
        for spec in &probe_flags {
            let mut named = section.clone();
            named.name = match s.phases.len() {
                1 => spec.to_string(),
                _ => format!("{}/{spec}", section.name),
            };
            sections.push((named, Some((spec.clone(), "--probe".to_string()))));
        }
    }
    let mut phases = Vec::with_capacity(sections.len());
    for (section, spec) in &sections {
        let key = |k: &str| format!("phase {}: {k}", section.name);
        let m = match (&args.method, &section.method) {
            (Some(v), _) => pick("--method", Some(v), sn, "", None),
            (None, Some(v)) => pick("--method", None, sn, &key("method"), Some(v)),
            (None, None) => pick("--method", None, sn, "timer.method", t.method.as_deref()),
        };
        if let Some(text) = m.value {
            TimerMethod::parse(text).map_err(|e| CliError::usage(&m.label, e))?;
        }
        let p = match (&args.period, &section.period) {
            (Some(v), _) => pick("--period", Some(v), sn, "", None),
            (None, Some(v)) => pick("--period", None, sn, &key("period"), Some(v)),
            (None, None) => pick("--period", None, sn, "timer.period", t.period.as_deref()),
        };
        let period = duration_of(&p.label, p.value.unwrap_or("1ms"))?;
        if period < MIN_PERIOD {
            return Err(CliError::usage(
                &p.label,
                format!("{period} is too short: the shortest period is {MIN_PERIOD}"),
            ));
        }
        if period > MAX_PERIOD {
            return Err(CliError::usage(
                &p.label,
                format!("{period} is too long: the longest period is 1 h"),
            ));
        }
        let (duration_label, duration) = match (
            &args.duration,
            section.periods,
            &section.duration,
            &s.duration,
        ) {
            (Some(d), ..) => ("--duration".to_string(), duration_of("--duration", d)?),
            (None, Some(0), ..) => {
                return Err(CliError::usage(
                    &format!("{sn}: {}", key("periods")),
                    "give at least 1 period",
                ))
            }
            (None, Some(n), ..) => (key("periods"), Nanos(period.0.saturating_mul(n as i64))),
            (None, None, Some(d), _) => (
                key("duration"),
                duration_of(&format!("{sn}: {}", key("duration")), d)?,
            ),
            (None, None, None, Some(d)) => (
                "duration".to_string(),
                duration_of(&format!("{sn}: duration"), d)?,
            ),
            (None, None, None, None) => ("--duration".to_string(), Nanos::from_secs(30)),
        };
        let duration = (duration.0 != 0).then_some(duration);
        if let Some(d) = duration {
            if d < period {
                return Err(CliError::usage(
                    &duration_label,
                    format!("{d} is shorter than the period {period}: no sample would be taken; measure for at least one period"),
                ));
            }
        }
        let placements = match section.threads {
            None => cpus.clone(),
            Some(0) | Some(1025..) => {
                return Err(CliError::usage(
                    &format!("{sn}: {}", key("threads")),
                    "give 1 to 1024 threads",
                ))
            }
            Some(n) => (0..n).map(|i| cpus[i % cpus.len()]).collect(),
        };
        let mut loads = section
            .loads
            .iter()
            .map(|l| {
                LoadSpec::parse(l)
                    .map_err(|e| CliError::usage(&format!("{sn}: {}", key("loads")), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        loads.extend(extra_loads.iter().cloned());
        // Without a probe named, the phase measures the default one (the timer),
        // with the scenario's method.
        let (spec, spec_label, method) = match spec {
            Some((spec, label)) => (spec.clone(), label.clone(), args.method.as_deref()),
            None => (
                catalogue::parse(catalogue::CATALOGUE[0].name).map_err(CliError::config)?,
                "--probe".to_string(),
                m.value,
            ),
        };
        let info = spec.info();
        refuse_unhonoured(args, &spec)?;
        let mut params = spec.params.clone();
        if let (Some(method), true) = (method, info.honours(Setting::Method)) {
            // --method is short for the method parameter.
            params.insert("method".to_string(), method.to_string());
        }
        let spec = ProbeSpec { params, ..spec };
        let setup = ProbeSetup {
            params: spec.params.clone(),
            period,
            span: duration.map(|d| Nanos(d.0 + warm_up.0)),
            policy,
            allowed_cpus: available_cpus.to_vec(),
            clock,
            hybrid_margin,
            timer_slack,
            spike_threshold: spike,
            spike_capacity: args.spike_nodes,
            top_spikes: top,
            timeline_interval: interval,
            breaktrace: breaktrace.map(|limit| Arc::new(Tripwire::new(limit))),
        };
        let probe = info.prepare(&setup).map_err(|e| {
            let label = match &e {
                PlanError::Policy { .. } => &prio.label,
                PlanError::Build(BuildError::Setting { setting, .. }) => match setting {
                    Setting::Clock => &clock_pick.label,
                    Setting::HybridMargin => &margin.label,
                    Setting::Period => &p.label,
                    Setting::Method => &m.label,
                    Setting::Breaktrace => &spec_label,
                },
                PlanError::Build(_) => &spec_label,
            };
            CliError::usage(label, e)
        })?;
        phases.push(PhasePlan {
            request: RunRequest {
                cpus: placements,
                policy,
                timer_slack_ns: timer_slack,
                duration,
                warm_up,
                phase: section.name.clone(),
                breaktrace: setup.breaktrace.clone(),
            },
            spec,
            setup,
            probe,
            loads,
        });
    }

    let thresholds = thresholds_of(args, s)?;
    let plan = RunPlan {
        scenario: scenario.as_ref().map(|s| s.name.clone()),
        phases,
        memory_lock,
        dma_latency_us: (!args.no_tune).then_some(args.dma_latency),
        thresholds,
        json: args.json.clone(),
        store: (!args.no_store).then(|| {
            args.store
                .clone()
                .unwrap_or_else(latlab_store::default_path)
        }),
        quiet: args.quiet,
        load_cpus,
        load_dir: args.load_dir.clone(),
    };
    // Every load of every phase is checked now (its directory, parameters, free space),
    // so a later phase cannot fail to start after earlier ones have measured.
    let base = plan.load_dir.clone().unwrap_or_else(std::env::temp_dir);
    if plan.phases.iter().any(|p| !p.loads.is_empty()) {
        let label = match plan.load_dir {
            Some(_) => "--load-dir",
            None => "--load",
        };
        latlab_measure::load::check_dir(&base).map_err(|e| CliError::usage(label, e))?;
    }
    for phase in &plan.phases {
        for load in &phase.loads {
            load.load()
                .check(&load.params, &base)
                .map_err(|e| CliError::usage(&format!("--load {}", load.text), e))?;
        }
    }
    Ok(plan)
}

/// Refuses a flag given for a shared setting the phase's probe does not use: it would
/// be silently ignored.
fn refuse_unhonoured(args: &RunArgs, spec: &ProbeSpec) -> Result<(), CliError> {
    let info = spec.info();
    for setting in Setting::ALL {
        let given = match setting {
            Setting::Period => args.period.is_some(),
            Setting::Clock => args.clock.is_some(),
            Setting::Method => args.method.is_some(),
            Setting::HybridMargin => args.hybrid_margin.is_some(),
            Setting::Breaktrace => args.breaktrace.is_some(),
        };
        if given && !info.honours(setting) {
            let flag = setting.flag();
            let used: Vec<&str> = info.honours.iter().map(|s| s.flag()).collect();
            return Err(CliError::usage(
                flag,
                format!(
                    "probe {} does not use {flag}: leave it out, or measure with a probe \
                     that does (latlab probes --long); it uses {}",
                    info.name,
                    if used.is_empty() {
                        "none of the settings only some probes use".to_string()
                    } else {
                        used.join(", ")
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// The limits to judge by: the scenario's, with those the flags give replacing its
/// limit on the same metric. A metric limited twice in one place is refused: which of
/// the two was meant cannot be guessed.
fn thresholds_of(args: &RunArgs, s: &Scenario) -> Result<Vec<Threshold>, CliError> {
    let sn = s.name.as_str();
    let mut from_file: Vec<(String, Threshold)> = Vec::new();
    for (metric, limit) in &s.thresholds {
        let label = format!("{sn}: thresholds.{metric}");
        let threshold = Threshold::new(metric, limit).map_err(|e| CliError::usage(&label, e))?;
        from_file.push((label, threshold));
    }
    let mut from_flags: Vec<(String, Threshold)> = Vec::new();
    if let Some(max) = &args.max {
        let threshold = Threshold::new("max", max).map_err(|e| CliError::usage("--max", e))?;
        from_flags.push(("--max".to_string(), threshold));
    }
    for t in &args.percentile_limits {
        let flag = format!("--{}", t.split('=').next().unwrap_or("threshold"));
        let threshold = Threshold::parse(t).map_err(|e| CliError::usage(&flag, e))?;
        from_flags.push((flag, threshold));
    }
    for t in &args.thresholds {
        let threshold = Threshold::parse(t).map_err(|e| CliError::usage("--threshold", e))?;
        from_flags.push((format!("--threshold {t}"), threshold));
    }
    for given in [&from_file, &from_flags] {
        for (i, (label, threshold)) in given.iter().enumerate() {
            if let Some((first, _)) = given[..i]
                .iter()
                .find(|(_, t)| t.metric == threshold.metric)
            {
                return Err(CliError::usage(
                    label,
                    format!(
                        "{first} already limits {}: keep one of the two",
                        threshold.metric
                    ),
                ));
            }
        }
    }
    let mut thresholds: Vec<Threshold> = from_file
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| !from_flags.iter().any(|(_, f)| f.metric == t.metric))
        .collect();
    thresholds.extend(from_flags.into_iter().map(|(_, t)| t));
    Ok(thresholds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;
    use clap::Parser;

    fn plan_of(extra: &[&str]) -> Result<RunPlan, CliError> {
        let mut argv = vec!["latlab", "run"];
        argv.extend_from_slice(extra);
        let args = crate::cli::expand_percentile_flags(argv.iter().copied());
        let cli = crate::cli::Cli::try_parse_from(args).unwrap();
        match cli.command {
            crate::cli::Command::Run(r) => plan(&r, &[0, 1]),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_are_every_cpu_fifo_95_one_ms_thirty_s() {
        let p = plan_of(&[]).unwrap();
        assert_eq!(p.phases[0].request.cpus, vec![0, 1]);
        assert_eq!(p.phases[0].request.policy, SchedSpec::Fifo { priority: 95 });
        assert_eq!(p.phases[0].setup.period, Nanos::MILLISECOND);
        assert_eq!(p.phases[0].request.duration, Some(Nanos::from_secs(30)));
        assert_eq!(p.phases[0].spec.to_string(), "timer:method=abs");
        assert_eq!(p.dma_latency_us, Some(0));
        assert_eq!(p.phases[0].request.phase, "main");
        assert_eq!(p.memory_lock, MemoryLockPlan::Touched);
        assert_eq!(p.lock_scope(), Some(LockScope::Touched));
    }

    #[test]
    fn bad_values_name_their_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["-c", "7"], "--cpus: CPU 7"),
            (&["-p", "0"], "--period"),
            (&["-p", "100ns"], "--period"),
            (&["-p", "2h"], "--period"),
            (&["-d", "5 fortnights"], "--duration"),
            (&["-d", "1ms", "-p", "10ms"], "--duration"),
            (&["-P", "f:120"], "--priority"),
            (&["-P", "d:2ms:1ms"], "--priority"),
            (&["--method", "sleepy"], "--method"),
            (&["--max", "100"], "--max"),
            (&["--p99.9", "abc"], "--p99.9"),
            (
                &["--threshold", "foo=1ms"],
                "--threshold: unknown metric 'foo'",
            ),
            (&["--threshold", "p99=abc"], "--threshold: limit for p99"),
            (
                &["--threshold", "p99.9=80us", "--p99.9", "1ms"],
                "--threshold p99.9=80us: --p99.9 already limits p99.9",
            ),
            (
                &["--max", "1ms", "--threshold", "p100=2ms"],
                "--threshold p100=2ms: --max already limits max",
            ),
            (
                &["--method", "hybrid", "--hybrid-margin", "2ms"],
                "--hybrid-margin",
            ),
            (&["--method", "timerfd", "--clock", "tai"], "--clock"),
            (&["--top", "5000"], "--top"),
        ];
        for (args, flag) in cases {
            let e = plan_of(args).unwrap_err();
            assert_eq!(e.code, exit::USAGE, "{args:?}");
            assert!(e.message.starts_with(flag), "{args:?}: {}", e.message);
        }
    }

    #[test]
    fn zero_duration_means_until_stopped_and_no_tune_leaves_dma_alone() {
        let p = plan_of(&["-d", "0", "--no-tune"]).unwrap();
        assert_eq!(p.phases[0].request.duration, None);
        assert_eq!(p.dma_latency_us, None);
    }

    #[test]
    fn flags_override_a_scenarios_values_and_thresholds() {
        let p = plan_of(&["osadl", "-d", "2s", "-p", "1ms"]).unwrap();
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
        let p = plan_of(&["osadl"]).unwrap();
        assert_eq!(p.phases[0].setup.period, Nanos(200_000));
        assert_eq!(p.phases[0].request.duration, Some(Nanos::from_secs(30)));
        assert_eq!(p.phases[1].request.duration, Some(Nanos::from_secs(60)));
    }

    #[test]
    fn a_flag_replaces_the_scenarios_limit_on_the_same_metric() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            "name = \"s\"\ndescription = \"d\"\n[[phase]]\nname = \"x\"\n\
             [thresholds]\nmax = \"100us\"\n\"p99\" = \"20us\"\n",
        )
        .unwrap();
        let p = plan_of(&[file.to_str().unwrap(), "--max", "5ms"]).unwrap();
        let text: Vec<String> = p.thresholds.iter().map(|t| t.to_string()).collect();
        assert_eq!(text, vec!["p99 <= 20 µs", "max <= 5 ms"]);
    }

    #[test]
    fn a_scenario_limiting_one_metric_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            "name = \"s\"\ndescription = \"d\"\n[[phase]]\nname = \"x\"\n\
             [thresholds]\n\"p99.9\" = \"100us\"\n\"p99.90\" = \"20us\"\n",
        )
        .unwrap();
        let e = plan_of(&[file.to_str().unwrap()]).unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        assert!(e.message.contains("already limits p99.9"), "{}", e.message);
    }

    #[test]
    fn thresholds_from_every_spelling() {
        let p = plan_of(&[
            "--max",
            "100us",
            "--p99",
            "50us",
            "--threshold",
            "mean=20us",
        ])
        .unwrap();
        let text: Vec<String> = p.thresholds.iter().map(|t| t.to_string()).collect();
        assert_eq!(text, vec!["max <= 100 µs", "p99 <= 50 µs", "mean <= 20 µs"]);
    }
}
