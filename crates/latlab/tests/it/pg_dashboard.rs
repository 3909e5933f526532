//! The Grafana dashboard of docs/grafana/ on the views of a real store (`pg_views`'
//! runs): a PostgreSQL data source's panels, each query written out in SQL, which —
//! their macros expanded as Grafana's PostgreSQL data source expands them — answer
//! with the figures of the Runs they draw.

use crate::docs::top;
use crate::pg::PgCluster;
use crate::pg_views::{
    ns, percentile_columns, rig_of, spikes_of, verdict_of, worst_percentile, Row, READER,
};
use latlab_model::run::Run;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A dashboard's time range, in whole seconds, and its interval.
struct TimeRange {
    from: SystemTime,
    to: SystemTime,
    /// `$__interval`, e.g. `1h`, and in seconds.
    interval: (&'static str, u64),
}

impl TimeRange {
    /// `at` as Grafana's PostgreSQL data source writes it into a query: Go's RFC 3339
    /// with nanoseconds, in UTC, which has no fraction for a whole second.
    fn text(at: SystemTime) -> String {
        latlab_model::stamp::rfc3339(at).replace(".000Z", "Z")
    }

    fn seconds(at: SystemTime) -> u64 {
        at.duration_since(UNIX_EPOCH).unwrap().as_secs()
    }
}

/// `sql` with Grafana's macros expanded as its PostgreSQL data source expands them
/// (pkg/tsdb/grafana-postgresql-datasource/macros.go, and the global `$__interval`
/// and `$__unixEpochFrom()` of sqleng): `$__timeFilter(col)` is `col BETWEEN 'FROM'
/// AND 'TO'`, `$__timeGroupAlias(col, I)` is `floor(extract(epoch from col)/S)*S AS
/// "time"`, and so on. A macro it does not know fails the test.
fn expand_grafana_macros(sql: &str, range: &TimeRange) -> String {
    let (from, to) = (TimeRange::text(range.from), TimeRange::text(range.to));
    let sql = sql
        .replace("$__interval_ms", &(range.interval.1 * 1000).to_string())
        .replace("$__interval", range.interval.0)
        .replace(
            "$__unixEpochFrom()",
            &TimeRange::seconds(range.from).to_string(),
        )
        .replace(
            "$__unixEpochTo()",
            &TimeRange::seconds(range.to).to_string(),
        );
    let mut out = String::new();
    let mut rest = sql.as_str();
    while let Some(at) = rest.find("$__") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let name_end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let (mut name, tail) = after.split_at(name_end);
        let close = tail.find(')').filter(|_| tail.starts_with('('));
        let Some(close) = close else {
            panic!("{name} is no macro Grafana expands: {sql}");
        };
        let args: Vec<&str> = tail[1..close].split(',').map(|a| a.trim()).collect();
        rest = &tail[close + 1..];
        // Before Grafana 5.3, $__timeGroup followed by a comma added the alias.
        if name == "__timeGroup" && rest.starts_with(',') {
            name = "__timeGroupAlias";
        }
        let group = |args: &[&str]| {
            let interval = args[1].trim_matches('\'');
            assert_eq!(interval, range.interval.0, "{sql}");
            let s = range.interval.1;
            format!("floor(extract(epoch from {})/{s})*{s}", args[0])
        };
        out.push_str(&match name {
            "__time" => format!("{} AS \"time\"", args[0]),
            "__timeEpoch" => format!("extract(epoch from {}) as \"time\"", args[0]),
            "__timeFilter" => format!("{} BETWEEN '{from}' AND '{to}'", args[0]),
            "__timeFrom" => format!("'{from}'"),
            "__timeTo" => format!("'{to}'"),
            "__timeGroup" => group(&args),
            "__timeGroupAlias" => format!("{} AS \"time\"", group(&args)),
            other => panic!("the dashboard uses ${other}, which this test does not expand"),
        });
    }
    out.push_str(rest);
    out
}

/// The dashboard: a PostgreSQL data source's panels, each query written out in SQL.
fn dashboard() -> serde_json::Value {
    let file = top().join("docs/grafana/latlab-farm.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let inputs = dashboard["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs
            .iter()
            .any(|i| i["pluginId"] == "grafana-postgresql-datasource"),
        "{inputs:?}"
    );
    assert!(dashboard["title"].is_string() && dashboard["uid"].is_string());
    let panels = dashboard["panels"].as_array().expect("panels");
    assert_eq!(panels.len(), 4);
    for panel in panels {
        let kind = panel["datasource"]["type"].as_str();
        assert!(
            matches!(kind, Some("grafana-postgresql-datasource" | "postgres")),
            "{panel}"
        );
        assert!(
            panel["gridPos"]["w"].is_u64() && panel["id"].is_u64(),
            "{panel}"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert_eq!(targets.len(), 1, "{panel}");
        let target = &targets[0];
        assert_eq!(target["rawQuery"], true, "{panel}");
        assert_eq!(target["editorMode"], "code", "{panel}");
        assert!(target["rawSql"].is_string(), "{panel}");
        let format = match panel["type"].as_str() {
            Some("timeseries") => "time_series",
            Some("table") => "table",
            other => panic!("a panel of type {other:?}"),
        };
        assert_eq!(target["format"], format, "{panel}");
    }
    dashboard
}

/// The dashboard's panels on a store, over a time range that holds every run's start.
struct Panels<'a> {
    pg: &'a PgCluster,
    dashboard: serde_json::Value,
    range: TimeRange,
}

impl Panels<'_> {
    /// The rows of the panel `title`, its query expanded for the range, as the reading
    /// role.
    fn rows(&self, title: &str) -> Vec<Row> {
        let panel = self.dashboard["panels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["title"] == title)
            .unwrap_or_else(|| panic!("no panel {title}"));
        let query = panel["targets"][0]["rawSql"].as_str().unwrap();
        let sql = expand_grafana_macros(query, &self.range);
        self.pg
            .rows_as(READER, &sql)
            .unwrap_or_else(|e| panic!("panel {title}: {e}\n{sql}"))
    }
}

/// A value a time series shows, as a number.
fn shown(value: &Option<String>) -> f64 {
    value.as_deref().unwrap().parse().unwrap()
}

/// The run of `rig` among `runs`: each rig that a time series draws has one.
fn run_of<'a>(runs: &[&'a Run], rig: &str) -> &'a Run {
    runs.iter()
        .find(|r| rig_of(r).as_deref() == Some(rig))
        .unwrap_or_else(|| panic!("no run of {rig}"))
}

/// The rig a series is named after: its first word.
fn rig_in(metric: &Option<String>) -> &str {
    metric.as_deref().unwrap().split(' ').next().unwrap()
}

/// p99.9: one point per run that has one, at its start; a bound on a line of its own.
fn check_p99_9(panels: &Panels, drawn: &[&Run]) {
    let rows = panels.rows("p99.9 per rig");
    let mut series: Vec<&str> = rows.iter().map(|r| r[1].as_deref().unwrap()).collect();
    series.sort();
    assert_eq!(
        series,
        ["rig-a timer", "rig-b timer", "rig-c timer (at least)"],
        "{rows:?}"
    );
    for row in &rows {
        let p999 = worst_percentile(run_of(drawn, rig_in(&row[1])), "99.9").unwrap();
        assert_eq!(row[2], ns(Some(p999.value().0)), "{row:?}");
        let marked = row[1].as_deref().unwrap().ends_with("(at least)");
        assert_eq!(marked, p999.is_bound(), "{row:?}");
    }
}

/// Spike rate: the runs measured with a spike level, their count over their time.
fn check_spike_rate(panels: &Panels, drawn: &[&Run]) {
    let rows = panels.rows("Spike rate per rig");
    let counted = drawn
        .iter()
        .filter(|r| r.streams.iter().all(|s| spikes_of(s).is_some()))
        .count();
    assert_eq!(rows.len(), counted, "{rows:?}");
    for row in &rows {
        let run = run_of(drawn, rig_in(&row[1]));
        let spikes: u64 = run.streams.iter().map(|s| spikes_of(s).unwrap()).sum();
        let measured: i64 = run.streams.iter().map(|s| s.elapsed_ns.unwrap().0).sum();
        let per_hour = spikes as f64 * 3.6e12 / measured as f64;
        let rate = shown(&row[2]);
        assert!(
            (rate - per_hour).abs() <= 1e-9 * per_hour.max(1.0),
            "{row:?}: {per_hour}"
        );
        let level = run.streams[0].spikes.threshold_ns.unwrap().0 as f64 / 1000.0;
        let series = row[1].as_deref().unwrap();
        assert!(series.ends_with(&format!("above {level} µs")), "{row:?}");
    }
}

/// Missed periods: the runs that counted them, per million periods.
fn check_missed_periods(panels: &Panels, drawn: &[&Run]) {
    let rows = panels.rows("Missed periods per rig");
    let counted = drawn
        .iter()
        .filter(|r| r.total_missed_periods().is_some())
        .count();
    assert_eq!(rows.len(), counted, "{rows:?}");
    for row in &rows {
        let run = run_of(drawn, rig_in(&row[1]));
        let missed = run.total_missed_periods().unwrap();
        let periods = run.total_samples().unwrap() + missed;
        let per_million = missed as f64 * 1e6 / periods as f64;
        let rate = shown(&row[2]);
        assert!(
            (rate - per_million).abs() <= 1e-9 * per_million.max(1.0),
            "{row:?}"
        );
    }
}

/// The latest verdict of every rig, with its p99.9 (NULL where the run has none, a
/// bound marked); the imports without a host have no rig.
fn check_latest_verdicts(panels: &Panels, runs: &[Run]) {
    let rows = panels.rows("Latest verdict per rig");
    let mut rigs: Vec<String> = runs.iter().filter_map(rig_of).collect();
    rigs.sort();
    rigs.dedup();
    let listed: Vec<Option<String>> = rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(listed, rigs.into_iter().map(Some).collect::<Vec<_>>());
    for row in &rows {
        let run = runs
            .iter()
            .find(|r| Some(&r.id) == row[2].as_ref())
            .unwrap();
        assert_eq!(row[5], Some(verdict_of(run)), "{row:?}");
        let p999 = percentile_columns(worst_percentile(run, "99.9"));
        assert_eq!(row[7..9], p999, "{row:?}");
    }
}

/// Each panel answers with the figures of the runs its question is about.
pub fn check_dashboard(pg: &PgCluster, runs: &[Run]) {
    let whole = |seconds: u64| UNIX_EPOCH + Duration::from_secs(seconds);
    let tomorrow = TimeRange::seconds(SystemTime::now()) + 86_400;
    let panels = Panels {
        pg,
        dashboard: dashboard(),
        range: TimeRange {
            // 2026-01-01T00:00:00Z: before every start the store holds.
            from: whole(1_767_225_600),
            to: whole(tomorrow),
            interval: ("1h", 3600),
        },
    };
    // The runs a time series draws: a start and a rig known.
    let drawn: Vec<&Run> = runs
        .iter()
        .filter(|r| r.started_at.is_some() && rig_of(r).is_some())
        .collect();
    check_p99_9(&panels, &drawn);
    check_spike_rate(&panels, &drawn);
    check_missed_periods(&panels, &drawn);
    check_latest_verdicts(&panels, runs);
}
