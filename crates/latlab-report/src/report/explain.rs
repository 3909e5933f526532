//! What got in the way: the blocks that show a Run's [`Explain`] — how it was traced,
//! what the kernel could not attribute, what tracing cost, the catalogue of causes per
//! phase and CPU and the largest spikes cut into their parts. `latlab explain`, the
//! report's section of that name and the catalogue `latlab run` ends with are all
//! made of them, so they say the same.
//!
//! Times are in µs with one decimal: trace timestamps are good to a few hundred ns,
//! and a tenth of a µs is what tells two parts apart. A figure the trace did not give
//! is `?` or `unknown`, never 0.

use super::bars::{BarRow, Bars, Colour, Segment};
use super::document::{Block, Severity, Table};
use super::figures;
use latlab_model::explain::{
    AbSide, Cause, CauseTotal, Coverage, Explain, Explanation, Stages, WindowEvent,
};
use latlab_model::Nanos;

/// Causes per phase and CPU the catalogue at the end of a run lists.
const SUMMARY_CAUSES: usize = 5;
/// Spikes the report's bars show.
const BAR_SPIKES: usize = 10;

/// A time with its unit, one decimal: `812.3 µs`.
pub(crate) fn us(value: Nanos) -> String {
    format!("{} µs", us_cell(value))
}

/// A time in µs, one decimal, for a cell whose column gives the unit.
fn us_cell(value: Nanos) -> String {
    format!("{:.1}", value.as_micros_f64())
}

/// A time relative to the deadline, signed: `+12.3`, `-4.0`.
fn signed_us_cell(value: Nanos) -> String {
    format!("{:+.1}", value.as_micros_f64())
}

/// A share in percent, one decimal, without the unit (`–` when unknown).
fn percent_cell(share: Option<f64>) -> String {
    share.map_or_else(
        || figures::MISSING.to_string(),
        |s| format!("{:.1}", s * 100.0),
    )
}

/// The spikes kept in full, largest first (they are stored so; sorted again so the
/// numbering never depends on it).
pub(crate) fn ranked(explain: &Explain) -> Vec<&Explanation> {
    let mut spikes: Vec<&Explanation> = explain.spikes.iter().collect();
    spikes.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
    spikes
}

/// Where a spike was: `CPU 1, phase main`.
fn place(cpu: Option<usize>, phase: &str) -> String {
    let cpu = cpu.map_or_else(
        || "CPU unknown (not pinned)".to_string(),
        |c| format!("CPU {c}"),
    );
    format!("{cpu}, phase {phase}")
}

/// When tracing was not possible at all: why, and the fix.
pub(crate) fn unavailable(explain: &Explain) -> Option<Block> {
    let reason = explain.unavailable.as_ref()?;
    Some(Block::Alert {
        severity: Severity::Warning,
        title: "No explanation: the kernel's events could not be traced".to_string(),
        lines: vec![
            reason.clone(),
            "the latency figures are valid; only the explanation of the spikes is missing"
                .to_string(),
        ],
    })
}

/// How the run was traced: mode, events, clock, buffer and how the reader kept up.
pub(crate) fn tracing_facts(explain: &Explain) -> Block {
    let r = &explain.reader;
    let events = if explain.events.is_empty() {
        "none".to_string()
    } else {
        format!(
            "{} events: {}",
            explain.events.len(),
            explain.events.join(", ")
        )
    };
    let reader = format!(
        "{}; {} pages, {} events read; at most {} KiB held",
        r.cpu
            .map_or_else(|| "not pinned".to_string(), |c| format!("on CPU {c}")),
        r.pages,
        r.events,
        r.held_bytes_max.div_ceil(1024)
    );
    let losses = format!(
        "{} events overwritten before they were read (overrun); {} pages marked with \
         events missing before them",
        r.overrun, r.pages_with_missing_events
    );
    Block::Facts(vec![
        ("mode".to_string(), explain.mode.name().to_string()),
        ("events".to_string(), events),
        (
            "trace clock".to_string(),
            figures::fact(explain.clock.clone(), |c| c),
        ),
        (
            "buffer".to_string(),
            figures::fact(explain.buffer_kb, |kb| format!("{kb} KiB per CPU")),
        ),
        ("reader".to_string(), reader),
        ("lost".to_string(), losses),
        (
            "reader's largest lag".to_string(),
            figures::fact(explain.reader.max_lag_ns, us),
        ),
    ])
}

/// What this kernel cannot attribute, said once.
pub(crate) fn limits(explain: &Explain) -> Option<Block> {
    (!explain.limits.is_empty()).then(|| Block::Alert {
        severity: Severity::Note,
        title: "What this kernel cannot attribute".to_string(),
        lines: explain.limits.clone(),
    })
}

/// The observer effect: the A/B of tracing off and on, with the shifts.
pub(crate) fn observer(explain: &Explain) -> Vec<Block> {
    let Some(ab) = &explain.observer else {
        return vec![Block::Paragraph(
            "The cost of tracing was not measured in this run (no A/B of tracing off and \
             on)."
                .to_string(),
        )];
    };
    let mut table = Table::new(&[
        ("tracing", false),
        ("samples", true),
        ("min (µs)", true),
        ("p50 (µs)", true),
        ("p99 (µs)", true),
    ])
    .captioned("The observer effect: the same measurement with the events off and on");
    let row = |name: &str, side: &AbSide| {
        vec![
            name.to_string(),
            side.samples.to_string(),
            side.min_ns
                .map_or_else(|| figures::MISSING.to_string(), us_cell),
            side.p50_ns
                .map_or_else(|| figures::MISSING.to_string(), us_cell),
            side.p99_ns
                .map_or_else(|| figures::MISSING.to_string(), us_cell),
        ]
    };
    table.push(row("off", &ab.off), None);
    table.push(row("on", &ab.on), None);
    let shift = |off: Option<Nanos>, on: Option<Nanos>| match (off, on) {
        (Some(off), Some(on)) if off.0 > 0 => {
            format!("{:+.1} %", (on.0 - off.0) as f64 / off.0 as f64 * 100.0)
        }
        _ => figures::MISSING.to_string(),
    };
    table.push(
        vec![
            "shift, on against off".to_string(),
            String::new(),
            shift(ab.off.min_ns, ab.on.min_ns),
            shift(ab.off.p50_ns, ab.on.p50_ns),
            shift(ab.off.p99_ns, ab.on.p99_ns),
        ],
        None,
    );
    vec![Block::Table(table)]
}

/// How many spikes were seen, explained and not.
pub(crate) fn counts(explain: &Explain) -> Block {
    let total: i64 = explain.spike_time.iter().map(|t| t.total_ns.0).sum();
    let unexplained: i64 = explain
        .catalogue
        .iter()
        .filter(|c| matches!(c.cause, Cause::Unexplained { .. }))
        .map(|c| c.total_ns.0)
        .sum();
    let share = (total > 0).then(|| unexplained as f64 / total as f64);
    Block::Facts(vec![
        (
            "spikes seen".to_string(),
            format!(
                "{} (samples above the spike threshold)",
                explain.spikes_seen
            ),
        ),
        (
            "explained".to_string(),
            format!(
                "{} from a complete window of events",
                explain.spikes_explained
            ),
        ),
        (
            "incomplete".to_string(),
            format!(
                "{} explained from a window with events lost (their unexplained part may \
                 hide a cause)",
                explain.spikes_incomplete
            ),
        ),
        (
            "not explained".to_string(),
            format!(
                "{} (their thread not pinned (SCHED_DEADLINE), their events no longer \
                 held, or the spike queue full; the Run's limits say which)",
                explain.spikes_unexplained
            ),
        ),
        (
            "unexplained time".to_string(),
            match share {
                Some(s) => format!(
                    "{} of {} of spike time ({:.1} %): no guest event shows what the CPU did",
                    us(Nanos(unexplained)),
                    us(Nanos(total)),
                    s * 100.0
                ),
                None => figures::UNKNOWN.to_string(),
            },
        ),
    ])
}

/// The phases and CPUs of the catalogue, in the order of their spike time.
fn groups(explain: &Explain) -> Vec<(String, Option<usize>)> {
    let mut groups: Vec<(String, Option<usize>)> = explain
        .spike_time
        .iter()
        .map(|t| (t.phase.clone(), t.cpu))
        .collect();
    for c in &explain.catalogue {
        if !groups.iter().any(|(p, cpu)| *p == c.phase && *cpu == c.cpu) {
            groups.push((c.phase.clone(), c.cpu));
        }
    }
    groups
}

/// The catalogue of one phase and CPU, largest total first.
fn entries<'a>(explain: &'a Explain, phase: &str, cpu: Option<usize>) -> Vec<&'a CauseTotal> {
    let mut entries: Vec<&CauseTotal> = explain
        .catalogue
        .iter()
        .filter(|c| c.phase == phase && c.cpu == cpu)
        .collect();
    entries.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.cause.cmp(&b.cause)));
    entries
}

/// The catalogue: per phase and CPU (a heading of `level` each), what got in the way,
/// then the wake-up's own path apart; `limit` causes of each at most.
pub(crate) fn catalogue(explain: &Explain, limit: Option<usize>, level: usize) -> Vec<Block> {
    let mut blocks = Vec::new();
    for (phase, cpu) in groups(explain) {
        let base = explain
            .spike_time
            .iter()
            .find(|t| t.phase == phase && t.cpu == cpu);
        blocks.push(Block::Heading {
            level,
            text: format!(
                "{}: {}",
                place(cpu, &phase),
                base.map_or_else(
                    || "explained spikes (spike time unknown)".to_string(),
                    |b| format!(
                        "{} explained spikes, {} of spike time",
                        b.spikes,
                        us(b.total_ns)
                    ),
                )
            ),
        });
        let explained = base.map(|b| b.spikes);
        let (own, others): (Vec<&CauseTotal>, Vec<&CauseTotal>) = entries(explain, &phase, cpu)
            .into_iter()
            .partition(|c| c.cause.is_own_path());
        for (entries, what) in [
            (others, "What got in the way"),
            (
                own,
                "The wake-up's own path (timer interrupt, scheduler, return to user), \
                 apart from what got in the way",
            ),
        ] {
            if entries.is_empty() {
                continue;
            }
            let shown = limit.unwrap_or(entries.len()).min(entries.len());
            let what = if shown < entries.len() {
                format!("{what} ({shown} largest of {}):", entries.len())
            } else {
                format!("{what}:")
            };
            blocks.push(Block::Paragraph(what));
            let mut table = Table::new(&[
                ("cause", false),
                ("kind", false),
                ("spikes", true),
                ("total (µs)", true),
                ("max (µs)", true),
                ("share (%)", true),
            ]);
            for entry in entries.iter().take(shown) {
                table.push(
                    vec![
                        entry.cause.label(),
                        entry.cause.kind_name().to_string(),
                        explained.map_or_else(
                            || entry.spikes.to_string(),
                            |n| format!("{} of {n}", entry.spikes),
                        ),
                        us_cell(entry.total_ns),
                        us_cell(entry.max_ns),
                        percent_cell(explain.share(entry)),
                    ],
                    None,
                );
            }
            blocks.push(Block::Table(table));
        }
    }
    if blocks.is_empty() {
        blocks.push(Block::Paragraph(
            "No spike was explained, so there is no catalogue of causes.".to_string(),
        ));
    }
    blocks
}

/// A spike in one line: `812.3 µs on CPU 1, phase main, due at 0.532 s`.
fn spike_line(e: &Explanation) -> String {
    format!(
        "{} on {}, due at {:.3} s",
        us(e.latency_ns),
        place(e.cpu, &e.phase),
        e.at_ns.as_secs_f64()
    )
}

/// The stages of a wake-up in one line; a stage whose ending event was not seen is `?`.
fn stages_line(s: &Stages) -> String {
    let stage = |name: &str, value: Option<Nanos>| {
        format!("{name} {}", value.map_or_else(|| "?".to_string(), us))
    };
    [
        stage("delivery", s.delivery_ns),
        stage("handler", s.handler_ns),
        stage("scheduling", s.scheduling_ns),
        stage("return", s.return_ns),
    ]
    .join(" · ")
}

/// What a window's coverage means.
fn coverage_line(coverage: Coverage) -> &'static str {
    match coverage {
        Coverage::Complete => "every event of the window was read",
        Coverage::EventsLost => {
            "events of this CPU were lost in the window: the unexplained part may hide a cause"
        }
    }
}

/// The unexplained part of a spike, said explicitly, with the tasks that were current.
fn unexplained_line(e: &Explanation) -> String {
    let unexplained = e.unexplained_ns();
    let share = if e.latency_ns.0 > 0 {
        format!(
            " ({:.1} %)",
            unexplained.0 as f64 / e.latency_ns.0 as f64 * 100.0
        )
    } else {
        String::new()
    };
    let mut current: Vec<&str> = e
        .parts
        .iter()
        .filter_map(|p| match &p.cause {
            Cause::Unexplained { current } => current.as_deref(),
            _ => None,
        })
        .collect();
    current.dedup();
    let current = if current.is_empty() {
        String::new()
    } else {
        format!("; current then, not blamed: {}", current.join(", "))
    };
    format!(
        "unexplained: {}{share}: no guest event shows what the CPU did (on a virtual \
         machine the host, else an SMI or interrupts off){current}",
        us(unexplained)
    )
}

/// The named parts of a spike, largest first.
fn parts_line(e: &Explanation) -> String {
    let mut parts: Vec<_> = e
        .parts
        .iter()
        .filter(|p| !matches!(p.cause, Cause::Unexplained { .. }))
        .collect();
    if parts.is_empty() {
        return "parts: none named".to_string();
    }
    parts.sort_by_key(|p| std::cmp::Reverse(p.duration_ns));
    let named: Vec<String> = parts
        .iter()
        .map(|p| format!("{} {}", p.cause.label(), us(p.duration_ns)))
        .collect();
    format!("parts, largest first: {}", named.join(" · "))
}

/// The `top` largest spikes, each under a heading of `level` in a few lines.
pub(crate) fn largest_spikes(explain: &Explain, top: usize, level: usize) -> Vec<Block> {
    let spikes = ranked(explain);
    if spikes.is_empty() {
        return vec![Block::Paragraph(
            "No spike was kept in full, so none can be shown part by part.".to_string(),
        )];
    }
    let mut blocks = vec![Block::Paragraph(format!(
        "The {} largest of the {} spikes kept in full (latlab explain RUN --spike N shows \
         spike N event by event). Stages: delivery = deadline → timer interrupt, handler = \
         until the thread was woken, scheduling = until it ran, return = until it read the \
         clock; ? = the event that ends the stage was not seen.",
        top.min(spikes.len()),
        spikes.len()
    ))];
    for (rank, e) in spikes.iter().take(top).enumerate() {
        blocks.push(Block::Heading {
            level,
            text: format!("Spike #{}: {}", rank + 1, spike_line(e)),
        });
        blocks.push(Block::List(vec![
            format!("stages: {}", stages_line(&e.stages)),
            parts_line(e),
            unexplained_line(e),
            format!("events: {}", coverage_line(e.coverage)),
        ]));
    }
    blocks
}

/// One spike, `rank` (1-based) of the spikes kept in full: its timeline event by
/// event, then its parts. `None` when there is no such spike.
pub(crate) fn spike_timeline(explain: &Explain, rank: usize, level: usize) -> Option<Vec<Block>> {
    let e = *ranked(explain).get(rank.checked_sub(1)?)?;
    let mut blocks = vec![
        Block::Heading {
            level,
            text: format!("Spike #{rank}: {}", spike_line(e)),
        },
        Block::Facts(vec![
            ("stages".to_string(), stages_line(&e.stages)),
            ("events".to_string(), coverage_line(e.coverage).to_string()),
            ("thread".to_string(), e.thread.to_string()),
        ]),
    ];
    let mut timeline = Table::new(&[("t (µs)", true), ("event", false), ("detail", false)])
        .captioned(match e.events_left_out {
            0 => format!(
                "The window's {} events, in time order; t from the deadline",
                e.events.len()
            ),
            n => format!(
                "{} of the window's {} events, in time order (the {n} in the middle left \
                 out); t from the deadline",
                e.events.len(),
                e.events.len() as u64 + n
            ),
        });
    // The events nearest the wake-up are the last half listed.
    let middle = e
        .events
        .len()
        .checked_sub(latlab_model::explain::MAX_LISTED_EVENTS / 2);
    for (
        i,
        WindowEvent {
            t_ns,
            event,
            detail,
        },
    ) in e.events.iter().enumerate()
    {
        if e.events_left_out > 0 && Some(i) == middle {
            timeline.push(
                vec![
                    String::new(),
                    format!("… {} events left out …", e.events_left_out),
                    String::new(),
                ],
                None,
            );
        }
        timeline.push(
            vec![signed_us_cell(*t_ns), event.clone(), detail.clone()],
            None,
        );
    }
    if e.events.is_empty() {
        blocks.push(Block::Paragraph(
            "No event of the window was kept.".to_string(),
        ));
    } else {
        blocks.push(Block::Table(timeline));
    }
    let mut parts = Table::new(&[
        ("cause", false),
        ("stage", false),
        ("start (µs)", true),
        ("duration (µs)", true),
        ("share (%)", true),
    ])
    .captioned(format!(
        "The parts, in time order: they add up to the sample ({} of {})",
        us(e.parts_total_ns()),
        us(e.latency_ns)
    ));
    for p in &e.parts {
        let share = (e.latency_ns.0 > 0).then(|| p.duration_ns.0 as f64 / e.latency_ns.0 as f64);
        parts.push(
            vec![
                p.cause.label(),
                stage_name(p.stage).to_string(),
                signed_us_cell(p.start_ns),
                us_cell(p.duration_ns),
                percent_cell(share),
            ],
            None,
        );
    }
    blocks.push(Block::Table(parts));
    blocks.push(Block::Paragraph(unexplained_line(e)));
    Some(blocks)
}

fn stage_name(stage: latlab_model::explain::Stage) -> &'static str {
    use latlab_model::explain::Stage;
    match stage {
        Stage::Delivery => "delivery",
        Stage::Handler => "handler",
        Stage::Scheduling => "scheduling",
        Stage::Return => "return",
    }
}

/// The colour of a kind of cause: the palette's, grey for what no event explains.
fn colour_of(cause: &Cause) -> Colour {
    match cause {
        Cause::Thread { .. } => Colour::Palette(0),
        Cause::Irq { .. } => Colour::Palette(1),
        Cause::Softirq { .. } => Colour::Palette(2),
        Cause::Nmi { .. } => Colour::Palette(3),
        Cause::Vector { .. } => Colour::Palette(4),
        Cause::IdleExit { .. } => Colour::Palette(5),
        Cause::TimerInterrupt => Colour::Palette(8),
        Cause::Scheduler => Colour::Palette(11),
        Cause::ReturnToUser => Colour::Palette(12),
        Cause::Unexplained { .. } => Colour::Grey,
    }
}

/// The largest spikes as stacked bars, each cut into its parts in time order.
pub(crate) fn bars(explain: &Explain) -> Option<Block> {
    let spikes = ranked(explain);
    if spikes.is_empty() {
        return None;
    }
    let shown: Vec<&Explanation> = spikes.into_iter().take(BAR_SPIKES).collect();
    let mut legend: Vec<(String, Colour)> = Vec::new();
    let rows = shown
        .iter()
        .enumerate()
        .map(|(rank, e)| BarRow {
            label: format!(
                "#{} {} (CPU {})",
                rank + 1,
                us(e.latency_ns),
                e.cpu.map_or_else(|| "?".to_string(), |c| c.to_string())
            ),
            segments: e
                .parts
                .iter()
                .map(|p| {
                    let colour = colour_of(&p.cause);
                    let kind = p.cause.kind_name().to_string();
                    if !legend.iter().any(|(k, _)| *k == kind) {
                        legend.push((kind, colour));
                    }
                    Segment {
                        title: format!("{}: {}", p.cause.label(), us(p.duration_ns)),
                        value: p.duration_ns.as_micros_f64(),
                        colour,
                    }
                })
                .collect(),
        })
        .collect();
    Some(Block::Bars(Bars {
        caption: format!(
            "The {} largest spikes, cut into what their latency went to",
            shown.len()
        ),
        explanation: "Each bar is one spike, its parts in time order from the deadline: \
                      a colour per kind of cause, grey where no event shows what the CPU did \
                      (unexplained). Hover a part for its cause and length."
            .to_string(),
        x_label: "time from the deadline (µs)".to_string(),
        rows,
        legend,
    }))
}

/// The report's section: everything, under headings one level below `level`.
pub(crate) fn section(explain: &Explain, level: usize) -> Vec<Block> {
    let heading = |text: &str| Block::Heading {
        level,
        text: text.to_string(),
    };
    let mut blocks = vec![Block::Paragraph(
        "Every sample above the spike threshold, explained from the kernel's events on its \
         CPU between its deadline and its wake: what got in the way, and what no event \
         explains."
            .to_string(),
    )];
    if let Some(alert) = unavailable(explain) {
        blocks.push(alert);
        return blocks;
    }
    blocks.push(counts(explain));
    blocks.extend(limits(explain));
    blocks.push(heading("Causes"));
    blocks.extend(catalogue(explain, None, level + 1));
    blocks.extend(bars(explain));
    if let Some(largest) = ranked(explain).first() {
        blocks.push(heading("The largest spike"));
        blocks.push(Block::Paragraph(spike_line(largest)));
        blocks.push(Block::List(vec![
            format!("stages: {}", stages_line(&largest.stages)),
            parts_line(largest),
            unexplained_line(largest),
            format!("events: {}", coverage_line(largest.coverage)),
        ]));
    }
    blocks.push(heading("How it was traced"));
    blocks.push(tracing_facts(explain));
    blocks.extend(observer(explain));
    blocks
}

/// `latlab explain`: how it was traced, the limits, the cost, the counts, the
/// catalogue, then the `top` largest spikes; headings from `level`.
pub(crate) fn view(explain: &Explain, top: usize, level: usize) -> Vec<Block> {
    let heading = |text: &str| Block::Heading {
        level,
        text: text.to_string(),
    };
    let mut blocks = vec![heading("How it was traced")];
    if let Some(alert) = unavailable(explain) {
        blocks.push(alert);
        return blocks;
    }
    blocks.push(tracing_facts(explain));
    blocks.extend(limits(explain));
    blocks.extend(observer(explain));
    blocks.push(heading("Spikes"));
    blocks.push(counts(explain));
    blocks.push(heading("What got in the way"));
    blocks.extend(catalogue(explain, None, level + 1));
    blocks.push(heading("The largest spikes"));
    blocks.extend(largest_spikes(explain, top, level + 1));
    blocks
}

/// The catalogue `latlab run` ends with: the counts, the largest causes per phase and
/// CPU, and where to read more.
pub(crate) fn summary(explain: &Explain, next: &str) -> Vec<Block> {
    let mut blocks = vec![Block::Heading {
        level: 2,
        text: "What got in the way".to_string(),
    }];
    if let Some(alert) = unavailable(explain) {
        blocks.push(alert);
        return blocks;
    }
    blocks.push(counts(explain));
    blocks.extend(catalogue(explain, Some(SUMMARY_CAUSES), 3));
    blocks.push(Block::Paragraph(format!(
        "Every cause, the limits and the largest spikes part by part: {next}"
    )));
    blocks
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::document::Document;
    use crate::report::text::{self, Ansi};
    use latlab_model::explain::{
        AbSide, Cause, Coverage, ExplainMode, ObserverEffect, Part, ReaderStats, Stage, Stages,
    };
    use latlab_model::width::Width;

    /// A spike of `latency_ns` on CPU 1 cut into fixed parts: idle exit, the timer
    /// interrupt, an interfering thread, a softirq, the scheduler, and the rest
    /// unexplained; the parts add up to the sample.
    fn spike(at_ns: i64, latency_ns: i64, coverage: Coverage) -> Explanation {
        let pieces = [
            (Cause::IdleExit { state: Some(1) }, Stage::Delivery, 4_000),
            (Cause::TimerInterrupt, Stage::Handler, 2_500),
            (
                Cause::Thread {
                    comm: "spin".into(),
                    pid: 4242,
                    prio: 0,
                    function: None,
                    irq: None,
                },
                Stage::Scheduling,
                latency_ns * 6 / 10,
            ),
            (
                Cause::Softirq {
                    name: "TIMER".into(),
                },
                Stage::Scheduling,
                3_200,
            ),
            (Cause::Scheduler, Stage::Scheduling, 1_100),
            (Cause::ReturnToUser, Stage::Return, 900),
        ];
        let mut parts = Vec::new();
        let mut start = 0;
        for (cause, stage, duration) in pieces {
            parts.push(Part {
                cause,
                stage,
                start_ns: Nanos(start),
                duration_ns: Nanos(duration),
            });
            start += duration;
        }
        parts.push(Part {
            cause: Cause::Unexplained {
                current: Some("swapper/1:0".into()),
            },
            stage: Stage::Scheduling,
            start_ns: Nanos(start),
            duration_ns: Nanos(latency_ns - start),
        });
        Explanation {
            phase: "main".into(),
            thread: 0,
            cpu: Some(1),
            at_ns: Nanos(at_ns),
            due_monotonic_ns: None,
            latency_ns: Nanos(latency_ns),
            coverage,
            stages: Stages {
                delivery_ns: Some(Nanos(4_000)),
                handler_ns: Some(Nanos(2_500)),
                scheduling_ns: Some(Nanos(latency_ns - 4_000 - 2_500 - 900)),
                return_ns: None,
            },
            parts,
            events: vec![
                WindowEvent {
                    t_ns: Nanos(-1_200),
                    event: "power:cpu_idle".into(),
                    detail: "state=1 cpu_id=1".into(),
                },
                WindowEvent {
                    t_ns: Nanos(4_000),
                    event: "irq_vectors:local_timer_entry".into(),
                    detail: "vector=236".into(),
                },
            ],
            events_left_out: 0,
        }
    }

    /// A run's explanation: three spikes kept in full and counted in the catalogue.
    pub(crate) fn example() -> Explain {
        let mut explain = Explain {
            mode: ExplainMode::Default,
            unavailable: None,
            events: vec!["sched:sched_switch".into(), "irq:irq_handler_entry".into()],
            clock: Some("mono".into()),
            limits: vec!["no nmi:nmi_handler event: NMIs go unexplained".into()],
            buffer_kb: Some(4096),
            reader: ReaderStats {
                cpu: Some(0),
                pages: 120,
                events: 9_876,
                overrun: 0,
                pages_with_missing_events: 0,
                max_lag_ns: Some(Nanos(1_250_000)),
                held_bytes_max: 491_520,
            },
            observer: Some(ObserverEffect {
                off: AbSide {
                    samples: 2_000,
                    min_ns: Some(Nanos(2_100)),
                    p50_ns: Some(Nanos(3_400)),
                    p99_ns: Some(Nanos(9_000)),
                },
                on: AbSide {
                    samples: 2_000,
                    min_ns: Some(Nanos(2_200)),
                    p50_ns: Some(Nanos(3_500)),
                    p99_ns: None,
                },
            }),
            spikes_seen: 4,
            spikes_explained: 2,
            spikes_incomplete: 1,
            spikes_unexplained: 1,
            catalogue: Vec::new(),
            spike_time: Vec::new(),
            spikes: vec![
                spike(532_000_000, 312_400, Coverage::Complete),
                spike(1_020_000_000, 125_000, Coverage::EventsLost),
                spike(2_750_000_000, 208_300, Coverage::Complete),
            ],
        };
        for e in explain.spikes.clone() {
            explain.add_to_catalogue(&e);
        }
        explain.sort_catalogue();
        explain
    }

    fn text_of(blocks: Vec<Block>) -> String {
        text::render(
            &Document {
                title: "test".into(),
                blocks,
            },
            Ansi::Off,
            Width::Unlimited,
        )
    }

    #[test]
    fn the_parts_of_the_example_add_up_to_each_sample() {
        for e in &example().spikes {
            assert_eq!(e.parts_total_ns(), e.latency_ns);
        }
    }

    #[test]
    fn the_view_says_how_it_traced_what_it_found_and_the_largest_spikes() {
        insta::assert_snapshot!(text_of(view(&example(), 2, 2)));
    }

    #[test]
    fn one_spike_is_shown_event_by_event_with_its_parts() {
        insta::assert_snapshot!(text_of(spike_timeline(&example(), 1, 1).unwrap()));
        assert!(spike_timeline(&example(), 0, 1).is_none());
        assert!(spike_timeline(&example(), 4, 1).is_none());
    }

    #[test]
    fn the_summary_lists_the_largest_causes_and_the_way_to_the_rest() {
        insta::assert_snapshot!(text_of(summary(&example(), "latlab explain last")));
    }

    #[test]
    fn without_tracing_the_reason_is_all_there_is() {
        let explain = Explain {
            unavailable: Some(
                "tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing".into(),
            ),
            ..example()
        };
        insta::assert_snapshot!(text_of(section(&explain, 3)));
    }

    #[test]
    fn unknown_figures_are_shown_as_unknown_never_as_zero() {
        let mut explain = example();
        explain.clock = None;
        explain.buffer_kb = None;
        explain.reader.max_lag_ns = None;
        explain.observer = None;
        explain.spike_time.clear();
        let text = text_of(view(&explain, 1, 2));
        for line in ["trace clock", "buffer", "reader's largest lag"] {
            let shown = text.lines().find(|l| l.starts_with(line)).unwrap();
            assert!(shown.ends_with("unknown"), "{shown}");
        }
        assert!(
            text.contains("The cost of tracing was not measured"),
            "{text}"
        );
        assert!(text.contains("spike time unknown"), "{text}");
        let thread = text.lines().find(|l| l.contains("thread spin")).unwrap();
        assert!(thread.ends_with("– │"), "share unknown: {thread}");
    }
}
