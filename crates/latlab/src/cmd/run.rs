//! `latlab run`: validate the flags into a plan, measure, judge, keep, report.

use crate::cli::RunArgs;
use crate::display::LiveDisplay;
use crate::error::{exit, CliError};
use crate::json_out::JsonTarget;
use crate::output::{self, Human};
use crate::summary;
use latlab_measure::facts::FactReader;
use latlab_measure::live::LiveStats;
use latlab_measure::load::running::RunningLoad;
use latlab_measure::load::{LoadError, LoadSpec};
use latlab_measure::notice::Notice;
use latlab_measure::probe::timer::TimerProbe;
use latlab_measure::runner::{self, RunError, RunOutcome, RunRequest, SystemSetup};
use latlab_model::run::{
    LoadRecord, MemoryLockPlan, Phase, Plan, ProbePlan, Run, TimerSettings, Tool, SCHEMA,
};
use latlab_model::spec::{ClockName, CpuSelection, SchedSpec, TimerMethod};
use latlab_model::threshold::{Status, Threshold, Verdict};
use latlab_model::units::{parse_duration, Nanos};
use latlab_rt::memory::LockScope;
use latlab_rt::trace::BreakTrace;
use latlab_store::{RunStore, SqliteStore};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// Shortest period accepted: below it no timer method can keep up and the loop would
/// only count missed periods.
const MIN_PERIOD: Nanos = Nanos(1_000);
/// Longest period accepted.
const MAX_PERIOD: Nanos = Nanos(3_600_000_000_000);

/// A validated `latlab run`.
#[derive(Debug)]
pub struct RunPlan {
    /// What the runner gets.
    pub request: RunRequest,
    /// The timer probe's settings.
    pub settings: TimerSettings,
    /// What memory is locked.
    pub memory_lock: MemoryLockPlan,
    /// Limits to judge by.
    pub thresholds: Vec<Threshold>,
    /// Where the JSON goes.
    pub json: Option<PathBuf>,
    /// Where the run is stored (`None` = not stored).
    pub store: Option<PathBuf>,
    /// No live display.
    pub quiet: bool,
    /// Background loads.
    pub loads: Vec<LoadSpec>,
    /// CPUs the loads run on.
    pub load_cpus: Vec<usize>,
    /// Where the loads' temporary directories go.
    pub load_dir: Option<PathBuf>,
}

fn duration_flag(flag: &str, text: &str) -> Result<Nanos, CliError> {
    parse_duration(text).map_err(|e| CliError::usage(flag, e))
}

/// Turns flags into a validated plan; every error names its flag and exits 2.
pub fn plan(args: &RunArgs, available_cpus: &[usize]) -> Result<RunPlan, CliError> {
    let cpus = CpuSelection::parse(&args.cpus)
        .and_then(|sel| sel.resolve(available_cpus))
        .map_err(|e| CliError::usage("--cpus", e))?;
    if cpus.is_empty() {
        return Err(CliError::usage("--cpus", "no CPU selected"));
    }
    let policy = SchedSpec::parse(&args.priority).map_err(|e| CliError::usage("--priority", e))?;
    let period = duration_flag("--period", &args.period)?;
    if period < MIN_PERIOD {
        return Err(CliError::usage(
            "--period",
            format!("{period} is too short: the shortest period is {MIN_PERIOD}"),
        ));
    }
    if period > MAX_PERIOD {
        return Err(CliError::usage(
            "--period",
            format!("{period} is too long: the longest period is 1 h"),
        ));
    }
    let duration = duration_flag("--duration", &args.duration)?;
    let duration = (duration.0 != 0).then_some(duration);
    if let Some(d) = duration {
        if d < period {
            return Err(CliError::usage(
                "--duration",
                format!(
                    "{d} is shorter than the period {period}: no sample would be taken; \
                     measure for at least one period"
                ),
            ));
        }
    }
    let method = TimerMethod::parse(&args.method).map_err(|e| CliError::usage("--method", e))?;
    let clock = ClockName::parse(&args.clock).map_err(|e| CliError::usage("--clock", e))?;
    if method == TimerMethod::Timerfd && clock == ClockName::Tai {
        return Err(CliError::usage(
            "--clock",
            "timerfd cannot use the TAI clock: use --method posix-timer or abs with tai, \
             or timerfd with monotonic, realtime or boottime",
        ));
    }
    let warm_up = duration_flag("--warm-up", &args.warm_up)?;
    let hybrid_margin = duration_flag("--hybrid-margin", &args.hybrid_margin)?;
    if method == TimerMethod::Hybrid && hybrid_margin >= period {
        return Err(CliError::usage(
            "--hybrid-margin",
            format!("{hybrid_margin} must be shorter than the period {period}"),
        ));
    }
    let timer_slack = args
        .timer_slack
        .as_deref()
        .map(|t| duration_flag("--timer-slack", t).map(|n| n.0 as u64))
        .transpose()?;
    let breaktrace = args
        .breaktrace
        .as_deref()
        .map(|t| duration_flag("--breaktrace", t))
        .transpose()?;
    let spike = args
        .spike
        .as_deref()
        .map(|t| duration_flag("--spike", t))
        .transpose()?;
    let interval = duration_flag("--interval", &args.interval)?;
    if interval < Nanos::MILLISECOND {
        return Err(CliError::usage(
            "--interval",
            "the timeline interval must be at least 1ms",
        ));
    }
    if args.top > 1_000 {
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
    let mut thresholds = Vec::new();
    if let Some(max) = &args.max {
        thresholds.push(Threshold::new("max", max).map_err(|e| CliError::usage("--max", e))?);
    }
    for t in &args.thresholds {
        let flag = format!("--{}", t.split('=').next().unwrap_or("threshold"));
        thresholds.push(Threshold::parse(t).map_err(|e| CliError::usage(&flag, e))?);
    }
    let memory_lock = match (args.no_mlock, args.mlock_all) {
        (true, _) => MemoryLockPlan::None,
        (false, true) => MemoryLockPlan::All,
        (false, false) => MemoryLockPlan::Touched,
    };
    let loads = args
        .loads
        .iter()
        .map(|l| LoadSpec::parse(l).map_err(|e| CliError::usage("--load", e)))
        .collect::<Result<Vec<_>, _>>()?;
    let load_cpus = CpuSelection::parse(&args.load_cpus)
        .and_then(|sel| sel.resolve(available_cpus))
        .map_err(|e| CliError::usage("--load-cpus", e))?;
    if let Some(dir) = &args.load_dir {
        if !dir.is_dir() {
            return Err(CliError::usage(
                "--load-dir",
                format!("{} is not a directory", dir.display()),
            ));
        }
    }
    let settings = TimerSettings {
        method,
        period_ns: period,
        clock,
        policy,
        hybrid_margin_ns: hybrid_margin,
        timer_slack_ns: timer_slack,
        top_spikes: args.top,
        spike_threshold_ns: spike,
        spike_capacity: args.spike_nodes,
        timeline_interval_ns: interval,
        breaktrace_ns: breaktrace,
    };
    Ok(RunPlan {
        request: RunRequest {
            cpus,
            policy,
            timer_slack_ns: timer_slack,
            duration,
            warm_up,
            lock_memory: memory_lock_scope(memory_lock),
            dma_latency_us: (!args.no_tune).then_some(args.dma_latency),
            phase: "main".to_string(),
        },
        settings,
        memory_lock,
        thresholds,
        json: args.json.clone(),
        store: (!args.no_store).then(|| {
            args.store
                .clone()
                .unwrap_or_else(latlab_store::default_path)
        }),
        quiet: args.quiet,
        loads,
        load_cpus,
        load_dir: args.load_dir.clone(),
    })
}

fn memory_lock_scope(plan: MemoryLockPlan) -> Option<LockScope> {
    match plan {
        MemoryLockPlan::Touched => Some(LockScope::Touched),
        MemoryLockPlan::All => Some(LockScope::All),
        MemoryLockPlan::None => None,
    }
}

/// Runs `latlab run`.
pub fn execute(args: &RunArgs) -> Result<u8, CliError> {
    let available = latlab_rt::affinity::allowed_cpus().map_err(|e| {
        CliError::runtime(format!("cannot read the CPUs this process may use: {e}"))
    })?;
    let plan = plan(args, &available)?;
    let mut json = plan.json.as_deref().map(JsonTarget::open).transpose()?;
    let human = match json {
        Some(JsonTarget::Stdout) => Human::Stderr,
        _ => Human::Stdout,
    };
    let mut store = plan.store.as_deref().map(SqliteStore::open).transpose()?;

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second Ctrl-C ends the process at once.
        signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone())
            .and_then(|_| signal_hook::flag::register(signal, stop.clone()))
            .map_err(|e| CliError::runtime(format!("cannot handle signals: {e}")))?;
    }

    let host = FactReader::system().gather();
    let setup = SystemSetup::apply(plan.request.lock_memory, plan.request.dma_latency_us);
    let mut extra_notices = Vec::new();
    let breaktrace = match plan.settings.breaktrace_ns {
        Some(_) => match BreakTrace::open() {
            Ok(bt) => Some(Arc::new(bt)),
            Err(e) => {
                extra_notices.push(Notice::BreakTraceUnavailable {
                    reason: e.to_string(),
                });
                None
            }
        },
        None => None,
    };
    let probe = TimerProbe::new(
        plan.settings.clone(),
        plan.request
            .duration
            .map(|d| Nanos(d.0 + plan.request.warm_up.0)),
        breaktrace.clone(),
    );
    let loads = start_loads(&plan)?;
    let live: Vec<LiveStats> = plan
        .request
        .cpus
        .iter()
        .map(|_| LiveStats::default())
        .collect();
    let mut display = LiveDisplay::new(human, plan.quiet, &plan.request, &plan.settings);
    display.start()?;
    let measured = runner::run_probe(&probe, &plan.request, &setup, &stop, &live, &mut display);
    display.finish();
    let breaktrace_armed = breaktrace.is_some();
    let load_records: Vec<LoadRecord> = loads.into_iter().map(RunningLoad::stop).collect();
    for record in load_records.iter().filter(|r| r.ended != "stopped") {
        extra_notices.push(Notice::LoadEndedEarly {
            load: record.spec.clone(),
            how: record.ended.clone(),
        });
    }
    drop(probe);
    drop(breaktrace);
    drop(setup);
    let outcome = measured.map_err(|e| match e {
        RunError::Config(m) => CliError::config(m),
        RunError::Runtime(m) => CliError::runtime(m),
    })?;

    let measuring_failed = outcome.failure.is_some();
    let run = assemble(
        &plan,
        host,
        outcome,
        extra_notices,
        breaktrace_armed,
        load_records,
    );
    // The exit code is settled first: no output problem may change a verdict.
    let mut code = match run.verdict.status {
        Status::Fail => exit::FAILED,
        Status::Pass | Status::None => exit::OK,
    };
    if measuring_failed {
        code = exit::RUNTIME;
    }
    // Keep the run before anything else can go wrong.
    let mut tail = String::new();
    if let Some(store) = store.as_mut() {
        match store.save(&run) {
            Ok(()) => tail.push_str(&format!(
                "Run {} saved in {}\n",
                run.id,
                store.path().display()
            )),
            Err(e) => {
                code = code.max(exit::RUNTIME);
                tail.push_str(&format!("latlab: error: could not save the run: {e}\n"));
            }
        }
    }
    if let Some(target) = json.as_mut() {
        match target.write(&run.to_json_pretty()) {
            Ok(()) => {
                if let Some(path) = target.path() {
                    tail.push_str(&format!("Run written to {}\n", path.display()));
                }
            }
            Err(e) if e.code == exit::OK => {} // stdout closed: nothing more to say there
            Err(e) => {
                code = code.max(exit::RUNTIME);
                tail.push_str(&format!("latlab: error: {e}\n"));
            }
        }
    }
    // A reader that went away (a pager, `head`) is not an error; the verdict stands.
    output::ignore_closed(human.write(&summary::render(&run, human.is_terminal())))?;
    output::ignore_closed(human.write(&tail))?;
    Ok(code)
}

/// Starts every load of the plan and waits until each is running; any that cannot
/// start ends the run before measuring (the ones already started are stopped).
fn start_loads(plan: &RunPlan) -> Result<Vec<RunningLoad>, CliError> {
    if plan.loads.is_empty() {
        return Ok(Vec::new());
    }
    // Descendants of a load that outlive their parent can then still be reaped.
    let _ = latlab_rt::process::become_subreaper();
    let exe = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find latlab's own executable: {e}")))?;
    let mut running = Vec::with_capacity(plan.loads.len());
    for spec in &plan.loads {
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
    host: latlab_model::run::HostFacts,
    outcome: RunOutcome,
    extra_notices: Vec<Notice>,
    breaktrace_armed: bool,
    loads: Vec<LoadRecord>,
) -> Run {
    let mut notices = outcome.notices;
    notices.extend(extra_notices);
    // Degrading warnings first.
    notices.sort_by_key(|n| !n.degrades());
    let warnings: Vec<_> = notices.iter().map(Notice::to_warning).collect();
    let degraded = warnings.iter().any(|w| w.degrades);
    let verdict = Verdict::judge(&plan.thresholds, &outcome.streams);
    let mut conditions = outcome.conditions;
    conditions.breaktrace_armed = breaktrace_armed;
    let started = rfc3339(outcome.started_at);
    let elapsed = outcome
        .ended_at
        .duration_since(outcome.started_at)
        .unwrap_or_default();
    Run {
        schema: SCHEMA.to_string(),
        id: run_id(outcome.started_at),
        tool: Tool {
            name: "latlab".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        started_at: started.clone(),
        ended_at: rfc3339(outcome.ended_at),
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        scenario: None,
        plan: Plan {
            duration_ns: plan.request.duration,
            warm_up_ns: plan.request.warm_up,
            cpus: plan.request.cpus.clone(),
            probes: vec![ProbePlan::Timer(plan.settings.clone())],
            dma_latency_us: plan.request.dma_latency_us,
            memory_lock: plan.memory_lock,
        },
        host,
        conditions,
        degraded,
        interrupted: outcome.interrupted,
        warnings,
        phases: vec![Phase {
            name: plan.request.phase.clone(),
            started_at: started,
            elapsed_ns: Nanos(elapsed.as_nanos() as i64),
            loads,
        }],
        streams: outcome.streams,
        events: outcome.events,
        thresholds: plan.thresholds.clone(),
        verdict,
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// A sortable, unique id: UTC start to the second, then 6 random hex digits.
fn run_id(started: SystemTime) -> String {
    use std::hash::{BuildHasher, Hasher};
    let stamp: String = humantime::format_rfc3339_seconds(started)
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        started
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{stamp}-{:06x}", h.finish() & 0xff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(p.request.cpus, vec![0, 1]);
        assert_eq!(p.request.policy, SchedSpec::Fifo { priority: 95 });
        assert_eq!(p.settings.period_ns, Nanos::MILLISECOND);
        assert_eq!(p.request.duration, Some(Nanos::from_secs(30)));
        assert_eq!(p.settings.method, TimerMethod::Abs);
        assert_eq!(p.request.dma_latency_us, Some(0));
        assert_eq!(p.memory_lock, MemoryLockPlan::Touched);
        assert_eq!(p.request.lock_memory, Some(LockScope::Touched));
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
        assert_eq!(p.request.duration, None);
        assert_eq!(p.request.dma_latency_us, None);
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

    #[test]
    fn run_ids_sort_by_time() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let id = run_id(t);
        assert!(id.starts_with("20270115T080000Z-"), "{id}");
        assert_eq!(id.len(), "20270115T080000Z-".len() + 6);
    }
}
