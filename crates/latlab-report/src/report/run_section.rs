//! One run's report: title, verdict, warnings, system and conditions, then its tables
//! (`run_tables.rs`) and plots.

use super::curves;
use super::document::{Block, Severity};
use super::figures::{self, DecodedRun, Unknowns};
use super::run_tables::{
    checks_table, events_table, loads_table, phase_blocks, spikes, statistics,
};
use super::PlotKind;
use latlab_model::run::{MemoryLockPlan, ProbePlan, Run, TimerSettings, Warning};
use latlab_model::threshold::Status;

/// Most failed checks listed in the verdict (the checks table has them all).
const VERDICT_DETAILS: usize = 8;

/// The run's blocks; its title is a heading of `level`, its sections one below.
pub(crate) fn blocks(decoded: &DecodedRun, level: usize, with_figures: bool) -> Vec<Block> {
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
    blocks.extend(alerts(run));
    blocks.push(section("System"));
    blocks.push(system_facts(run));
    blocks.push(section("Conditions"));
    blocks.push(condition_facts(run));
    blocks.push(section("Statistics"));
    blocks.extend(statistics(decoded));
    if with_figures {
        blocks.push(section("Plots"));
        for plot in PlotKind::ALL {
            blocks.push(Block::Figure(curves::chart_of_run(decoded, plot)));
        }
    }
    blocks.push(section("Spikes"));
    blocks.extend(spikes(decoded));
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
fn subtitle(run: &Run) -> String {
    let unknowns = Unknowns::of(run);
    let probes = figures::distinct(run.streams.iter().map(|s| s.probe.clone()));
    let methods = unknowns.or("streams[].method", || {
        figures::distinct(run.streams.iter().map(|s| s.method.clone()))
    });
    let periods = unknowns.or("streams[].period_ns", || {
        figures::distinct(run.streams.iter().map(|s| s.period_ns.to_string()))
    });
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
    let tool = unknowns.or("tool.version", || {
        format!("{} {}", run.tool.name, run.tool.version)
    });
    let measured = unknowns.or("phases[].elapsed_ns", || {
        figures::span(figures::measured(run))
    });
    let when = if unknowns.has("started_at") {
        "time unknown".to_string()
    } else {
        format!("{} to {}", run.started_at, run.ended_at)
    };
    format!(
        "{tool} · {probes} probe, method {methods}, period {periods}{clocks}{scenario} · \
         {measured} measured in {} phase(s) · host {} · {when}",
        run.phases.len(),
        unknowns.or("host.hostname", || run.host.hostname.clone()),
    )
}

/// Where an imported Run came from and what its source did not have.
fn import_note(run: &Run) -> Option<Block> {
    let import = run.import.as_ref()?;
    let mut lines = import.lacks.clone();
    if !import.unknown_fields.is_empty() {
        lines.push(format!(
            "shown as {}: {}",
            figures::UNKNOWN,
            import.unknown_fields.join(", ")
        ));
    }
    Some(Block::Alert {
        severity: Severity::Note,
        title: format!(
            "Imported from {} ({}) at {}",
            import.file, import.format, import.imported_at
        ),
        lines,
    })
}

/// The verdict: pass, fail with the failed checks, or no thresholds.
fn verdict(run: &Run) -> Block {
    let judged = || {
        run.thresholds
            .iter()
            .map(|t| format!("{} ≤ {}", t.metric, t.limit_ns))
            .collect::<Vec<_>>()
    };
    let (headline, details) = match run.verdict.status {
        Status::Pass => ("every threshold held on every stream".to_string(), judged()),
        Status::Fail => {
            let failed: Vec<_> = run.verdict.checks.iter().filter(|c| !c.passed).collect();
            let mut details: Vec<String> = failed
                .iter()
                .take(VERDICT_DETAILS)
                .map(|c| {
                    let observed = c
                        .observed_ns
                        .map_or_else(|| "no samples".to_string(), figures::us_unit);
                    format!(
                        "{} ≤ {} exceeded on {}: {observed}",
                        c.threshold.metric, c.threshold.limit_ns, c.stream
                    )
                })
                .collect();
            if failed.len() > VERDICT_DETAILS {
                details.push(format!(
                    "and {} more (see the threshold checks)",
                    failed.len() - VERDICT_DETAILS
                ));
            }
            (
                format!(
                    "{} of {} checks failed",
                    failed.len(),
                    run.verdict.checks.len()
                ),
                details,
            )
        }
        Status::None => (
            "no thresholds were set, so nothing was judged".to_string(),
            Vec::new(),
        ),
    };
    Block::Verdict {
        status: run.verdict.status,
        headline,
        details,
    }
}

/// The degraded banner, warnings, and a note when the run stopped early.
fn alerts(run: &Run) -> Vec<Block> {
    let line = |w: &Warning| format!("{} [{}]", w.message, w.code);
    let mut blocks = Vec::new();
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

/// A facts block from (name, value) pairs.
fn facts(pairs: Vec<(&str, String)>) -> Block {
    Block::Facts(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The machine and kernel.
fn system_facts(run: &Run) -> Block {
    let h = &run.host;
    let unknowns = Unknowns::of(run);
    let fact = |name: &'static str, path: &str, value: &dyn Fn() -> String| {
        (name, unknowns.or(path, value))
    };
    facts(vec![
        fact("host", "host.hostname", &|| h.hostname.clone()),
        fact("kernel release", "host.kernel_release", &|| {
            h.kernel_release.clone()
        }),
        fact("kernel version", "host.kernel_version", &|| {
            h.kernel_version.clone()
        }),
        fact("architecture", "host.architecture", &|| {
            h.architecture.clone()
        }),
        fact(
            "preemption model",
            "host.preemption",
            &|| match &h.preemption.dynamic_mode {
                Some(mode) => format!("{} (mode {mode})", h.preemption.model),
                None => h.preemption.model.clone(),
            },
        ),
        fact("preemption evidence", "host.preemption", &|| {
            h.preemption.evidence.join("; ")
        }),
        fact("CPU model", "host.cpu_model", &|| h.cpu_model.clone()),
        fact("CPUs online", "host.cpus_online", &|| {
            format!("{} ({})", h.cpus_online, h.cpus_online_list)
        }),
        fact("virtualisation", "host.virtualization", &|| {
            h.virtualization
                .clone()
                .unwrap_or_else(|| "none seen (bare metal)".to_string())
        }),
        fact("clocksource", "host.clocksource", &|| {
            h.clocksource
                .clone()
                .unwrap_or_else(|| figures::UNKNOWN.to_string())
        }),
        fact("HZ", "host.hz", &|| {
            h.hz.map_or_else(
                || "unknown (kernel configuration not readable)".to_string(),
                |hz| hz.to_string(),
            )
        }),
    ])
}

/// What the run set up, and the plan it ran.
fn condition_facts(run: &Run) -> Block {
    let (c, p) = (&run.conditions, &run.plan);
    let unknowns = Unknowns::of(run);
    let condition = |value: &dyn Fn() -> String| unknowns.or("conditions", value);
    let memory_lock = unknowns.or("plan.memory_lock", || {
        match p.memory_lock {
            MemoryLockPlan::Touched => "lock every page the run touches",
            MemoryLockPlan::All => "lock every mapped page",
            MemoryLockPlan::None => "lock nothing",
        }
        .to_string()
    });
    let dma_latency = || {
        c.dma_latency_us.map_or_else(
            || "not held (power management left alone)".to_string(),
            |us| format!("{us} µs held on /dev/cpu_dma_latency"),
        )
    };
    let command_line = if run.command_line.is_empty() {
        figures::UNKNOWN.to_string()
    } else {
        run.command_line.join(" ")
    };
    facts(vec![
        (
            "memory locked",
            format!(
                "{} (plan: {memory_lock})",
                condition(&|| figures::yes_no(c.memory_locked).to_string())
            ),
        ),
        (
            "real-time policy",
            condition(&|| {
                let requested =
                    figures::distinct(run.plan.probes.iter().map(|probe| match probe {
                        ProbePlan::Timer(t) => t.policy.to_string(),
                        ProbePlan::Primitive(p) => p.policy.to_string(),
                    }));
                let requested = if requested.is_empty() || unknowns.has("plan.probes") {
                    figures::UNKNOWN.to_string()
                } else {
                    requested
                };
                format!(
                    "{} (requested {requested})",
                    figures::yes_no(c.realtime_policy)
                )
            }),
        ),
        (
            "DMA latency",
            condition(&|| unknowns.or("plan.dma_latency_us", dma_latency)),
        ),
        ("CPUs measured", figures::cpu_list(&p.cpus)),
        ("warm-up", p.warm_up_ns.to_string()),
        (
            "break trace",
            timer_setting(run, "off (no timer probe)", |t| {
                t.breaktrace_ns.map_or_else(
                    || "off".to_string(),
                    |limit| {
                        let armed = if c.breaktrace_armed {
                            "armed"
                        } else {
                            "tracefs not ready"
                        };
                        format!("above {limit} ({armed})")
                    },
                )
            }),
        ),
        ("effective user id", condition(&|| c.euid.to_string())),
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
    if run.plan.probes.is_empty() || Unknowns::of(run).has("plan.probes") {
        figures::UNKNOWN.to_string()
    } else if values.is_empty() {
        without.to_string()
    } else {
        values
    }
}
