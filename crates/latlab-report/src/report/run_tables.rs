//! The tables of one run's report: statistics, the readiness audit, spikes, phases with
//! their loads, threshold checks and events.

use super::document::{Block, Table};
use super::figures::{self, DecodedRun, DecodedStream};
use latlab_model::audit::CheckVerdict;
use latlab_model::hist::LatencyHistogram;
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{Phase, ProbePlan, Run};
use latlab_model::Nanos;

/// The statistics table with its explanation, which streams had no samples, and the
/// drift of relative schedules.
pub(crate) fn statistics(decoded: &DecodedRun) -> Vec<Block> {
    let run = decoded.run;
    // Unknown, not 0, where a published table gave no sample count.
    let total = figures::cell(run.total_samples(), |n| n.to_string());
    // How exact the figures are: latlab's own are; an import's are its source's.
    let precision = match (&run.import, &run.published) {
        (_, Some(published)) => format!(
            "the figures are those {} printed (in {}), nothing derived: no histogram, no \
             percentiles, and ? where it printed none",
            published.table, published.unit
        ),
        (None, None) => "min, max, mean and stddev are exact, percentiles come from the \
                         histogram (within 0.1 %)"
            .to_string(),
        (Some(_), None) => format!(
            "min, max and mean are the figures {} printed, percentiles come from its \
             histogram (see what it lacked above)",
            run.tool.name
        ),
    };
    let mut blocks = vec![
        Block::Table(statistics_table(decoded)),
        Block::Paragraph(if run.streams.iter().all(|s| s.measures_wake_ups()) {
            format!(
                "{total} samples in all. Latency = wake-up − deadline, in µs; {precision}. \
                 first = the very first wake-up; missed periods = periods without a wake-up \
                 because one came more than a period late; early wakes = wake-ups before the \
                 deadline."
            )
        } else {
            format!(
                "{total} samples in all, in µs; what a sample spans is each probe's definition \
                 (latlab probes --long; the timer probe's is wake-up − deadline). {precision}. \
                 first = the first sample; missed periods = cycles without a sample."
            )
        }),
    ];
    if run.published.is_some() {
        blocks.push(Block::Paragraph(format!(
            "{} = not in the published table.",
            figures::NOT_IN_SOURCE
        )));
    } else if run.import.is_some() {
        blocks.push(Block::Paragraph(format!(
            "{} = not in the imported file; ≥ = a lower bound: the percentile falls among \
             samples beyond the source's histogram range.",
            figures::NOT_IN_SOURCE
        )));
    } else if run
        .streams
        .iter()
        .any(|s| s.stats.percentiles_ns.values().any(|p| p.is_bound()))
    {
        blocks.push(Block::Paragraph(
            "≥ = a lower bound: the percentile falls among samples beyond the histogram's \
             60 s range."
                .to_string(),
        ));
    }
    let empty: Vec<&str> = decoded
        .streams
        .iter()
        .filter(|s| s.stream.samples == 0)
        .map(|s| s.name.as_str())
        .collect();
    if !empty.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "no samples on {}: no statistics, and no line in the plots",
            empty.join(", ")
        )));
    }
    let drift: Vec<String> = decoded
        .streams
        .iter()
        .filter_map(|s| {
            let drift = s.stream.drift_ns?;
            let sleeps = s.stream.samples;
            Some(format!(
                "drift of the relative schedule on {}: {drift} after {sleeps} sleeps ({} per \
                 period)",
                s.name,
                Nanos(drift.0 / sleeps.max(1) as i64)
            ))
        })
        .collect();
    if !drift.is_empty() {
        blocks.push(Block::List(drift));
    }
    blocks
}

/// One row per stream: samples, percentiles, extremes, first sample, missed periods
/// and early wakes; the period too when streams differ in it, and the probe and method
/// unless every stream is the timer's with one method.
fn statistics_table(decoded: &DecodedRun) -> Table {
    let periods_differ = decoded
        .run
        .streams
        .windows(2)
        .any(|w| w[0].period_ns != w[1].period_ns);
    // The subtitle names one timer method; other probes, or several, need a column.
    let streams = &decoded.run.streams;
    let probes_differ = !streams.iter().all(|s| s.measures_wake_ups())
        || streams
            .windows(2)
            .any(|w| (&w[0].probe, &w[0].method) != (&w[1].probe, &w[1].method));
    let mut columns = vec![("stream", false)];
    if probes_differ {
        columns.extend([("probe", false), ("method", false)]);
    }
    columns.push(("policy", false));
    if periods_differ {
        columns.push(("period", true));
    }
    columns.extend([
        ("samples", true),
        ("min (µs)", true),
        ("p50 (µs)", true),
        ("p90 (µs)", true),
        ("p99 (µs)", true),
        ("p99.9 (µs)", true),
        ("p99.99 (µs)", true),
        ("max (µs)", true),
        ("mean (µs)", true),
        ("stddev (µs)", true),
        ("first (µs)", true),
        ("missed periods", true),
        ("early wakes", true),
    ]);
    let mut table = Table::new(&columns).captioned("Latency statistics per stream");
    for s in &decoded.streams {
        let (stream, st) = (s.stream, &s.stream.stats);
        let stat = |value: String, known: bool| figures::stat(Some(stream.samples), value, known);
        let mut cells = vec![s.name.clone()];
        if probes_differ {
            cells.push(stream.probe.clone());
            cells.push(figures::cell(stream.method.clone(), |m| m));
        }
        cells.push(figures::cell(stream.policy, |p| p.to_string()));
        if periods_differ {
            cells.push(figures::cell(stream.period_ns, |p| p.to_string()));
        }
        cells.push(stream.samples.to_string());
        cells.push(stat(figures::us(st.min_ns), st.min_ns.is_some()));
        for p in [50.0, 90.0, 99.0, 99.9, 99.99] {
            let value = st.percentile(p);
            cells.push(stat(figures::us_percentile(value), value.is_some()));
        }
        cells.extend([
            stat(figures::us(st.max_ns), st.max_ns.is_some()),
            stat(figures::us_f64(st.mean_ns), st.mean_ns.is_some()),
            stat(figures::us_f64(st.stddev_ns), st.stddev_ns.is_some()),
            stat(
                figures::us(stream.first_sample_ns),
                stream.first_sample_ns.is_some(),
            ),
            figures::cell(stream.missed_periods, |m| m.to_string()),
            figures::cell(stream.early_wakes, |e| e.to_string()),
        ]);
        table.push(cells, Some(s.colour));
    }
    table
}

/// The largest samples over every stream, and how many samples passed the threshold.
pub(crate) fn spikes(decoded: &DecodedRun) -> Vec<Block> {
    let top = decoded
        .run
        .plan
        .probes
        .iter()
        .filter_map(|p| match p {
            ProbePlan::Timer(t) => Some(t.top_spikes),
            ProbePlan::Primitive(_) => None,
        })
        .max()
        .unwrap_or(10)
        .clamp(1, 50);
    let mut all: Vec<(&DecodedStream, Nanos, Nanos)> = decoded
        .streams
        .iter()
        .flat_map(|s| {
            s.stream
                .spikes
                .top
                .iter()
                .map(move |t| (s, t.value_ns, t.at_ns))
        })
        .collect();
    all.sort_by_key(|(_, value, _)| std::cmp::Reverse(*value));
    if all.is_empty() {
        return vec![Block::Paragraph("No spikes were recorded.".to_string())];
    }
    let mut table = Table::new(&[
        ("#", true),
        ("stream", false),
        ("latency (µs)", true),
        ("at (s)", true),
    ])
    .captioned("The largest samples, largest first");
    for (rank, (s, value, at)) in all.iter().take(top).enumerate() {
        table.push(
            vec![
                (rank + 1).to_string(),
                s.name.clone(),
                figures::us(Some(*value)),
                format!("{:.3}", at.as_secs_f64()),
            ],
            Some(s.colour),
        );
    }
    let mut blocks = vec![
        Block::Paragraph(format!(
            "The {} largest samples over every stream; at = when it was due, from the start \
             of the stream's measured span.",
            top.min(all.len())
        )),
        Block::Table(table),
    ];
    let above: Vec<String> = decoded
        .streams
        .iter()
        .filter_map(|s| {
            let spikes = &s.stream.spikes;
            let threshold = spikes.threshold_ns?;
            let dropped = match spikes.above_threshold_dropped {
                0 => String::new(),
                n => format!(", {n} more not kept (raise --spike-nodes)"),
            };
            Some(format!(
                "{}: {} samples above {threshold}{dropped}",
                s.name,
                spikes.above_threshold.len()
            ))
        })
        .collect();
    if !above.is_empty() {
        blocks.push(Block::List(above));
    }
    blocks
}

/// How often each stream's samples were above the run's spike level: the rate per
/// hour with its 95 % interval, the mean time between spikes, and how long a run must
/// be to see one with 95 % confidence. Streams without a histogram or a measured span
/// are left out (their rate is unknown).
pub(crate) fn spike_rates(decoded: &DecodedRun) -> Vec<Block> {
    let level = rate::level_of(decoded.run);
    let rates: Vec<(&DecodedStream, SpikeRate)> = decoded
        .streams
        .iter()
        .filter_map(|s| Some((s, SpikeRate::of_stream(s.stream, level, rate::CONFIDENCE)?)))
        .collect();
    if rates.is_empty() {
        return Vec::new();
    }
    let mut table = Table::new(&[
        ("stream", false),
        ("spikes", true),
        ("in", true),
        ("per hour", true),
        ("95 % interval", true),
        ("mean time between", true),
        ("run to see one (95 %)", true),
    ])
    .captioned(format!("Samples above {level}, how often"));
    for (s, r) in &rates {
        table.push(
            vec![
                s.name.clone(),
                r.count.to_string(),
                figures::span(r.span_ns),
                figures::per_hour(r.per_hour),
                format!(
                    "{} – {}",
                    figures::per_hour(r.per_hour_low),
                    figures::per_hour(r.per_hour_high)
                ),
                r.mean_time_between()
                    .map_or_else(|| format!("> {}", figures::span(r.span_ns)), figures::span),
                r.time_to_first(rate::CONFIDENCE)
                    .map_or_else(|| figures::UNKNOWN.to_string(), figures::span),
            ],
            Some(s.colour),
        );
    }
    vec![
        Block::Paragraph(format!(
            "Samples above {level} (the run's --spike level, else its max threshold, else \
             100 µs), counted in each stream's histogram over its measured span and taken \
             as a Poisson process: the rate per hour with its exact 95 % interval, the \
             mean time between them, and how long a run must be to see one with 95 % \
             confidence at the low end of the rate (unknown before the first)."
        )),
        Block::Table(table),
    ]
}

/// One phase: when, how long, its streams merged, and its loads with their rates.
pub(crate) fn phase_blocks(decoded: &DecodedRun, phase: &Phase, level: usize) -> Vec<Block> {
    let streams: Vec<&DecodedStream> = decoded
        .streams
        .iter()
        .filter(|s| s.stream.phase == phase.name)
        .collect();
    let samples = figures::cell(decoded.run.phase_samples(&phase.name), |n| n.to_string());
    // Every stream's histogram, or none when one lacks it.
    let merged = streams
        .iter()
        .try_fold(LatencyHistogram::new(), |mut merged, s| {
            merged.merge(s.histogram.as_ref()?);
            Some(merged)
        });
    let worst = streams
        .iter()
        .rev()
        .filter_map(|s| s.stream.stats.max_ns.map(|m| (m, &s.name)))
        .max_by_key(|(m, _)| *m);
    let min = streams.iter().filter_map(|s| s.stream.stats.min_ns).min();
    let summary = match (worst, min) {
        (Some((max, name)), Some(min)) => {
            let p999 = merged
                .and_then(|m| m.percentile_within(99.9, min, max, decoded.run.bucket_edge()))
                .map_or_else(|| figures::UNKNOWN.to_string(), |p| p.to_string());
            format!(
                "; p99.9 of its samples {p999}, worst case {} on {name}",
                figures::us_unit(max)
            )
        }
        _ => String::new(),
    };
    let mut blocks = vec![
        Block::Heading {
            level,
            text: format!("Phase {}", phase.name),
        },
        Block::Paragraph(format!(
            "Started {}, measured {}; {} stream(s), {samples} samples{summary}.",
            figures::fact(phase.started_at.as_ref(), |t| t.clone()),
            figures::fact(phase.elapsed_ns, figures::seconds),
            streams.len(),
        )),
    ];
    if let Some(published) = &decoded.run.published {
        // A published row's load is the paper's words; latlab ran none.
        let load = published.load_of(&phase.name).unwrap_or(figures::UNKNOWN);
        blocks.push(Block::Paragraph(format!("Load, as published: {load}.")));
    } else if phase.loads.is_empty() {
        blocks.push(Block::Paragraph("No background load.".to_string()));
    } else {
        blocks.push(Block::Table(loads_table(phase)));
    }
    blocks
}

/// The readiness audit the run took before measuring (`latlab check`): how its checks
/// came out, and each check that failed or warned with what was found and the fix,
/// failures first.
pub(crate) fn audit(run: &Run) -> Vec<Block> {
    let Some(audit) = &run.audit else {
        let why = if run.published.is_some() {
            "its figures are published, not measured here"
        } else if run.import.is_some() {
            "the run was imported"
        } else {
            "the run was made with --no-audit"
        };
        return vec![Block::Paragraph(format!(
            "Not audited: {why}. latlab check audits this machine now."
        ))];
    };
    let counts: Vec<String> = CheckVerdict::ALL
        .into_iter()
        .rev()
        .map(|verdict| (verdict, audit.count(verdict)))
        .filter(|(_, n)| *n > 0)
        .map(|(verdict, n)| format!("{n} {verdict}"))
        .collect();
    let mut blocks = vec![Block::Paragraph(format!(
        "latlab check of CPUs {} for a task at priority {}, before measuring: {} checks, {}.",
        figures::cpu_list(&audit.cpus),
        audit.priority,
        audit.checks.len(),
        if counts.is_empty() {
            "none ran".to_string()
        } else {
            counts.join(", ")
        }
    ))];
    let mut flagged: Vec<_> = audit
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, CheckVerdict::Fail | CheckVerdict::Warn))
        .collect();
    // Failures first, each verdict in the order the checks ran.
    flagged.sort_by_key(|c| std::cmp::Reverse(c.verdict));
    // A list, not a table: findings and fixes are sentences, which a terminal's table
    // could not wrap.
    blocks.push(Block::List(
        flagged
            .iter()
            .map(|check| {
                let fix = check
                    .fix
                    .as_deref()
                    .map_or_else(String::new, |fix| format!(" Fix: {fix}"));
                format!(
                    "{} {}: {}.{fix}",
                    check.verdict.as_str().to_ascii_uppercase(),
                    check.title,
                    check.finding.trim_end_matches('.')
                )
            })
            .collect(),
    ));
    if !flagged.is_empty() {
        blocks.push(Block::Paragraph(
            "latlab check --json gives every check with its evidence.".to_string(),
        ));
    }
    blocks
}

/// A phase's loads with the rate each achieved and the CPU time its processes took
/// (`?` where the load's worker could not record it).
pub(crate) fn loads_table(phase: &Phase) -> Table {
    let mut table = Table::new(&[
        ("load", false),
        ("CPUs", false),
        ("rate", true),
        ("work", true),
        ("ran (s)", true),
        ("user CPU (s)", true),
        ("system CPU (s)", true),
        ("ended", false),
        ("stopped in", true),
        ("notes", false),
    ])
    .captioned(format!("Loads of phase {}", phase.name));
    for load in &phase.loads {
        table.push(
            vec![
                load.spec.clone(),
                figures::cpu_list(&load.cpus),
                load.rate.map_or_else(
                    || "no work done".to_string(),
                    |r| format!("{r:.1} {}", load.rate_unit),
                ),
                format!("{} {}", load.work, load.unit),
                format!("{:.3}", load.elapsed_ns.as_secs_f64()),
                load.cpu_time.map_or_else(
                    || "?".to_string(),
                    |t| format!("{:.3}", t.user_ns.as_secs_f64()),
                ),
                load.cpu_time.map_or_else(
                    || "?".to_string(),
                    |t| format!("{:.3}", t.system_ns.as_secs_f64()),
                ),
                load.ended.clone(),
                load.stop_ns.to_string(),
                load.notes.join("; "),
            ],
            None,
        );
    }
    table
}

/// Every threshold judged on every stream.
pub(crate) fn checks_table(run: &Run) -> Table {
    let mut table = Table::new(&[
        ("threshold", false),
        ("stream", false),
        ("observed (µs)", true),
        ("result", false),
    ])
    .captioned("Every threshold judged on every stream");
    for check in &run.verdict.checks {
        table.push(
            vec![
                format!("{} ≤ {}", check.threshold.metric, check.threshold.limit_ns),
                check.stream.clone(),
                match check.observed_ns {
                    Some(v) => figures::us_percentile(Some(v)),
                    None if check.failed() => "no samples".to_string(),
                    None => figures::NOT_IN_SOURCE.to_string(),
                },
                match check.passed {
                    Some(true) => "pass",
                    Some(false) => "FAIL",
                    None => "cannot be judged",
                }
                .to_string(),
            ],
            None,
        );
    }
    table
}

/// Notable events (a break trace that fired, ...).
pub(crate) fn events_table(decoded: &DecodedRun) -> Table {
    let mut table = Table::new(&[
        ("event", false),
        ("CPU", false),
        ("at (s)", true),
        ("sample (µs)", true),
        ("what happened", false),
    ])
    .captioned("Events during the run");
    for event in &decoded.run.events {
        table.push(
            vec![
                event.kind.clone(),
                event
                    .cpu
                    .map_or_else(|| format!("thread {}", event.thread), |c| c.to_string()),
                format!("{:.3}", event.at_ns.as_secs_f64()),
                figures::us(event.value_ns),
                event.message.clone(),
            ],
            None,
        );
    }
    table
}

#[cfg(test)]
mod tests {
    use crate::report::{render, ReportKind};
    use latlab_model::published::reference_run;

    /// Table 5 gives no sample counts: its rows are no streams, and how many samples
    /// they had is unknown, not 0.
    #[test]
    fn a_table_without_counts_reports_its_samples_unknown() {
        let run = reference_run("rr-table5").unwrap();
        insta::assert_snapshot!(render(&[run], ReportKind::Text).unwrap());
    }
}
