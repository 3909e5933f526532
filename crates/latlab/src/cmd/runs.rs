//! `latlab runs`: what the store holds, newest added first, as a table or JSON.

use crate::cli::{RunFilterArgs, RunsArgs};
use crate::error::{exit, CliError};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use latlab_model::labels::check_tag;
use latlab_model::stamp::parse_time_bound;
use latlab_model::text::counted;
use latlab_model::width::Width;
use latlab_report::table::{Align, Fitted, Frame, TextTable};
use latlab_session::listing::{columns, GIVEN_UP_FIRST};
use latlab_store::{RunFilter, RunSummary};
use serde_json::json;
use std::time::SystemTime;

/// Lists stored runs, newest added first.
pub fn execute(args: &RunsArgs) -> Result<u8, CliError> {
    if args.references {
        return super::references::execute(args.json.as_deref());
    }
    let filter = filter_of(&args.filter)?;
    let location = StoreLocation::resolve(args.store.as_ref())?;
    let mut json = args
        .json
        .as_deref()
        .map(|target| OutputTarget::checked("--json", target, location.path()))
        .transpose()?;
    let store = crate::store::open_read_only(&location)?;
    let matching = store.list(&filter, None).map_err(CliError::runtime)?;
    // The table shows the newest 20 unless told; the list for a program holds every
    // run that matches unless told otherwise.
    let upto = |limit: usize| &matching[..limit.min(matching.len())];
    let told = args.limit.map(|n| if n == 0 { matching.len() } else { n });
    if let Some(target) = json.as_mut() {
        let objects: Vec<String> = upto(told.unwrap_or(matching.len()))
            .iter()
            .map(as_json)
            .collect();
        let text = match objects.is_empty() {
            true => "[]\n".to_string(),
            false => format!("[\n{}\n]\n", objects.join(",\n")),
        };
        target.write(text.as_bytes())?;
        if matches!(target, OutputTarget::Stdout) {
            return Ok(exit::OK);
        }
    }
    let shown = upto(told.unwrap_or(20));
    let width = crate::terminal::width(Human::Stdout);
    let table = table(shown, width);
    let mut footer = format!(
        "{} shown from {location}",
        counted(shown.len() as u64, "run")
    );
    if shown.len() < matching.len() {
        footer.push_str(&format!(" ({} match: -n 0 lists them all)", matching.len()));
    }
    if !table.left_out.is_empty() {
        footer.push_str(&format!(
            "; not shown at this width: {} (--format wide shows them)",
            table.left_out.join(", ")
        ));
    }
    let footer = width.wrap(&footer, "", "");
    let mut text = format!("{}\n{footer}\n", table.text);
    if let Some(file) = json.as_ref().and_then(OutputTarget::path) {
        text.push_str(&format!("List written to {}\n", file.display()));
    }
    output::ignore_closed(Human::Stdout.write(&text))?;
    Ok(exit::OK)
}

/// The filter the flags ask for; a bad value is a usage error naming its flag.
pub fn filter_of(args: &RunFilterArgs) -> Result<RunFilter, CliError> {
    let mut tags = Vec::with_capacity(args.tags.len());
    for text in &args.tags {
        let (key, value) = match text.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (text.as_str(), None),
        };
        check_tag(key, value.as_deref().unwrap_or("")).map_err(|e| CliError::usage("--tag", e))?;
        tags.push((key.to_string(), value));
    }
    let bound = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|text| parse_time_bound(text, SystemTime::now()))
            .transpose()
            .map_err(|e| CliError::usage(flag, e))
    };
    Ok(RunFilter {
        host: args.host.clone(),
        kernel: args.kernel.clone(),
        scenario: args.scenario.clone(),
        tags,
        added_since: bound("--since", &args.since)?,
        added_before: bound("--before", &args.before)?,
    })
}

/// One run as `runs --json` writes it: every field the table shows, unknown as `null`,
/// one field a line in the table's order (lists and tags on their line).
fn as_json(r: &RunSummary) -> String {
    let fields = json!({
        "id": r.id,
        "name": r.name,
        "tags": r.tags,
        "note": r.note,
        "added_at": r.added_at,
        "started_at": r.started_at,
        "host": r.host,
        "kernel": r.kernel,
        "scenario": r.scenario,
        "probes": r.probes,
        "periods_ns": r.periods_ns,
        "cpus": r.cpus,
        "duration_ns": r.duration_ns,
        "loads": r.loads,
        "p99_9_ns": r.p99_9,
        "max_ns": r.max_ns,
        "verdict": r.verdict,
        "degraded": r.degraded,
        "state": r.progress.as_ref().map(|p| p.state.name()),
        "state_detail": r.progress.as_ref().map(|p| p.describe()),
    });
    let lines: Vec<String> = FIELDS
        .iter()
        .map(|name| format!("    {}: {}", json!(name), fields[name]))
        .collect();
    format!("  {{\n{}\n  }}", lines.join(",\n"))
}

/// The fields of `runs --json`, in order.
const FIELDS: [&str; 20] = [
    "id",
    "name",
    "tags",
    "note",
    "added_at",
    "started_at",
    "host",
    "kernel",
    "scenario",
    "probes",
    "periods_ns",
    "cpus",
    "duration_ns",
    "loads",
    "p99_9_ns",
    "max_ns",
    "verdict",
    "degraded",
    "state",
    "state_detail",
];

/// The table: its columns as [`columns`] chooses them, fitted to `width` by giving
/// up columns in the order of [`GIVEN_UP_FIRST`].
fn table(runs: &[RunSummary], width: Width) -> Fitted {
    let columns = columns(runs);
    let mut table = TextTable::new(Frame::Plain);
    for (title, _) in &columns {
        match GIVEN_UP_FIRST.iter().position(|t| t == title) {
            Some(rank) => table.column_given_up(*title, Align::Left, rank),
            None => table.column(*title, Align::Left),
        };
    }
    for r in runs {
        table.row(columns.iter().map(|(_, cell)| cell(r)).collect());
    }
    table.fit(width)
}
