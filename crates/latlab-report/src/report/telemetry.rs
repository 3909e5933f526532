//! Telemetry beside the timeline: which series the spikes coincide with, the sources
//! this machine lacks, and the most relevant series interval by interval (a table:
//! the correlated series, else the busiest IRQs).

use super::document::{Block, Table};
use latlab_model::run::Run;
use latlab_model::telemetry::{Series, SeriesKind, Telemetry};

/// Series shown interval by interval in the report.
const SHOWN_SERIES: usize = 4;
/// Intervals shown per series, at most (the first ones).
const SHOWN_INTERVALS: usize = 30;

/// The lines of the run summary: correlations, or that there were none, and the
/// unknown sources.
pub(crate) fn summary(run: &Run) -> Vec<Block> {
    let Some(telemetry) = &run.telemetry else {
        return Vec::new();
    };
    let mut lines = findings(telemetry);
    lines.extend(telemetry.unknown_lines());
    lines.extend(telemetry.notes.iter().cloned());
    vec![Block::Paragraph(heading(telemetry)), Block::List(lines)]
}

/// The report's section: the summary's lines and a table of the most relevant
/// series.
pub(crate) fn section(run: &Run) -> Vec<Block> {
    let Some(telemetry) = &run.telemetry else {
        return Vec::new();
    };
    let mut blocks = summary(run);
    if let Some(table) = series_table(telemetry) {
        blocks.push(Block::Table(table));
    }
    blocks
}

fn heading(telemetry: &Telemetry) -> String {
    let interval = telemetry
        .phases
        .first()
        .map_or_else(|| "?".to_string(), |p| p.interval_ns.to_string());
    let on = match telemetry.sampler_cpu {
        Some(cpu) => format!("from CPU {cpu}"),
        None => "on the measured CPUs".to_string(),
    };
    format!("Telemetry (sampled every {interval} {on}):")
}

/// The correlation sentences, or that no series coincided.
fn findings(telemetry: &Telemetry) -> Vec<String> {
    if telemetry.correlations.is_empty() {
        let series: usize = telemetry.phases.iter().map(|p| p.series.len()).sum();
        return vec![format!(
            "the spikes coincide with no series' bursts beyond chance ({series} series kept; \
             see docs/run-format.md for the test)"
        )];
    }
    telemetry
        .correlations
        .iter()
        .map(|c| c.sentence())
        .collect()
}

/// The most relevant series: the correlated ones, else the IRQs and softirqs with the
/// most counts.
fn relevant(telemetry: &Telemetry) -> Vec<(&str, &Series)> {
    let all = || {
        telemetry
            .phases
            .iter()
            .flat_map(|p| p.series.iter().map(move |s| (p.phase.as_str(), s)))
    };
    let mut chosen: Vec<(&str, &Series)> = telemetry
        .correlations
        .iter()
        .filter_map(|c| {
            all().find(|(phase, s)| {
                *phase == c.phase && s.cpu == c.cpu && s.kind == c.kind && s.name == c.name
            })
        })
        .collect();
    if chosen.is_empty() {
        let mut counted: Vec<_> = all()
            .filter(|(_, s)| matches!(s.kind, SeriesKind::Irq | SeriesKind::Softirq))
            .collect();
        counted.sort_by_key(|(_, s)| std::cmp::Reverse(s.total()));
        chosen = counted;
    }
    chosen.truncate(SHOWN_SERIES);
    chosen
}

/// The relevant series interval by interval, one row per interval.
fn series_table(telemetry: &Telemetry) -> Option<Table> {
    let chosen = relevant(telemetry);
    let longest = chosen.iter().map(|(_, s)| s.values.len()).max()?;
    let titles: Vec<String> = chosen
        .iter()
        .map(|(_, s)| format!("{} cpu {} ({} per interval)", s.title(), s.cpu, s.unit))
        .collect();
    let mut columns: Vec<(&str, bool)> = vec![("interval", true)];
    columns.extend(titles.iter().map(|t| (t.as_str(), true)));
    let interval = telemetry.phases.first().map(|p| p.interval_ns)?;
    let mut table = Table::new(&columns).captioned(format!(
        "The most relevant series per interval of {interval} (a table in place of a plot; \
         the first {} of {longest} intervals; ? = unknown)",
        SHOWN_INTERVALS.min(longest)
    ));
    for i in 0..longest.min(SHOWN_INTERVALS) {
        let mut cells = vec![(i + 1).to_string()];
        cells.extend(
            chosen
                .iter()
                .map(|(_, s)| match s.values.get(i).copied().flatten() {
                    Some(v) => v.to_string(),
                    None => "?".to_string(),
                }),
        );
        table.push(cells, None);
    }
    Some(table)
}
