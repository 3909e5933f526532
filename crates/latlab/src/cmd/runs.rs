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
    let store = SqliteStore::open(&path)?;
    let runs = store.list(args.limit).map_err(CliError::runtime)?;
    let mut table = Table::new();
    table.load_preset(presets::NOTHING).set_header(vec![
        "id", "started", "host", "kernel", "scenario", "p99.9", "max", "verdict",
    ]);
    let us = |v: Option<i64>| v.map_or("-".to_string(), |n| Nanos(n).display_us());
    // Every text here comes from a Run file, perhaps imported: none reaches the
    // terminal raw.
    for r in &runs {
        table.add_row(vec![
            safe(&r.id).into_owned(),
            safe(&r.started_at).into_owned(),
            safe(&r.host).into_owned(),
            safe(&r.kernel).into_owned(),
            r.scenario.as_deref().map_or("-".into(), safe).into_owned(),
            us(r.p99_9_ns),
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
