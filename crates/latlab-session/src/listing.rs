//! The runs table, `latlab runs` and the index of `latlab serve` alike: which columns a
//! list of runs gets, and how each shows what a run's summary holds. Every text comes
//! from a Run file, perhaps imported: none reaches a terminal raw.

use latlab_model::spec::format_cpu_list;
use latlab_model::text::terminal_safe as safe;
use latlab_model::Nanos;
use latlab_store::RunSummary;

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

/// The columns the runs table gives up to fit a narrow terminal, the least needed
/// first. It never gives up the others: id, p99.9, max and verdict — which run, and
/// how it did. `latlab show` has the rest.
pub const GIVEN_UP_FIRST: [&str; 13] = [
    "added", "tags", "duration", "cpus", "period", "kernel", "loads", "host", "started",
    "scenario", "probe", "name", "state",
];

/// One column: its header and what it shows of a run.
pub type Column = (&'static str, fn(&RunSummary) -> String);

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
