//! `latlab runs --references`: the published tables latlab ships as reference runs.

use crate::error::{exit, CliError};
use crate::output::{self, Human, OutputTarget};
use latlab_model::published::{self, PublishedTable, REFERENCE_PREFIX};
use latlab_model::text::counted;
use latlab_report::table::{Align, Frame, TextTable};
use serde_json::json;
use std::path::Path;

/// Lists the references: a table, or (`--json`) their records.
pub fn execute(json: Option<&Path>) -> Result<u8, CliError> {
    let tables = published::catalogue().map_err(CliError::runtime)?;
    if let Some(target) = json {
        let mut target = OutputTarget::checked("--json", target, None)?;
        let list: Vec<_> = tables.iter().map(as_json).collect();
        let text = serde_json::to_string_pretty(&list)
            .map_err(|e| CliError::runtime(format!("cannot encode the list: {e}")))?;
        target.write(format!("{text}\n").as_bytes())?;
        if matches!(target, OutputTarget::Stdout) {
            return Ok(exit::OK);
        }
    }
    let mut table = TextTable::new(Frame::Plain);
    for title in ["reference", "rows", "unit", "what", "source"] {
        table.column(title, Align::Left);
    }
    for t in &tables {
        table.row(vec![
            format!("{REFERENCE_PREFIX}{}", t.name),
            t.row.len().to_string(),
            t.unit.clone(),
            t.title.clone(),
            t.source.clone(),
        ]);
    }
    let width = crate::terminal::width(Human::Stdout);
    let footer = format!(
        "{}: published figures, not measured here. Name one as a run: latlab compare last \
         ref:rr-table3",
        counted(tables.len() as u64, "reference")
    );
    let footer = width.wrap(&footer, "", "");
    let text = format!("{}\n{footer}\n", table.fit(width).text);
    output::ignore_closed(Human::Stdout.write(&text))?;
    Ok(exit::OK)
}

fn as_json(t: &PublishedTable) -> serde_json::Value {
    json!({
        "reference": format!("{REFERENCE_PREFIX}{}", t.name),
        "title": t.title,
        "source": t.source,
        "table": t.table,
        "machine": t.machine,
        "kernel": t.kernel,
        "unit": t.unit,
        "rows": t.row.len(),
        "lacks": t.lacks,
    })
}
