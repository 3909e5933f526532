//! One run's report: title, verdict, warnings, system and conditions, then its tables
//! (`run_tables.rs`) and plots.

use super::curves;
use super::document::{Block, Severity};
use super::explain;
use super::figures::{self, DecodedRun};
use super::run_tables::{
    audit, checks_table, events_table, loads_table, phase_blocks, spike_rates, spikes, statistics,
};
use super::telemetry;
use super::{LatencyAxis, PlotKind};
use latlab_model::outcome::ExitStatus;
use latlab_model::run::{
    Conditions, HostFacts, MemoryLockPlan, ProbePlan, Run, TimerSettings, Warning, BARE_METAL,
};
use latlab_model::threshold::{Check, Status};

/// Most failed checks listed in the verdict (the checks table has them all).
const VERDICT_DETAILS: usize = 8;

/// The run's blocks; its title is a heading of `level`, its sections one below;
/// `plots` adds the plots, with their latency axis.
pub(crate) fn blocks(decoded: &DecodedRun, level: usize, plots: Option<LatencyAxis>) -> Vec<Block> {
    let run = decoded.run;
    let section = |text: &str| Block::Heading {
        level: level + 1,
        text: text.to_string(),
    };
    let mut blocks = vec![
        Block::Heading {
            level,
            text: if level == 1 {
                format!("latlab report: run {}", run.id)
            } else {
                format!("Run {}", figures::run_label(run))
            },
        },
        Block::Paragraph(subtitle(run)),
        verdict(run),
    ];
    blocks.extend(import_note(run));
    blocks.extend(published_note(run));
    blocks.extend(alerts(run));
    blocks.push(section("System"));
    blocks.push(system_facts(run));
    blocks.push(section("Conditions"));
    blocks.push(condition_facts(run));
    blocks.push(section("Readiness audit"));
    blocks.extend(audit(run));
    blocks.push(section("Statistics"));
    blocks.extend(statistics(decoded));
    if let Some(axis) = plots {
        blocks.push(section("Plots"));
        for plot in PlotKind::ALL {
            blocks.push(Block::Figure(curves::chart_of_run(decoded, plot, axis)));
        }
    }
    // Under the timeline: what the measured CPUs went through, interval by interval.
    if run.telemetry.is_some() {
        blocks.push(section("Telemetry"));
        blocks.extend(telemetry::section(run));
    }
    blocks.push(section("Spikes"));
    blocks.extend(spikes(decoded));
    blocks.extend(spike_rates(decoded));
    if let Some(explained) = &run.explain {
        blocks.push(section("What got in the way"));
        blocks.extend(explain::section(explained, level + 2));
    }
    if decoded.phased {
        blocks.push(section("Phases"));
        for phase in &run.phases {
            blocks.extend(phase_blocks(decoded, phase, level + 2));
        }
    } else if let Some(phase) = run.phases.iter().find(|p| !p.loads.is_empty()) {
        blocks.push(section("Loads"));
        blocks.push(Block::Table(loads_table(phase)));
    }
    if !run.verdict.checks.is_empty() {
        blocks.push(section("Threshold checks"));
        blocks.push(Block::Table(checks_table(run)));
    }
    if !run.events.is_empty() {
        blocks.push(section("Events"));
        blocks.push(Block::Table(events_table(decoded)));
    }
    blocks
}

/// What was measured, where and when, in one line.
pub(crate) fn subtitle(run: &Run) -> String {
    // A reference's facts are the paper's, not a measurement's.
    if let Some(p) = &run.published {
        return format!(
            "{} · {} · {} on {}, kernel {} · {}",
            p.note,
            p.citation(),
            p.tool,
            p.machine,
            p.kernel,
            latlab_model::text::counted(p.rows.len() as u64, "row")
        );
    }
    let probes = figures::distinct(run.streams.iter().map(|s| s.probe.clone()));
    // A figure unknown for one stream is unknown for the run.
    let distinct_known = |values: Vec<Option<String>>| {
        values.into_iter().collect::<Option<Vec<_>>>().map_or_else(
            || figures::UNKNOWN.to_string(),
            |v| figures::distinct(v.into_iter()),
        )
    };
    let methods = distinct_known(run.streams.iter().map(|s| s.method.clone()).collect());
    let periods = distinct_known(
        run.streams
            .iter()
            .map(|s| s.period_ns.map(|p| p.to_string()))
            .collect(),
    );
    let clocks = figures::distinct(run.plan.probes.iter().filter_map(|p| match p {
        ProbePlan::Timer(t) => Some(t.clock.name().to_string()),
        ProbePlan::Primitive(_) => None,
    }));
    let clocks = if clocks.is_empty() {
        clocks
    } else {
        format!(", clock {clocks}")
    };
    let scenario = run
        .scenario
        .as_ref()
        .map_or_else(String::new, |s| format!(" · scenario {s}"));
    let tool = figures::fact(run.tool.version.as_ref(), |version| {
        format!("{} {version}", run.tool.name)
    });
    let measured = figures::fact(figures::measured(run), figures::span);
    let when = match (&run.started_at, &run.ended_at) {
        (Some(start), Some(end)) => format!("{start} to {end}"),
        (Some(start), None) => format!("from {start}"),
        _ => "time unknown".to_string(),
    };
    format!(
        "{tool} · {probes} probe, method {methods}, period {periods}{clocks}{scenario} · \
         {measured} measured in {} phase(s) · host {} · {when}",
        run.phases.len(),
        figures::fact(run.host.as_ref(), host),
    )
}

/// The host with what decides its latencies most: `rig (6.18.0, PREEMPT_RT, bare
/// metal)`.
fn host(h: &HostFacts) -> String {
    let preemption = match &h.preemption.dynamic_mode {
        Some(mode) => format!("{} (mode {mode})", h.preemption.model),
        None => h.preemption.model.clone(),
    };
    let virtualization = match h.virtualization.as_deref() {
        Some(BARE_METAL) => "bare metal".to_string(),
        Some(v) => v.to_string(),
        None => "virtualisation unknown".to_string(),
    };
    let known = |v: &str| {
        if v.is_empty() {
            figures::UNKNOWN.to_string()
        } else {
            v.to_string()
        }
    };
    format!(
        "{} ({}, {}, {virtualization})",
        h.hostname,
        known(&h.kernel_release),
        known(&preemption)
    )
}

/// Where an imported Run came from and what its source did not have.
pub(crate) fn import_note(run: &Run) -> Option<Block> {
    let import = run.import.as_ref()?;
    let mut lines = import.lacks.clone();
    lines.push(format!(
        "what the source did not have is shown as {} or {}, never as a value",
        figures::UNKNOWN,
        figures::NOT_IN_SOURCE
    ));
    Some(Block::Alert {
        severity: Severity::Note,
        title: format!(
            "Imported from {} ({}) at {}",
            import.file, import.format, import.imported_at
        ),
        lines,
    })
}

/// Where a reference Run's published figures come from, and what its table lacks.
pub(crate) fn published_note(run: &Run) -> Option<Block> {
    let published = run.published.as_ref()?;
    let mut lines = vec![
        format!("source: {}", published.citation()),
        format!(
            "machine: {}; kernel: {}; load: {}",
            published.machine, published.kernel, published.load
        ),
        format!(
            "measured with: {}; a sample is the {}; printed in {}",
            published.tool, published.figure, published.unit
        ),
    ];
    lines.extend(published.lacks.iter().cloned());
    // A row without a sample count is no stream: its figures are shown here, as printed.
    for row in published.rows.iter().filter(|r| r.samples.is_none()) {
        let figures: Vec<String> = [
            ("min", &row.min),
            ("mean", &row.mean),
            ("max", &row.max),
            ("stddev", &row.stddev),
            ("p99.999", &row.p99_999),
        ]
        .into_iter()
        .filter_map(|(what, value)| Some(format!("{what} {}", value.as_ref()?)))
        .collect();
        lines.push(format!(
            "{}: {} {} (as printed)",
            row.label,
            figures.join(", "),
            published.unit
        ));
    }
    lines.push(format!(
        "what the table does not have is shown as {} or {}, never as a value",
        figures::UNKNOWN,
        figures::NOT_IN_SOURCE
    ));
    Some(Block::Alert {
        severity: Severity::Note,
        title: format!("{}: {}", published.note, published.title),
        lines,
    })
}

/// The verdict: pass, fail with the failed checks, or no thresholds.
pub(crate) fn verdict(run: &Run) -> Block {
    let judged = || {
        run.thresholds
            .iter()
            .map(|t| format!("{} ≤ {}", t.metric, t.limit_ns))
            .collect::<Vec<_>>()
    };
    // The checks that decide the status, each in one line.
    let listed = |pick: fn(&Check) -> bool, what: &str| {
        let picked: Vec<&Check> = run.verdict.checks.iter().filter(|c| pick(c)).collect();
        let mut details: Vec<String> = picked
            .iter()
            .take(VERDICT_DETAILS)
            .map(|c| {
                let observed = c.observed_ns.map_or_else(
                    || {
                        if c.failed() {
                            "no samples"
                        } else {
                            "not known"
                        }
                        .to_string()
                    },
                    |v| format!("{}{}", v.prefix(), figures::us_unit(v.value())),
                );
                format!(
                    "{} ≤ {} {what} on {}: {observed}",
                    c.threshold.metric, c.threshold.limit_ns, c.stream
                )
            })
            .collect();
        if picked.len() > VERDICT_DETAILS {
            details.push(format!(
                "and {} more (see the threshold checks)",
                picked.len() - VERDICT_DETAILS
            ));
        }
        (picked.len(), details)
    };
    let checks = run.verdict.checks.len();
    let (headline, details) = match run.verdict.status {
        Status::Pass => ("every threshold held on every stream".to_string(), judged()),
        Status::Fail => {
            let (failed, details) = listed(Check::failed, "exceeded");
            (format!("{failed} of {checks} checks failed"), details)
        }
        Status::Undecided => {
            let (open, details) = listed(|c| c.passed.is_none(), "cannot be judged");
            (
                format!(
                    "none failed, but {open} of {checks} checks cannot be judged: the figure \
                     is not known, or only a bound below the limit is"
                ),
                details,
            )
        }
        Status::None => (
            "no thresholds were set, so nothing was judged".to_string(),
            Vec::new(),
        ),
    };
    // What the run exits with: a run that measured less than asked, or under degraded
    // conditions, is not a pass whatever its thresholds say (unless accepted), and a
    // failure to measure outranks them all.
    let status = run.exit_status();
    let (headline, details) = match status {
        ExitStatus::CouldNotMeasure => {
            let failed = run
                .warnings
                .iter()
                .filter(|w| w.is(latlab_model::seal::WarningCode::MeasuringFailed))
                .map(|w| w.message.clone())
                .collect();
            ("measuring failed part-way".to_string(), failed)
        }
        ExitStatus::Incomplete => (
            run.incomplete_because().unwrap_or_default(),
            shortfall_details(run, "incomplete", &headline, details),
        ),
        ExitStatus::Untrusted => (
            format!(
                "{}: its figures are not the machine's real-time behaviour",
                run.untrusted_because().unwrap_or_default()
            ),
            shortfall_details(run, "untrusted", &headline, details),
        ),
        _ => (headline, details),
    };
    Block::Verdict {
        status,
        headline,
        details,
    }
}

/// The details of a verdict a shortfall decided: what the thresholds said, and how
/// to let such a run through.
fn shortfall_details(
    run: &Run,
    accept: &str,
    thresholds: &str,
    mut details: Vec<String>,
) -> Vec<String> {
    let said = match run.verdict.status {
        Status::None => "no thresholds were set".to_string(),
        status => format!("the thresholds alone: {} ({thresholds})", status.word()),
    };
    details.insert(0, said);
    details.push(format!(
        "`latlab run --accept {accept}` lets such a run pass on its thresholds"
    ));
    details
}

/// The degraded banner, warnings, and a note when the run stopped early or has not
/// ended (running, or died).
pub(crate) fn alerts(run: &Run) -> Vec<Block> {
    let line = |w: &Warning| format!("{} [{}]", w.message, w.code);
    let mut blocks = Vec::new();
    blocks.extend(progress(run));
    if run.degraded {
        let mut lines: Vec<String> = run
            .warnings
            .iter()
            .filter(|w| w.degrades)
            .map(line)
            .collect();
        if lines.is_empty() {
            lines.push("a condition of real-time measurement was not met".to_string());
        }
        blocks.push(Block::Alert {
            severity: Severity::Degraded,
            title: "DEGRADED: these results are NOT real-time results".to_string(),
            lines,
        });
    }
    let others: Vec<String> = run
        .warnings
        .iter()
        .filter(|w| !(run.degraded && w.degrades))
        .map(line)
        .collect();
    if !others.is_empty() {
        blocks.push(Block::Alert {
            severity: Severity::Warning,
            title: format!("{} warning(s)", others.len()),
            lines: others,
        });
    }
    if run.interrupted {
        blocks.push(Block::Alert {
            severity: Severity::Note,
            title: "Stopped early".to_string(),
            lines: vec![
                "the run was interrupted (Ctrl-C, SIGTERM or a break trace); the figures \
                 cover the time measured"
                    .to_string(),
            ],
        });
    }
    blocks
}

/// A run that has not ended: what its figures cover.
fn progress(run: &Run) -> Option<Block> {
    use latlab_model::progress::RunState;
    let progress = run.progress.as_ref()?;
    let every = latlab_model::Nanos(progress.checkpoint_every_ns);
    let covered = match progress.checkpoints {
        0 => "it has no checkpoint, so nothing it measured is kept".to_string(),
        n => format!(
            "the figures cover the run up to its last checkpoint ({n}, taken every {every})"
        ),
    };
    Some(match progress.state {
        RunState::Running => Block::Alert {
            severity: Severity::Note,
            title: format!("RUNNING: {}", progress.describe()),
            lines: vec![format!("the run has not ended; {covered}")],
        },
        RunState::Died => Block::Alert {
            severity: Severity::Warning,
            title: format!("DIED: {}", progress.describe()),
            lines: vec![format!(
                "the run did not end: its process is gone; {covered}, and what came after \
                 it is lost"
            )],
        },
    })
}

/// A facts block from (name, value) pairs.
fn facts(pairs: Vec<(&str, String)>) -> Block {
    Block::Facts(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The machine and kernel.
fn system_facts(run: &Run) -> Block {
    let Some(h) = &run.host else {
        return facts(vec![("host", figures::UNKNOWN.to_string())]);
    };
    let cpus = match (h.cpus_online, &h.cpus_online_list) {
        (Some(n), Some(list)) => format!("{n} ({list})"),
        (Some(n), None) => n.to_string(),
        _ => figures::UNKNOWN.to_string(),
    };
    facts(vec![
        ("host", h.hostname.clone()),
        ("kernel release", h.kernel_release.clone()),
        ("kernel version", h.kernel_version.clone()),
        ("architecture", h.architecture.clone()),
        (
            "preemption model",
            match &h.preemption.dynamic_mode {
                Some(mode) => format!("{} (mode {mode})", h.preemption.model),
                None => h.preemption.model.clone(),
            },
        ),
        ("preemption evidence", h.preemption.evidence.join("; ")),
        ("CPU model", figures::fact(h.cpu_model.clone(), |m| m)),
        ("CPUs online", cpus),
        (
            "virtualisation",
            figures::fact(h.virtualization.clone(), |v| {
                if v == BARE_METAL {
                    "none seen (bare metal)".to_string()
                } else {
                    v
                }
            }),
        ),
        ("clocksource", figures::fact(h.clocksource.clone(), |c| c)),
        (
            "HZ",
            h.hz.map_or_else(
                || "unknown (kernel configuration not readable)".to_string(),
                |hz| hz.to_string(),
            ),
        ),
    ])
}

/// What the run set up, and the plan it ran. An imported Run has no plan of latlab's
/// (`plan.probes` is empty): what it requested is unknown.
fn condition_facts(run: &Run) -> Block {
    let (c, p) = (run.conditions.as_ref(), &run.plan);
    let planned = !p.probes.is_empty();
    let condition = |value: &dyn Fn(&Conditions) -> String| figures::fact(c, value);
    let memory_lock = figures::fact(p.memory_lock, |lock| {
        match lock {
            MemoryLockPlan::Touched => "lock every page the run touches",
            MemoryLockPlan::All => "lock every mapped page",
            MemoryLockPlan::None => "lock nothing",
        }
        .to_string()
    });
    let requested_policy = if planned {
        figures::distinct(p.probes.iter().map(|probe| match probe {
            ProbePlan::Timer(t) => t.policy.to_string(),
            ProbePlan::Primitive(p) => p.policy.to_string(),
        }))
    } else {
        figures::UNKNOWN.to_string()
    };
    let command_line = figures::fact(run.command_line.as_ref(), |c| c.join(" "));
    facts(vec![
        (
            "memory locked",
            format!(
                "{} (plan: {memory_lock})",
                condition(&|c| figures::yes_no(c.memory_locked).to_string())
            ),
        ),
        (
            "real-time policy",
            condition(&|c| {
                format!(
                    "{} (requested {requested_policy})",
                    figures::yes_no(c.realtime_policy)
                )
            }),
        ),
        (
            "DMA latency",
            condition(&|c| {
                c.dma_latency_us.map_or_else(
                    || "not held (power management left alone)".to_string(),
                    |us| format!("{us} µs held on /dev/cpu_dma_latency"),
                )
            }),
        ),
        ("CPUs measured", figures::cpu_list(&p.cpus)),
        (
            "warm-up",
            if planned {
                p.warm_up_ns.to_string()
            } else {
                figures::UNKNOWN.to_string()
            },
        ),
        (
            "break trace",
            timer_setting(run, "off (no timer probe)", |t| {
                t.breaktrace_ns.map_or_else(
                    || "off".to_string(),
                    |limit| {
                        let armed = if c.is_some_and(|c| c.breaktrace_armed) {
                            "armed"
                        } else {
                            "tracefs not ready"
                        };
                        format!("above {limit} ({armed})")
                    },
                )
            }),
        ),
        ("effective user id", condition(&|c| c.euid.to_string())),
        ("command line", command_line),
    ])
}

/// A setting of the timer probes, their distinct values joined; `unknown` when the
/// plan holds no probe (an imported Run), `without` when it holds only primitive ones.
fn timer_setting(run: &Run, without: &str, setting: impl Fn(&TimerSettings) -> String) -> String {
    let values = figures::distinct(run.plan.probes.iter().filter_map(|probe| match probe {
        ProbePlan::Timer(t) => Some(setting(t)),
        ProbePlan::Primitive(_) => None,
    }));
    if run.plan.probes.is_empty() {
        figures::UNKNOWN.to_string()
    } else if values.is_empty() {
        without.to_string()
    } else {
        values
    }
}
