//! `latlab check`'s table: each check of the readiness audit with its verdict, the
//! evidence and the fix, then a count of the verdicts. The cells wrap to the width.

use comfy_table::{presets, Cell, ColumnConstraint, ContentArrangement, Table};
use latlab_model::audit::{Audit, CheckVerdict};
use latlab_model::spec::format_cpu_list;
use latlab_model::width::Width;

/// Table width when nothing limits it (a pipe, a file, `--format wide`).
const WIDE: usize = 120;
/// Evidence lines shown per check in the table; `--json` has them all.
const EVIDENCE_LINES: usize = 4;
/// Longest evidence value shown in the table.
const EVIDENCE_CHARS: usize = 70;

/// `text` cut to `max` characters, the last one an ellipsis when anything was cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The audit as `latlab check` prints it: a table with a closing count of verdicts,
/// laid out for `width` (the table's cells wrap to it).
pub fn render_audit(audit: &Audit, width: Width) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width.or(WIDE).try_into().unwrap_or(u16::MAX))
        .set_header(["check", "verdict", "evidence", "fix"]);
    if let Some(column) = table.column_mut(0) {
        column.set_constraint(ColumnConstraint::UpperBoundary(comfy_table::Width::Fixed(
            18,
        )));
    }
    for c in &audit.checks {
        let mut evidence = c.finding.clone();
        if let Some(why) = &c.explanation {
            evidence.push('\n');
            evidence.push_str(why);
        }
        for e in c.evidence.iter().take(EVIDENCE_LINES) {
            evidence.push_str(&format!(
                "\n· {} = {}",
                e.source,
                clip(&e.value, EVIDENCE_CHARS)
            ));
        }
        if c.evidence.len() > EVIDENCE_LINES {
            evidence.push_str(&format!(
                "\n· … {} more (--json)",
                c.evidence.len() - EVIDENCE_LINES
            ));
        }
        let verdict = match c.verdict {
            CheckVerdict::Fail => "FAIL".to_string(),
            CheckVerdict::Warn => "WARN".to_string(),
            other => other.to_string(),
        };
        table.add_row([
            Cell::new(&c.title),
            Cell::new(verdict),
            Cell::new(evidence),
            Cell::new(c.fix.as_deref().unwrap_or("-")),
        ]);
    }
    let counts: Vec<String> = [
        CheckVerdict::Fail,
        CheckVerdict::Warn,
        CheckVerdict::Unknown,
        CheckVerdict::Info,
        CheckVerdict::Ok,
    ]
    .into_iter()
    .map(|v| (v, audit.count(v)))
    .filter(|(_, n)| *n > 0)
    .map(|(v, n)| format!("{n} {v}"))
    .collect();
    let title = format!(
        "latlab check · real-time readiness of CPUs {} for a task at priority {}",
        format_cpu_list(&audit.cpus),
        audit.priority
    );
    let mut count = format!("{} checks: {}.", audit.checks.len(), counts.join(", "));
    if audit.count(CheckVerdict::Unknown) > 0 {
        count.push_str(" Unknown: could not be read, not judged (the reason is given).");
    }
    let [title, count] = [title, count].map(|line| width.wrap(&line, "", ""));
    format!("{title}\n{table}\n{count}\n")
}
