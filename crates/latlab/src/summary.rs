//! The final summary: the statistics table with units and sample counts, first
//! samples, drift, warnings and the verdict.

use comfy_table::{presets, Cell, CellAlignment, Table};
use latlab_model::run::{Run, Stream};
use latlab_model::threshold::Status;
use latlab_model::Nanos;
use std::fmt::Write as _;

fn us(v: Option<Nanos>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n.as_micros_f64()))
}

fn us_f(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |n| format!("{:.3}", n / 1e3))
}

/// Renders a Run's summary as text (`color` adds ANSI emphasis for terminals).
pub fn render(run: &Run, color: bool) -> String {
    let (bold, red, green, reset) = if color {
        ("\x1b[1m", "\x1b[1;31m", "\x1b[1;32m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let mut out = String::new();
    let period = run
        .streams
        .first()
        .map(|s| s.period_ns)
        .filter(|_| !run.is_unknown("streams[].period_ns"));
    let measured = if run.is_unknown("phases[].elapsed_ns") {
        "time unknown".to_string()
    } else {
        let secs: f64 = run.phases.iter().map(|p| p.elapsed_ns.as_secs_f64()).sum();
        format!("{secs:.1} s")
    };
    let what = match &run.scenario {
        Some(name) => format!("scenario {name}, {} phase(s)", run.phases.len()),
        None => format!(
            "{} · period {}",
            run.streams
                .first()
                .filter(|_| !run.is_unknown("streams[].method"))
                .map_or("-", |s| s.method.as_str()),
            period.map_or("-".to_string(), |p| p.to_string())
        ),
    };
    let probe = run.streams.first().map_or("timer", |s| s.probe.as_str());
    let host = if run.is_unknown("host") {
        "an unknown host".to_string()
    } else {
        format!(
            "{} {} ({}, {})",
            run.host.hostname,
            run.host.kernel_release,
            match &run.host.preemption.dynamic_mode {
                Some(mode) => format!("{} ({mode})", run.host.preemption.model),
                None => run.host.preemption.model.clone(),
            },
            match &run.host.virtualization {
                Some(v) => v.as_str(),
                None if run.import.is_some() => "virtualisation unknown",
                None => "bare metal",
            },
        )
    };
    let _ = writeln!(
        out,
        "{bold}{} {probe}{reset} · {what} · {measured} on {host}",
        run.tool.name
    );
    if let Some(import) = &run.import {
        let _ = writeln!(
            out,
            "Imported from {} ({}) at {}; the source lacked:",
            import.file, import.format, import.imported_at
        );
        for lack in &import.lacks {
            let _ = writeln!(out, "  - {lack}");
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
        run.streams.iter().partition(|s| is_wake_up(s));
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
            s.label(),
            s.drift_ns.unwrap_or_default(),
            s.samples + s.warm_up_samples,
            Nanos(s.drift_ns.unwrap_or_default().0 / (s.samples + s.warm_up_samples).max(1) as i64),
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
            worst.0.label(),
            worst.1.at_ns.as_secs_f64()
        );
    }
    for phase in run.phases.iter().filter(|p| !p.loads.is_empty()) {
        let _ = writeln!(out, "Loads during phase {}:", phase.name);
        for l in &phase.loads {
            let _ = writeln!(
                out,
                "  {:<28} {} on CPU {} ({} {} in {:.1} s; {}, stop took {})",
                l.spec,
                l.rate.map_or("no work done".to_string(), |r| format!(
                    "{r:.1} {}",
                    l.rate_unit
                )),
                latlab_model::spec::format_cpu_list(&l.cpus),
                l.work,
                l.unit,
                l.elapsed_ns.as_secs_f64(),
                l.ended,
                l.stop_ns,
            );
        }
    }
    // The noise probe's gaps are many: each CPU's noise-summary event speaks for them
    // (reports and `latlab show` list them all).
    for e in run.events.iter().filter(|e| e.kind != "noise") {
        let _ = writeln!(out, "Event: {}", e.message);
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(out);
        for w in &run.warnings {
            let colour = if w.degrades { red } else { bold };
            let _ = writeln!(out, "{colour}WARNING{reset} [{}] {}", w.code, w.message);
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
        Status::Fail => {
            let _ = writeln!(out, "\n{red}FAIL{reset}:");
            for c in run.verdict.checks.iter().filter(|c| !c.passed) {
                let _ = writeln!(
                    out,
                    "  {} on {}: {} ({} samples)",
                    c.threshold,
                    c.stream,
                    c.observed_ns
                        .map_or("no samples".to_string(), |v| format!("observed {v}")),
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

/// Whether a stream measures wake-ups against deadlines (the timer probe, and the
/// imported timer-like results), as opposed to a primitive probe.
fn is_wake_up(s: &Stream) -> bool {
    s.probe == "timer" || s.probe.starts_with("timerlat")
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
            row.insert(0, Cell::new(&s.phase));
            row.push(Cell::new(s.period_ns.to_string()));
        }
        let known = |path: &str, value: String| {
            if run.is_unknown(path) {
                "?".to_string()
            } else {
                value
            }
        };
        row.extend([
            Cell::new(known("streams[].policy", s.policy.to_string())),
            Cell::new(s.samples),
            Cell::new(us(st.min_ns)),
            Cell::new(us(st.percentile(50.0))),
            Cell::new(us(st.percentile(99.0))),
            Cell::new(us(st.percentile(99.9))),
            Cell::new(us(st.max_ns)),
            Cell::new(us_f(st.mean_ns)),
            Cell::new(us_f(st.stddev_ns)),
            Cell::new(us(s.first_sample_ns)),
            Cell::new(known(
                "streams[].missed_periods",
                s.missed_periods.to_string(),
            )),
            Cell::new(known("streams[].early_wakes", s.early_wakes.to_string())),
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
            Cell::new(&s.probe),
            Cell::new(&s.method),
            Cell::new(s.cpu.map_or("-".to_string(), |c| c.to_string())),
            Cell::new(s.samples),
            Cell::new(us(st.min_ns)),
            Cell::new(us_f(st.mean_ns)),
            Cell::new(us(st.percentile(50.0))),
            Cell::new(us(st.percentile(99.0))),
            Cell::new(us(st.percentile(99.9))),
            Cell::new(us(st.max_ns)),
            Cell::new(s.missed_periods),
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
