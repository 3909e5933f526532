//! `latlab runs`: what the store holds.

use crate::cli::RunsArgs;
use crate::error::{exit, CliError};
use crate::output::Human;
use comfy_table::{presets, Table};
use latlab_model::text::{counted, terminal_safe as safe};
use latlab_model::Nanos;
use latlab_store::{RunStore, SqliteStore};

/// Lists stored runs, newest first.
pub fn execute(args: &RunsArgs) -> Result<u8, CliError> {
    let path = args
        .store
        .clone()
        .unwrap_or_else(latlab_store::default_path);
    let store = SqliteStore::open_read_only(&path)?;
    let runs = store.list(args.limit).map_err(CliError::runtime)?;
    let mut table = Table::new();
    table.load_preset(presets::NOTHING).set_header(vec![
        "id", "started", "host", "kernel", "scenario", "p99.9", "max", "verdict",
    ]);
    let us = |v: Option<i64>| v.map_or("-".to_string(), |n| Nanos(n).display_us());
    // Every text here comes from a Run file, perhaps imported: none reaches the
    // terminal raw. The index holds "" for what an imported run does not know.
    let known = |text: &str| {
        if text.is_empty() {
            "?".to_string()
        } else {
            safe(text).into_owned()
        }
    };
    for r in &runs {
        table.add_row(vec![
            safe(&r.id).into_owned(),
            known(&r.started_at),
            known(&r.host),
            known(&r.kernel),
            r.scenario.as_deref().map_or("-".into(), safe).into_owned(),
            r.p99_9.map_or("-".to_string(), |p| {
                format!("{}{}", p.prefix(), p.value().display_us())
            }),
            us(r.max_ns),
            format!(
                "{}{}",
                safe(&r.verdict),
                if r.degraded { " (degraded)" } else { "" }
            ),
        ]);
    }
    Human::Stdout.write(&format!(
        "{table}\n{} shown from {}\n",
        counted(runs.len() as u64, "run"),
        path.display()
    ))?;
    Ok(exit::OK)
}
