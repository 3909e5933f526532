//! The final summary: the statistics table with units and sample counts, first
//! samples, drift, warnings and the verdict.

use comfy_table::{presets, Cell, CellAlignment, Table};
use latlab_model::audit::CheckVerdict;
use latlab_model::run::{Percentile, Run, Stream, BARE_METAL};
use latlab_model::text::terminal_safe as safe;
use latlab_model::threshold::{Check, Status};
use latlab_model::Nanos;
use std::fmt::Write as _;

/// What a cell shows for a figure the Run's source did not have.
const UNKNOWN: &str = "?";

fn us(v: Option<Nanos>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n.as_micros_f64()))
}

fn us_f(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n / 1e3))
}

/// A percentile: `12.345`, `≥ 400.000` for a bound.
fn us_p(v: Option<Percentile>) -> String {
    v.map_or("-".to_string(), |p| {
        format!("{}{}", p.prefix(), us(Some(p.value())))
    })
}

/// A statistic of a stream: `-` without samples, `?` when its source lacked it.
fn stat(stream: &Stream, value: String, known: bool) -> String {
    match (stream.samples, known) {
        (0, _) => "-".to_string(),
        (_, false) => UNKNOWN.to_string(),
        (_, true) => value,
    }
}

/// A count or setting, `?` when the Run's source did not have it.
fn known<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| UNKNOWN.to_string(), |v| v.to_string())
}

/// Renders a Run's summary as text (`color` adds ANSI emphasis for terminals).
pub fn render(run: &Run, color: bool) -> String {
    let (bold, red, green, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[1;32m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let mut out = String::new();
    let period = run.streams.first().and_then(|s| s.period_ns);
    let measured = match run
        .phases
        .iter()
        .map(|p| p.elapsed_ns)
        .sum::<Option<Nanos>>()
    {
        Some(span) => format!("{:.1} s", span.as_secs_f64()),
        None => "time unknown".to_string(),
    };
    let what = match &run.scenario {
        Some(name) => format!("scenario {}, {} phase(s)", safe(name), run.phases.len()),
        None if run.phases.len() > 1 => format!("{} phases", run.phases.len()),
        None => format!(
            "{} · period {}",
            run.streams
                .first()
                .and_then(|s| s.method.as_deref())
                .map_or("method unknown".into(), safe),
            known(period)
        ),
    };
    let probe = match run.streams.first() {
        Some(first) if run.streams.iter().all(|s| s.probe == first.probe) => safe(&first.probe),
        Some(_) => "probes".into(),
        None => "timer".into(),
    };
    let host = match &run.host {
        None => "an unknown host".to_string(),
        Some(host) => format!(
            "{} {} ({}, {})",
            host.hostname,
            host.kernel_release,
            match &host.preemption.dynamic_mode {
                Some(mode) => format!("{} ({mode})", host.preemption.model),
                None => host.preemption.model.clone(),
            },
            match host.virtualization.as_deref() {
                Some(BARE_METAL) => "bare metal",
                Some(v) => v,
                None => "virtualisation unknown",
            },
        ),
    };
    let _ = writeln!(
        out,
        "{bold}{} {probe}{reset} · {what} · {measured} on {}",
        safe(&run.tool.name),
        safe(&host)
    );
    if let Some(import) = &run.import {
        let _ = writeln!(
            out,
            "Imported from {} ({}) at {}; the source lacked:",
            safe(&import.file),
            safe(&import.format),
            safe(&import.imported_at)
        );
        for lack in &import.lacks {
            let _ = writeln!(out, "  - {}", safe(lack));
        }
    }
    if run.degraded {
        let _ = writeln!(
            out,
            "{red}DEGRADED: these results are NOT real-time results (see warnings below){reset}"
        );
    }
    if run.interrupted {
        let _ = writeln!(out, "Stopped early: figures cover the time measured.");
    }

    let (timer, primitive): (Vec<&Stream>, Vec<&Stream>) =
        run.streams.iter().partition(|s| s.measures_wake_ups());
    if !timer.is_empty() {
        timer_table(&mut out, run, &timer);
    }
    if !primitive.is_empty() {
        primitive_table(&mut out, &primitive);
    }
    for s in run.streams.iter().filter(|s| s.drift_ns.is_some()) {
        let _ = writeln!(
            out,
            "Drift of the relative schedule on {}: {} after {} sleeps ({} per period).",
            safe(&s.label()),
            s.drift_ns.unwrap_or_default(),
            s.samples,
            Nanos(s.drift_ns.unwrap_or_default().0 / s.samples.max(1) as i64),
        );
    }
    if let Some(worst) = run
        .streams
        .iter()
        .flat_map(|s| s.spikes.top.first().map(|t| (s, t)))
        .max_by_key(|(_, t)| t.value_ns)
    {
        let _ = writeln!(
            out,
            "Largest sample: {} on {}, {:.3} s into the measured span.",
            worst.1.value_ns,
            safe(&worst.0.label()),
            worst.1.at_ns.as_secs_f64()
        );
    }
    for phase in run.phases.iter().filter(|p| !p.loads.is_empty()) {
        let _ = writeln!(out, "Loads during phase {}:", safe(&phase.name));
        for l in &phase.loads {
            let _ = writeln!(
                out,
                "  {:<28} {} on CPU {} ({} {} in {:.1} s; {}, stop took {})",
                safe(&l.spec),
                l.rate.map_or("no work done".to_string(), |r| format!(
                    "{r:.1} {}",
                    safe(&l.rate_unit)
                )),
                latlab_model::spec::format_cpu_list(&l.cpus),
                l.work,
                safe(&l.unit),
                l.elapsed_ns.as_secs_f64(),
                safe(&l.ended),
                l.stop_ns,
            );
        }
    }
    // The noise probe's gaps are many: each CPU's noise-summary event speaks for them
    // (reports and `latlab show` list them all).
    for e in run.events.iter().filter(|e| e.kind != "noise") {
        let _ = writeln!(out, "Event: {}", safe(&e.message));
    }
    write_configuration(&mut out, run, (red, bold, reset));
    if !run.warnings.is_empty() {
        let _ = writeln!(out);
        for w in &run.warnings {
            let colour = if w.degrades { red } else { bold };
            let (code, message) = (safe(&w.code), safe(&w.message));
            let _ = writeln!(out, "{colour}WARNING{reset} [{code}] {message}");
        }
    }
    match run.verdict.status {
        Status::None => {}
        Status::Pass => {
            let _ = writeln!(
                out,
                "\n{green}PASS{reset}: {} held on all {} checks.",
                run.thresholds
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                run.verdict.checks.len()
            );
        }
        Status::Fail | Status::Undecided => {
            let (word, pick, what): (_, fn(&Check) -> bool, _) =
                if run.verdict.status == Status::Fail {
                    ("FAIL", Check::failed, "")
                } else {
                    (
                        "UNDECIDED",
                        |c| c.passed.is_none(),
                        " cannot be judged (a figure not known, or a bound below the limit)",
                    )
                };
            let _ = writeln!(out, "\n{red}{word}{reset}{what}:");
            for c in run.verdict.checks.iter().filter(|c| pick(c)) {
                let _ = writeln!(
                    out,
                    "  {} on {}: {} ({} samples)",
                    c.threshold,
                    safe(&c.stream),
                    c.observed_ns.map_or_else(
                        || if c.failed() {
                            "no samples"
                        } else {
                            "not known"
                        }
                        .to_string(),
                        |v| format!("observed {v}")
                    ),
                    run.streams
                        .iter()
                        .find(|s| format!("{} [{}]", s.label(), s.phase) == c.stream)
                        .map_or(0, |s| s.samples),
                );
            }
        }
    }
    out
}

/// The wake-up latency table.
fn timer_table(out: &mut String, run: &Run, streams: &[&Stream]) {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_FULL_CONDENSED);
    let phased = run.phases.len() > 1;
    let mut header = vec!["CPU"];
    if phased {
        header.insert(0, "phase");
        header.push("period");
    }
    header.extend([
        "policy",
        "samples",
        "min µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "mean µs",
        "stddev µs",
        "first µs",
        "missed",
        "early",
    ]);
    table.set_header(header);
    for s in streams {
        let st = &s.stats;
        let mut row = vec![Cell::new(s.cpu.map_or("-".to_string(), |c| c.to_string()))];
        if phased {
            row.insert(0, Cell::new(safe(&s.phase)));
            row.push(Cell::new(known(s.period_ns)));
        }
        row.extend([
            Cell::new(known(s.policy)),
            Cell::new(s.samples),
            Cell::new(stat(s, us(st.min_ns), st.min_ns.is_some())),
            Cell::new(stat(
                s,
                us_p(st.percentile(50.0)),
                st.percentile(50.0).is_some(),
            )),
            Cell::new(stat(
                s,
                us_p(st.percentile(99.0)),
                st.percentile(99.0).is_some(),
            )),
            Cell::new(stat(
                s,
                us_p(st.percentile(99.9)),
                st.percentile(99.9).is_some(),
            )),
            Cell::new(stat(s, us(st.max_ns), st.max_ns.is_some())),
            Cell::new(stat(s, us_f(st.mean_ns), st.mean_ns.is_some())),
            Cell::new(stat(s, us_f(st.stddev_ns), st.stddev_ns.is_some())),
            Cell::new(stat(s, us(s.first_sample_ns), s.first_sample_ns.is_some())),
            Cell::new(known(s.missed_periods)),
            Cell::new(known(s.early_wakes)),
        ]);
        table.add_row(row);
    }
    let first_number = if phased { 4 } else { 2 };
    for i in first_number..first_number + 11 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    let total: u64 = streams.iter().map(|s| s.samples).sum();
    let _ = writeln!(
        out,
        "Latency = wake-up − deadline; {total} samples in all. first = the very first \
         wake-up; missed = periods without a wake-up; early = wake-ups before the deadline."
    );
}

/// The primitive probes in the Rhealstone papers' shape: a row per primitive (and CPU),
/// columns min / mean / p99 / p99.9 / max / samples.
fn primitive_table(out: &mut String, streams: &[&Stream]) {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "primitive",
        "variant",
        "CPU",
        "samples",
        "min µs",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "missed",
    ]);
    for s in streams {
        let st = &s.stats;
        table.add_row(vec![
            Cell::new(safe(&s.probe)),
            Cell::new(s.method.as_deref().map_or("?".into(), safe)),
            Cell::new(s.cpu.map_or("-".to_string(), |c| c.to_string())),
            Cell::new(s.samples),
            Cell::new(us(st.min_ns)),
            Cell::new(us_f(st.mean_ns)),
            Cell::new(us_p(st.percentile(50.0))),
            Cell::new(us_p(st.percentile(99.0))),
            Cell::new(us_p(st.percentile(99.9))),
            Cell::new(us(st.max_ns)),
            Cell::new(known(s.missed_periods)),
        ]);
    }
    for i in 3..11 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    let total: u64 = streams.iter().map(|s| s.samples).sum();
    let _ = writeln!(
        out,
        "{total} samples in all; what each sample spans: latlab probes --long. missed = \
         cycles in which no sample could be taken."
    );
}

/// Longest configuration line in the summary; `latlab check` has the rest.
const CONFIGURATION_LINE: usize = 110;

/// The audit's warnings and failures that bear on these figures, one line each: the
/// preemption model, RT throttling when a measuring thread is busy (spin, hybrid),
/// frequency scaling, idle states when the run did not hold them off, SMT siblings,
/// IRQs on measured CPUs, virtualisation.
fn write_configuration(out: &mut String, run: &Run, (red, bold, reset): (&str, &str, &str)) {
    let Some(audit) = &run.audit else {
        return;
    };
    let busy = run
        .streams
        .iter()
        .any(|s| matches!(s.method.as_deref(), Some("spin" | "hybrid")));
    let idle_held = run
        .conditions
        .as_ref()
        .is_some_and(|c| c.dma_latency_us == Some(0));
    let relevant = |id: &str| match id {
        "preemption" | "cpufreq" | "smt" | "irq-affinity" | "virtualization" => true,
        "rt-throttling" => busy,
        "cpuidle" => !idle_held,
        _ => false,
    };
    let lines: Vec<String> = audit
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, CheckVerdict::Warn | CheckVerdict::Fail))
        .filter(|c| relevant(&c.id))
        .map(|c| {
            let colour = if c.verdict == CheckVerdict::Fail {
                red
            } else {
                bold
            };
            let text = format!("{}: {}", safe(&c.title), safe(&c.finding));
            let text = if text.chars().count() > CONFIGURATION_LINE {
                let kept: String = text.chars().take(CONFIGURATION_LINE - 1).collect();
                format!("{kept}…")
            } else {
                text
            };
            format!(
                "  {colour}{}{reset} {text}",
                c.verdict.as_str().to_ascii_uppercase()
            )
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nConfiguration that bears on these figures (latlab check -c {} shows evidence and fixes):",
        latlab_model::spec::format_cpu_list(&audit.cpus)
    );
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::audit::{Audit, CheckResult};

    fn example() -> Run {
        Run::from_json(include_str!("../../../docs/example-run.json")).unwrap()
    }

    fn result(id: &str, title: &str, verdict: CheckVerdict, finding: &str) -> CheckResult {
        CheckResult {
            id: id.into(),
            title: title.into(),
            verdict,
            finding: finding.into(),
            explanation: None,
            evidence: vec![],
            fix: Some("the fix".into()),
        }
    }

    fn with_audit(mut run: Run) -> Run {
        run.audit = Some(Audit {
            cpus: vec![0, 1],
            priority: 95,
            checks: vec![
                result(
                    "preemption",
                    "Preemption model",
                    CheckVerdict::Fail,
                    "not PREEMPT_RT",
                ),
                result(
                    "rt-throttling",
                    "RT throttling",
                    CheckVerdict::Warn,
                    "RT throttling is on",
                ),
                result(
                    "cpuidle",
                    "CPU idle states",
                    CheckVerdict::Warn,
                    "C6 enabled",
                ),
                result(
                    "thp",
                    "Transparent huge pages",
                    CheckVerdict::Warn,
                    "THP always",
                ),
                result(
                    "virtualization",
                    "Virtualisation",
                    CheckVerdict::Ok,
                    "bare metal",
                ),
            ],
        });
        run
    }

    #[test]
    fn the_summary_names_only_the_configuration_that_bears_on_the_figures() {
        let run = with_audit(example());
        assert_eq!(run.conditions.as_ref().unwrap().dma_latency_us, Some(0));
        let text = render(&run, false);
        assert!(text.contains("latlab check -c 0-1"), "{text}");
        assert!(
            text.contains("FAIL Preemption model: not PREEMPT_RT"),
            "{text}"
        );
        // Sleeping threads are not throttled; idle states were held off; THP and ok
        // checks are not about this result.
        for absent in ["RT throttling", "C6 enabled", "THP", "bare metal"] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
    }

    #[test]
    fn busy_threads_and_untuned_runs_bring_throttling_and_idle_states_in() {
        let mut run = with_audit(example());
        for s in &mut run.streams {
            s.method = Some("spin".into());
        }
        run.conditions.as_mut().unwrap().dma_latency_us = None;
        let text = render(&run, false);
        assert!(
            text.contains("WARN RT throttling: RT throttling is on"),
            "{text}"
        );
        assert!(text.contains("WARN CPU idle states: C6 enabled"), "{text}");
    }

    #[test]
    fn runs_without_an_audit_say_nothing_about_it() {
        let text = render(&example(), false);
        assert!(!text.contains("latlab check"), "{text}");
    }
}
