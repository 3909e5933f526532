//! `latlab runs`: what the store holds, newest added first, as a table or JSON.

use crate::cli::{RunFilterArgs, RunsArgs};
use crate::error::{exit, CliError};
use crate::output::{self, Human, OutputTarget};
use crate::store::StoreLocation;
use comfy_table::{presets, Table};
use latlab_model::labels::check_tag;
use latlab_model::spec::format_cpu_list;
use latlab_model::stamp::parse_time_bound;
use latlab_model::text::{counted, terminal_safe as safe};
use latlab_model::Nanos;
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
    let mut text = format!(
        "{}\n{} shown from {}",
        table(shown),
        counted(shown.len() as u64, "run"),
        location
    );
    if shown.len() < matching.len() {
        text.push_str(&format!(" ({} match: -n 0 lists them all)", matching.len()));
    }
    text.push('\n');
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

/// What the table prints for an unknown value.
const UNKNOWN: &str = "?";

/// Text from a Run file (perhaps imported), made safe for a terminal; `?` when unknown.
fn text(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or(UNKNOWN.to_string(), |t| safe(t).into_owned())
}

/// Text that may be absent: `-` when there is none.
fn optional(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or("-".to_string(), |t| safe(t).into_owned())
}

/// A list: `?` when unknown, `-` when empty.
fn list(items: &Option<Vec<String>>) -> String {
    match items {
        None => UNKNOWN.to_string(),
        Some(items) if items.is_empty() => "-".to_string(),
        Some(items) => items
            .iter()
            .map(|i| safe(i).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A time to the minute, `2026-11-21 00:10` (UTC, as stored); `?` when unknown.
fn minute(time: &Option<String>) -> String {
    match time.as_deref() {
        None => UNKNOWN.to_string(),
        Some(t) => match t.get(..16) {
            Some(head) => head.replacen('T', " ", 1),
            None => safe(t).into_owned(),
        },
    }
}

/// One column: its header and what it shows of a run.
pub type Column = (&'static str, fn(&RunSummary) -> String);

/// The table: its columns as [`columns`] chooses them.
fn table(runs: &[RunSummary]) -> Table {
    let columns = columns(runs);
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_header(columns.iter().map(|(name, _)| *name));
    for r in runs {
        table.add_row(columns.iter().map(|(_, cell)| cell(r)));
    }
    table
}

/// The columns of the runs table (`latlab runs`, the index of `latlab serve`), with a
/// column for names, scenarios, loads and tags only when a run listed has one. Every
/// text comes from a Run file, perhaps imported: none reaches the terminal raw.
/// Unknown is `?`; nothing (no scenario, no loads) is `-`.
pub fn columns(runs: &[RunSummary]) -> Vec<Column> {
    let any = |has: fn(&RunSummary) -> bool| runs.iter().any(has);
    let mut columns: Vec<Column> = vec![("id", |r| safe(&r.id).into_owned())];
    if any(|r| r.name.is_some()) {
        columns.push(("name", |r| optional(&r.name)));
    }
    columns.extend::<[Column; 4]>([
        ("added", |r| minute(&r.added_at)),
        ("started", |r| minute(&r.started_at)),
        ("host", |r| text(&r.host)),
        ("kernel", |r| text(&r.kernel)),
    ]);
    if any(|r| r.scenario.is_some()) {
        columns.push(("scenario", |r| optional(&r.scenario)));
    }
    columns.extend::<[Column; 4]>([
        ("probe", |r| list(&r.probes)),
        ("period", |r| {
            let periods = r
                .periods_ns
                .as_ref()
                .map(|p| p.iter().map(|n| Nanos(*n).to_string()).collect::<Vec<_>>());
            list(&periods)
        }),
        ("cpus", |r| {
            r.cpus
                .as_deref()
                .map_or(UNKNOWN.to_string(), format_cpu_list)
        }),
        ("duration", |r| {
            r.duration_ns
                .map_or(UNKNOWN.to_string(), |n| Nanos(n).to_string())
        }),
    ]);
    if any(|r| r.loads.as_ref().is_none_or(|l| !l.is_empty())) {
        columns.push(("loads", |r| list(&r.loads)));
    }
    if any(|r| !r.tags.is_empty()) {
        columns.push(("tags", |r| {
            let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            list(&Some(tags))
        }));
    }
    columns.extend::<[Column; 3]>([
        ("p99.9", |r| {
            r.p99_9.map_or("-".to_string(), |p| {
                format!("{}{}", p.prefix(), p.value().display_us())
            })
        }),
        ("max", |r| {
            r.max_ns.map_or("-".to_string(), |n| Nanos(n).display_us())
        }),
        ("verdict", |r| {
            // An untrusted run is a degraded one; an accepted one still says it was.
            let degraded = match r.degraded && r.verdict != "untrusted" {
                true => " (degraded)",
                false => "",
            };
            format!("{}{degraded}", safe(&r.verdict))
        }),
    ]);
    // Running, or died at its last checkpoint; nothing for a run that ended.
    if any(|r| r.progress.is_some()) {
        columns.push(("state", |r| {
            r.progress.as_ref().map_or(String::new(), |p| p.describe())
        }));
    }
    columns
}
