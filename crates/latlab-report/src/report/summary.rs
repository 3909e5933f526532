//! The run summary: what `latlab run` prints when it ends and `latlab show` prints
//! again. It is the report's own sections, fewer of them: what was measured, the
//! warnings, the statistics, the largest sample, the loads, the configuration that
//! bears on the figures, and the verdict last, where a terminal leaves it in sight.

use super::document::{Block, Severity};
use super::figures::{self, DecodedRun};
use super::run_section::{alerts, import_note, published_note, subtitle, verdict};
use super::run_tables::{loads_table, statistics};
use super::telemetry;
use latlab_model::audit::CheckVerdict;
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{CpuChoice, Run};

/// Longest configuration line in the summary; `latlab check` has the rest.
const CONFIGURATION_LINE: usize = 110;

/// The summary's blocks.
pub(crate) fn blocks(decoded: &DecodedRun) -> Vec<Block> {
    let run = decoded.run;
    let mut blocks = vec![Block::Paragraph(subtitle(run))];
    if let Some(reason) = run.plan.cpu_choice.and_then(CpuChoice::reason) {
        blocks.push(Block::Paragraph(format!(
            "CPU {} measured: {reason}.",
            figures::cpu_list(&run.plan.cpus)
        )));
    }
    blocks.extend(import_note(run));
    blocks.extend(published_note(run));
    blocks.extend(alerts(run));
    blocks.extend(statistics(decoded));
    blocks.extend(largest_sample(decoded));
    blocks.extend(spike_rate(decoded));
    blocks.extend(telemetry::summary(run));
    for phase in run.phases.iter().filter(|p| !p.loads.is_empty()) {
        blocks.push(Block::Paragraph(format!(
            "Loads during phase {}:",
            phase.name
        )));
        blocks.push(Block::Table(loads_table(phase)));
    }
    // The noise probe's gaps are many: each CPU's noise-summary event speaks for them
    // (reports list them all).
    let events: Vec<String> = run
        .events
        .iter()
        .filter(|e| e.kind != "noise")
        .map(|e| e.message.clone())
        .collect();
    if !events.is_empty() {
        blocks.push(Block::Paragraph("Events:".to_string()));
        blocks.push(Block::List(events));
    }
    blocks.extend(configuration(run));
    blocks.push(verdict(run));
    blocks
}

/// The largest sample of the run, where and when.
fn largest_sample(decoded: &DecodedRun) -> Option<Block> {
    let (stream, top) = decoded
        .streams
        .iter()
        .flat_map(|s| s.stream.spikes.top.first().map(|top| (s, top)))
        .max_by_key(|(_, top)| top.value_ns)?;
    Some(Block::Paragraph(format!(
        "Largest sample: {} on {}, {} into the measured span.",
        figures::us_unit(top.value_ns),
        stream.name,
        figures::seconds(top.at_ns)
    )))
}

/// How often the streams' samples were above the run's spike level, together (their
/// counts and measured times added), in one line; the report has them stream by stream.
/// None when the streams measured different things (probes: their rates do not add)
/// or a stream's rate is unknown (the line would leave it out unsaid).
fn spike_rate(decoded: &DecodedRun) -> Option<Block> {
    let level = rate::level_of(decoded.run);
    let first = decoded.streams.first()?;
    if decoded
        .streams
        .iter()
        .any(|s| s.stream.probe != first.stream.probe)
    {
        return None;
    }
    let rates: Vec<SpikeRate> = decoded
        .streams
        .iter()
        .map(|s| SpikeRate::of_stream(s.stream, level, rate::CONFIDENCE))
        .collect::<Option<_>>()?;
    let all = SpikeRate::combined(&rates)?;
    let per = match rates.len() {
        1 => "per hour".to_string(),
        n => format!("per stream-hour over {n} streams"),
    };
    let between = all.mean_time_between().map_or_else(
        || format!("> {}", figures::span(all.span_ns)),
        figures::span,
    );
    let first = all.time_to_first(rate::CONFIDENCE).map_or_else(
        || "unknown until one is seen".to_string(),
        |t| format!("{} of measuring", figures::span(t)),
    );
    Some(Block::Paragraph(format!(
        "Above {level}: {} in {} measured, {} {per} (95 %: {} – {}); mean time between {between}; \
         to see one with 95 % confidence: {first}.",
        latlab_model::text::counted(all.count, "sample"),
        figures::span(all.span_ns),
        figures::per_hour(all.per_hour),
        figures::per_hour(all.per_hour_low),
        figures::per_hour(all.per_hour_high),
    )))
}

/// The audit's warnings and failures that bear on these figures, one line each: the
/// preemption model, RT throttling when a measuring thread is busy (spin, hybrid),
/// frequency scaling, idle states when the run did not hold them off, SMT siblings,
/// IRQs on measured CPUs, virtualisation.
fn configuration(run: &Run) -> Option<Block> {
    let audit = run.audit.as_ref()?;
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
            let text = format!(
                "{} {}: {}",
                c.verdict.as_str().to_ascii_uppercase(),
                c.title,
                c.finding
            );
            if text.chars().count() > CONFIGURATION_LINE {
                let kept: String = text.chars().take(CONFIGURATION_LINE - 1).collect();
                format!("{kept}…")
            } else {
                text
            }
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(Block::Alert {
        severity: Severity::Warning,
        title: format!(
            "Configuration that bears on these figures (latlab check -c {} shows evidence \
             and fixes):",
            figures::cpu_list(&audit.cpus)
        ),
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::Document;
    use crate::report::text::{self, Ansi};
    use latlab_model::audit::{Audit, CheckResult};

    fn example() -> Run {
        Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap()
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

    /// The example with an audit that warns of everything the summary may name.
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

    /// The configuration lines as the summary writes them.
    fn configuration_text(run: &Run) -> String {
        let blocks = configuration(run).into_iter().collect();
        text::render(
            &Document {
                title: String::new(),
                blocks,
            },
            Ansi::Off,
            latlab_model::width::Width::Unlimited,
        )
    }

    #[test]
    fn the_summary_names_only_the_configuration_that_bears_on_the_figures() {
        let run = with_audit(example());
        assert_eq!(run.conditions.as_ref().unwrap().dma_latency_us, Some(0));
        // Sleeping threads are not throttled; idle states were held off; THP and ok
        // checks are not about this result.
        insta::assert_snapshot!(configuration_text(&run), @r"
            !  Configuration that bears on these figures (latlab check -c 0-1 shows evidence and fixes):
            !    • FAIL Preemption model: not PREEMPT_RT
        ");
    }

    #[test]
    fn busy_threads_and_untuned_runs_bring_throttling_and_idle_states_in() {
        let mut run = with_audit(example());
        for s in &mut run.streams {
            s.method = Some("spin".into());
        }
        run.conditions.as_mut().unwrap().dma_latency_us = None;
        insta::assert_snapshot!(configuration_text(&run), @r"
            !  Configuration that bears on these figures (latlab check -c 0-1 shows evidence and fixes):
            !    • FAIL Preemption model: not PREEMPT_RT
            !    • WARN RT throttling: RT throttling is on
            !    • WARN CPU idle states: C6 enabled
        ");
    }

    #[test]
    fn runs_without_an_audit_say_nothing_about_it() {
        assert!(configuration(&example()).is_none());
    }
}
