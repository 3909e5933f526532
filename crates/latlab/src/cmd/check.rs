//! `latlab check`: the real-time readiness audit, as a table (check, verdict,
//! evidence, fix) or as JSON; exit 1 when any check fails.

use crate::cli::CheckArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use crate::output::OutputTarget;
use comfy_table::{presets, Cell, ColumnConstraint, ContentArrangement, Table, Width};
use latlab_measure::check::{self, CheckContext};
use latlab_measure::cpus::CpuInventory;
use latlab_measure::facts::FactReader;
use latlab_model::audit::{Audit, CheckVerdict};
use latlab_model::spec::{format_cpu_list, CpuSelection, SchedSpec};
use std::path::Path;

/// Table width when the terminal's is not known (`COLUMNS` unset).
const DEFAULT_WIDTH: u16 = 120;
/// Evidence lines shown per check in the table; `--json` has them all.
const EVIDENCE_LINES: usize = 4;
/// Longest evidence value shown in the table.
const EVIDENCE_CHARS: usize = 70;

/// Runs `latlab check`.
pub fn execute(args: &CheckArgs) -> Result<u8, CliError> {
    if !args.root.is_dir() {
        return Err(CliError::usage(
            "--root",
            format!(
                "{} is not a directory: give the root of a tree holding proc/ and sys/",
                args.root.display()
            ),
        ));
    }
    let files = FactReader::at(&args.root);
    // The CPUs judged are those `latlab run` with the same -c measures: without -c,
    // the isolated ones where the kernel isolates any (see latlab_measure::cpus).
    let inventory = match args.root == Path::new("/") {
        true => CpuInventory::of_this_process(),
        false => CpuInventory::read(&files),
    };
    let selection = args
        .cpus
        .as_deref()
        .map(CpuSelection::parse)
        .transpose()
        .map_err(|e| CliError::usage("--cpus", e))?;
    let cpus = match (selection, inventory.online.is_empty()) {
        // The online CPUs are unknown: take a list as given, judge every CPU else.
        (Some(CpuSelection::List(list)), true) => Some(list),
        (_, true) => None,
        (selection, false) => Some(
            inventory
                .resolve(selection.as_ref())
                .map_err(|e| CliError::usage("--cpus", e))?
                .0,
        ),
    };
    let policy = match args.priority.as_deref() {
        Some(text) => SchedSpec::parse(text).map_err(|e| CliError::usage("--priority", e))?,
        None => SchedSpec::DEFAULT,
    };
    let mut json = args
        .json
        .as_deref()
        .map(|p| OutputTarget::checked("--json", p, None))
        .transpose()?;

    let ctx = CheckContext::new(files, cpus.as_deref(), check::priority_of(&policy));
    let audit = check::audit(&ctx);
    let code = if audit.failed() {
        exit::FAILED
    } else {
        exit::OK
    };
    let text = serde_json::to_string_pretty(&audit)
        .map_err(|e| CliError::runtime(format!("cannot encode the audit: {e}")))?
        + "\n";
    match json.as_mut() {
        Some(OutputTarget::Stdout) => {
            crate::output::ignore_closed(OutputTarget::Stdout.write(text.as_bytes()))?;
        }
        Some(target) => {
            target.write(text.as_bytes())?;
            let path = target.path().map(|p| p.display().to_string());
            let mut out = render(&audit, table_width());
            if let Some(path) = path {
                out.push_str(&format!("Audit written to {path}\n"));
            }
            crate::output::ignore_closed(Human::Stdout.write(&out))?;
        }
        None => crate::output::ignore_closed(Human::Stdout.write(&render(&audit, table_width())))?,
    }
    Ok(code)
}

fn table_width() -> u16 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|w| *w >= 60)
        .unwrap_or(DEFAULT_WIDTH)
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The audit as a table with a closing count of verdicts.
pub fn render(audit: &Audit, width: u16) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(["check", "verdict", "evidence", "fix"]);
    if let Some(column) = table.column_mut(0) {
        column.set_constraint(ColumnConstraint::UpperBoundary(Width::Fixed(18)));
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
    let mut out = format!(
        "latlab check · real-time readiness of CPUs {} for a task at priority {}\n{table}\n",
        format_cpu_list(&audit.cpus),
        audit.priority
    );
    out.push_str(&format!(
        "{} checks: {}.",
        audit.checks.len(),
        counts.join(", ")
    ));
    if audit.count(CheckVerdict::Unknown) > 0 {
        out.push_str(" Unknown: could not be read, not judged (the reason is given).");
    }
    out.push('\n');
    out
}
