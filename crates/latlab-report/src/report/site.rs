//! The pages of `latlab serve`: the runs index with its filters, each run's report, a
//! comparison of two runs and the trend pages. Each is a page like the HTML report
//! (inline CSS and SVG, no script, nothing loaded from anywhere) with links between
//! them and plain GET forms; a running run's page reloads itself.
//!
//! Every text that comes from a Run or a request is escaped here; the server passes
//! plain text.

use super::document::{Block, Document};
use super::html::{self, Frame};
use super::trend::{self, Trend};
use super::{assemble, LatencyAxis, ReportError};
use latlab_model::progress::RunState;
use latlab_model::run::Run;
use latlab_model::text::xml_escaped;
use std::fmt::Write as _;

/// Seconds after which a running run's page reloads.
pub const REFRESH_S: u32 = 10;

/// The filters of the runs index and the trend page, as GET parameters: (name, what
/// the form calls it). The names are those of `latlab runs`' flags.
pub const FILTER_FIELDS: [(&str, &str); 6] = [
    ("host", "host"),
    ("kernel", "kernel"),
    ("scenario", "scenario"),
    ("tag", "tag KEY[=VALUE]"),
    ("since", "added since (30d, 2026-11-01)"),
    ("before", "added before"),
];

/// The columns of the runs index shown first, when the runs have them: which run it
/// is and how it did.
const INDEX_FIRST: [&str; 4] = ["id", "p99.9", "max", "verdict"];

/// One run of the index.
pub struct IndexRow {
    /// Its id: its page is `/run/ID`.
    pub id: String,
    /// One text per column.
    pub cells: Vec<String>,
    /// Running or died, in words; `None` for a run that ended.
    pub state: Option<String>,
    /// Still being measured: the index reloads itself while one is listed.
    pub running: bool,
}

/// The runs index.
pub struct Index<'a> {
    /// Where the runs are kept, in words.
    pub store: &'a str,
    /// The columns' titles.
    pub columns: &'a [&'a str],
    /// The runs shown, newest added first.
    pub rows: &'a [IndexRow],
    /// How many runs the filters let through (all are shown).
    pub matching: usize,
    /// The request's parameters (decoded): the forms show them.
    pub query: &'a [(String, String)],
}

/// The value of parameter `name` in `query`, empty when absent.
fn value<'a>(query: &'a [(String, String)], name: &str) -> &'a str {
    query
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// `query` as a URL's query string, percent-encoded.
fn query_string(query: &[(String, String)]) -> String {
    query
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| format!("{}={}", percent_encoded(n), percent_encoded(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `text` with every byte but unreserved ones (RFC 3986) percent-encoded.
pub fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

/// The links at the top of every page.
pub(crate) fn nav() -> String {
    "<nav><a href=\"/\">runs</a><a href=\"/farm\">farm</a><a href=\"/trend\">trend</a></nav>\n"
        .to_string()
}

/// The filter form: `extra` fields first (name, label, value, choices), then the
/// filters, submitted to `action`.
pub(crate) fn filter_form(
    action: &str,
    extra: &[(&str, &str, &str)],
    query: &[(String, String)],
) -> String {
    let mut out = format!("<form class=\"filter\" method=\"get\" action=\"{action}\">\n");
    let fields = extra
        .iter()
        .map(|&(name, label, _)| (name, label))
        .chain(FILTER_FIELDS);
    for (name, label) in fields {
        let shown = match value(query, name) {
            "" => extra
                .iter()
                .find(|(n, _, _)| *n == name)
                .map_or("", |(_, _, default)| *default),
            given => given,
        };
        let _ = writeln!(
            out,
            "<label>{}<input name=\"{name}\" value=\"{}\"></label>",
            xml_escaped(label),
            xml_escaped(shown)
        );
    }
    out.push_str("<button type=\"submit\">show</button>\n</form>\n");
    out
}

/// The runs index: the filter form, then the runs with links to their pages and a
/// choice of two to compare.
pub fn index_page(index: &Index) -> Result<String, ReportError> {
    let document = Document {
        title: "latlab: runs".to_string(),
        blocks: vec![
            Block::Heading {
                level: 1,
                text: "latlab: runs".to_string(),
            },
            Block::Paragraph(format!(
                "{} of {}, newest added first. Choose a base and a new run to compare \
                 them; the trend follows a figure of these runs over time.",
                match index.matching {
                    1 => "1 run".to_string(),
                    n => format!("{n} runs"),
                },
                index.store
            )),
        ],
    };
    let mut top = nav();
    top.push_str(&filter_form("/", &[], index.query));
    let trend_link = match query_string(index.query) {
        q if q.is_empty() => "/trend".to_string(),
        q => format!("/trend?{q}"),
    };
    let mut bottom = format!(
        "<p><a href=\"{}\">the trend of these runs</a></p>\n",
        xml_escaped(&trend_link)
    );
    // Which run it is and how it did first, so that they are in view at any width;
    // the state after them, then the rest.
    let position = |title: &str| index.columns.iter().position(|c| *c == title);
    let first: Vec<usize> = INDEX_FIRST.iter().filter_map(|t| position(t)).collect();
    let rest: Vec<usize> = (0..index.columns.len())
        .filter(|i| !first.contains(i))
        .collect();
    let header = |columns: &[usize]| -> String {
        columns
            .iter()
            .map(|&i| format!("<th>{}</th>", xml_escaped(index.columns[i])))
            .collect()
    };
    bottom.push_str("<form method=\"get\" action=\"/compare\">\n");
    bottom.push_str(&html::table_start("Runs"));
    let _ = writeln!(
        bottom,
        "<thead><tr><th>base</th><th>new</th>{}<th>state</th>{}</tr></thead>\n<tbody>",
        header(&first),
        header(&rest)
    );
    for row in index.rows {
        let id = xml_escaped(&row.id);
        let link = xml_escaped(&format!("/run/{}", percent_encoded(&row.id)));
        let cells = |columns: &[usize]| -> String {
            columns
                .iter()
                .filter_map(|&i| Some((i, row.cells.get(i)?)))
                .map(|(i, cell)| match index.columns[i] {
                    "id" => format!("<td><a href=\"{link}\">{}</a></td>", xml_escaped(cell)),
                    _ => format!("<td>{}</td>", xml_escaped(cell)),
                })
                .collect()
        };
        let _ = writeln!(
            bottom,
            "<tr><td><input type=\"radio\" name=\"base\" value=\"{id}\" aria-label=\"base {id}\"></td>\
             <td><input type=\"radio\" name=\"new\" value=\"{id}\" aria-label=\"new {id}\"></td>\
             {}<td class=\"wrap\">{}</td>{}</tr>",
            cells(&first),
            xml_escaped(row.state.as_deref().unwrap_or("ended")),
            cells(&rest)
        );
    }
    bottom.push_str(
        "</tbody>\n</table></div>\n<button type=\"submit\">compare base and new</button>\n</form>\n",
    );
    html::render_framed(
        &document,
        &Frame {
            refresh_s: index.rows.iter().any(|r| r.running).then_some(REFRESH_S),
            top,
            bottom,
        },
    )
}

/// A run's report, as `latlab report` writes it; a running run's page says how far it
/// is and reloads itself.
pub fn run_page(run: &Run) -> Result<String, ReportError> {
    let document = assemble::report(std::slice::from_ref(run), Some(LatencyAxis::Auto))?;
    let mut top = nav();
    let mut refresh_s = None;
    // The report itself says the run is running or died and what it covers; the page
    // adds only that it reloads.
    if run
        .progress
        .as_ref()
        .is_some_and(|p| p.state == RunState::Running)
    {
        refresh_s = Some(REFRESH_S);
        let _ = writeln!(
            top,
            "<div class=\"alert note\" role=\"status\"><strong>this page shows the run's \
             last checkpoint and reloads every {REFRESH_S} s</strong></div>"
        );
    }
    html::render_framed(
        &document,
        &Frame {
            refresh_s,
            top,
            bottom: String::new(),
        },
    )
}

/// The report of several runs: compared first (the first is the base), then each.
pub fn compare_page(runs: &[Run]) -> Result<String, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let document = assemble::report(runs, Some(LatencyAxis::Auto))?;
    html::render_framed(
        &document,
        &Frame {
            top: nav(),
            ..Frame::default()
        },
    )
}

/// The trend page: its form (metric, grouping, filters), the plot and the tables.
/// `metric` and `by` are the form's values as given (or the defaults).
pub fn trend_page(
    trend: &Trend,
    axis: LatencyAxis,
    query: &[(String, String)],
) -> Result<String, ReportError> {
    let document = trend::document(trend, axis);
    let metric = trend.metric.name();
    let by: Vec<String> = trend.by.iter().map(|g| g.name()).collect();
    let by = by.join(",");
    let mut top = nav();
    top.push_str(&filter_form(
        "/trend",
        &[
            ("metric", "metric (p99.9, max, missed)", &metric),
            ("by", "by (host,kernel,scenario,tag:KEY)", &by),
            ("series", "series (its id)", ""),
        ],
        query,
    ));
    html::render_framed(
        &document,
        &Frame {
            top,
            ..Frame::default()
        },
    )
}

/// A page saying what went wrong with a request: `title` (`Not found`) and `message`.
pub fn error_page(title: &str, message: &str) -> String {
    let document = Document {
        title: format!("latlab: {title}"),
        blocks: vec![
            Block::Heading {
                level: 1,
                text: title.to_string(),
            },
            Block::Paragraph(message.to_string()),
        ],
    };
    let frame = Frame {
        top: nav(),
        ..Frame::default()
    };
    // A document of a heading and a paragraph has no plot to fail.
    html::render_framed(&document, &frame).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::progress::Progress;

    #[test]
    fn parameters_are_percent_encoded() {
        assert_eq!(percent_encoded("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        let query = [
            ("host".to_string(), "rig 1".to_string()),
            ("kernel".to_string(), String::new()),
        ];
        assert_eq!(query_string(&query), "host=rig%201");
    }

    #[test]
    fn the_index_escapes_what_runs_and_requests_say() {
        let rows = [IndexRow {
            id: "20261101T000000Z-a00001".to_string(),
            cells: vec![
                "20261101T000000Z-a00001".to_string(),
                "<script>alert(1)</script>".to_string(),
            ],
            state: Some("running (pid 7), checkpoint 2 at \"now\"".to_string()),
            running: false,
        }];
        let query = [("host".to_string(), "\"><script>".to_string())];
        let page = index_page(&Index {
            store: "a <store>",
            columns: &["id", "host"],
            rows: &rows,
            matching: 1,
            query: &query,
        })
        .unwrap();
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("value=\"&quot;&gt;&lt;script&gt;\""));
        assert!(page.contains("href=\"/run/20261101T000000Z-a00001\""));
        assert!(page.contains("checkpoint 2 at &quot;now&quot;"));
        assert!(!page.contains("http-equiv=\"refresh\""));
    }

    /// The documented example run, still running at its second checkpoint.
    fn running_run() -> Run {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/example-run.json");
        let mut run = Run::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        run.progress = Some(Progress {
            state: RunState::Running,
            pid: 4242,
            pid_start_ticks: None,
            boot_id: None,
            rig: None,
            checkpoints: 2,
            checkpoint_at: Some("2026-11-21T00:53:57.404Z".to_string()),
            checkpoint_every_ns: 10_000_000_000,
            death: None,
        });
        run
    }

    #[test]
    fn a_running_runs_page_says_how_far_it_is_and_reloads() {
        let page = run_page(&running_run()).unwrap();
        assert!(page.contains("<meta http-equiv=\"refresh\" content=\"10\">"));
        assert!(page.contains("this page shows the run's last checkpoint and reloads every 10 s"));
        assert!(page.contains("RUNNING: running (pid 4242), checkpoint 2 at"));
        let mut ended = running_run();
        ended.progress = None;
        assert!(!run_page(&ended).unwrap().contains("http-equiv"));
    }
}
