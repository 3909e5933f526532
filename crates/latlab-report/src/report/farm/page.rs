//! The farm view as a page of `latlab serve`: the key numbers first (rigs, runs,
//! failing rigs, regressions), the regressions, each rig's latest run, then each
//! rig's series window by window. The tables fit a window 800 px wide; any wider one
//! scrolls inside a region of its own that a keyboard can focus.
//!
//! Every text that comes from a Run or a request is escaped here.

use super::{Farm, FarmRig, FarmRun, FarmSeries, Flag, Judgement, Window, WindowFigures, JUDGED};
use crate::report::document::Document;
use crate::report::html::{self, table_start, Frame};
use crate::report::site::{filter_form, nav, percent_encoded};
use crate::report::ReportError;
use latlab_model::run::Percentile;
use latlab_model::series::SeriesKey;
use latlab_model::spec::format_cpu_list;
use latlab_model::stamp::rfc3339;
use latlab_model::text::{counted, xml_escaped};
use latlab_model::Nanos;
use std::fmt::Write as _;
use std::time::SystemTime;

/// The page of `farm`, read from `store` (in words), with the request's filters
/// (`query`, decoded).
pub fn farm_page(
    farm: &Farm,
    store: &str,
    query: &[(String, String)],
) -> Result<String, ReportError> {
    let document = Document {
        title: "latlab: farm".to_string(),
        blocks: Vec::new(),
    };
    let mut top = nav();
    top.push_str("<h1>latlab: farm</h1>\n");
    keys(&mut top, farm);
    let _ = writeln!(
        top,
        "<p>The runs of {} as of {} (this page's time): each rig's latest run, then each \
         series — runs of one rig that measured the same thing — over the 24 hours and the \
         7 days before, by the runs' starts, and over all its runs. A worst figure marked \
         ≥ may be higher: a run's figure was a bound, or unknown. The latest run of each \
         series is judged against the run before it as <code>latlab compare</code> judges \
         ({}, tolerance 10 %).</p>",
        xml_escaped(store),
        minute(Some(farm.now)),
        xml_escaped(&JUDGED.describe()),
    );
    regressions(&mut top, farm);
    top.push_str(&filter_form("/farm", &[], query));
    if farm.rigs.is_empty() {
        top.push_str("<p>No runs match.</p>\n");
    } else {
        rigs(&mut top, farm);
        top.push_str("<h2>Series</h2>\n");
        for (index, rig) in farm.rigs.iter().enumerate() {
            series(&mut top, index, rig);
        }
    }
    html::render_framed(
        &document,
        &Frame {
            refresh_s: None,
            top,
            bottom: String::new(),
        },
    )
}

/// The key numbers, first on the page.
fn keys(out: &mut String, farm: &Farm) {
    let failing = farm.failing();
    let regressions = farm.regressions().count();
    let running = farm.rigs.iter().filter(|r| r.latest.running()).count();
    let item = |class: &str, n: usize, words: &str| {
        format!("<li{class}><strong>{n}</strong> {words}</li>")
    };
    let bad = |n: usize| if n > 0 { " class=\"bad\"" } else { "" };
    let _ = writeln!(
        out,
        "<ul class=\"keys\">{}{}{}{}{}</ul>",
        item("", farm.rigs.len(), plural(farm.rigs.len(), "rig")),
        item(
            "",
            farm.runs,
            &format!(
                "{}, {} in the last 24 h",
                plural(farm.runs, "run"),
                farm.runs_in(Window::Day)
            )
        ),
        item(bad(failing), failing, "failing (latest run)"),
        item(
            bad(regressions),
            regressions,
            plural(regressions, "regression")
        ),
        item("", running, "measuring now"),
    );
}

/// `noun`, or its plural for any count but 1.
fn plural(n: usize, noun: &str) -> &str {
    match (n, noun) {
        (1, _) => noun,
        (_, "rig") => "rigs",
        (_, "run") => "runs",
        _ => "regressions",
    }
}

/// The regressions, each with its comparison, when there are any.
fn regressions(out: &mut String, farm: &Farm) {
    let found: Vec<(&FarmRig, &FarmSeries)> = farm.regressions().collect();
    if found.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<div class=\"alert warning\" role=\"alert\"><strong>{}: the latest run worse than \
         the one before</strong>\n<ul>",
        counted(found.len() as u64, "regression")
    );
    for (rig, series) in found {
        let _ = writeln!(
            out,
            "<li>{} · {}: {}</li>",
            xml_escaped(&rig.rig),
            xml_escaped(&series_label(&series.key)),
            judgement(series)
        );
    }
    out.push_str("</ul></div>\n");
}

/// The rigs, each with its latest run.
fn rigs(out: &mut String, farm: &Farm) {
    out.push_str("<h2>Rigs</h2>\n");
    out.push_str(&table_start("Each rig's latest run"));
    out.push_str(
        "<thead><tr><th>rig</th><th>host, kernel</th><th>latest run</th><th>outcome</th>\
         <th class=\"num\">samples</th><th class=\"num\">p99.9</th><th class=\"num\">max</th>\
         <th class=\"num\">runs: 24 h, 7 d, all</th></tr></thead>\n<tbody>\n",
    );
    for (i, rig) in farm.rigs.iter().enumerate() {
        let run = &rig.latest;
        // One line per series the run is in: a probe's figures never mix with another's.
        let per_series = |figure: &dyn Fn(&latlab_model::series::SeriesFigures) -> String| {
            run.series
                .iter()
                .map(|f| match run.series.len() {
                    1 => figure(f),
                    _ => format!("{}: {}", f.key.probe, figure(f)),
                })
                .map(|line| xml_escaped(&line))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#rig-{i}\">{}</a></td><td class=\"wrap\">{}<br>{}</td>\
             <td>{}<br><span class=\"muted\">started {}</span></td><td class=\"wrap\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>",
            xml_escaped(&rig.rig),
            xml_escaped(run.host.as_deref().unwrap_or("unknown host")),
            xml_escaped(run.kernel.as_deref().unwrap_or("unknown kernel")),
            run_link(&run.id),
            minute(run.started_at),
            outcome(run),
            per_series(&|f| f.samples.to_string()),
            per_series(&|f| latency(f.p99_9)),
            per_series(&|f| latency(f.max_ns.map(Percentile::Exact))),
            rig.runs
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// A rig's series: three rows each, one per window.
fn series(out: &mut String, index: usize, rig: &FarmRig) {
    let _ = writeln!(
        out,
        "<h3 id=\"rig-{index}\">{} <span class=\"muted\">({})</span></h3>",
        xml_escaped(&rig.rig),
        xml_escaped(rig.latest.host.as_deref().unwrap_or("unknown host"))
    );
    out.push_str(&table_start(&format!("The series of {}", rig.rig)));
    out.push_str(
        "<thead><tr><th>series, its latest run</th><th>runs started</th>\
         <th class=\"num\">runs</th><th class=\"num\">samples</th>\
         <th class=\"num\">worst max</th><th class=\"num\">worst p99.9</th>\
         <th class=\"num\">spike rate (per hour)</th></tr></thead>\n",
    );
    for series in &rig.series {
        out.push_str("<tbody>\n");
        for (row, (window, figures)) in series.windows.iter().enumerate() {
            out.push_str("<tr>");
            if row == 0 {
                let _ = write!(
                    out,
                    "<th class=\"series\" scope=\"rowgroup\" rowspan=\"{}\">{}</th>",
                    series.windows.len(),
                    series_cell(series)
                );
            }
            let _ = writeln!(
                out,
                "<th class=\"window\" scope=\"row\">{}</th>{}</tr>",
                window.label(),
                window_cells(figures)
            );
        }
        out.push_str("</tbody>\n");
    }
    out.push_str("</table></div>\n");
}

/// The first cell of a series: what it measured (a link to its trend), its latest
/// run and how that compares with the run before.
fn series_cell(series: &FarmSeries) -> String {
    let trend = format!(
        "/trend?series={}&metric=p99.9",
        percent_encoded(&series.key.id())
    );
    format!(
        "<a href=\"{}\">{}</a><br><span class=\"muted\">{} · series {}</span><br>latest {}: {}",
        xml_escaped(&trend),
        xml_escaped(&series_label(&series.key)),
        xml_escaped(&series.key.origin),
        xml_escaped(&series.key.id()),
        run_link(&series.latest),
        judgement(series)
    )
}

/// What measuring a series is: `timer abs 1 ms fifo:95 · cpu 0-3 · load none`.
pub fn series_label(key: &SeriesKey) -> String {
    let period = key
        .period
        .split('+')
        .map(|p| p.parse().map_or(p.to_string(), |ns| Nanos(ns).to_string()))
        .collect::<Vec<_>>()
        .join("+");
    let cpus = match key.cpus.is_empty() {
        true => "?".to_string(),
        false => format_cpu_list(&key.cpus),
    };
    format!(
        "{} {} {period} {} · cpu {cpus} · load {}",
        key.probe, key.method, key.policy, key.load
    )
}

/// How the latest run of a series compares with the one before, as HTML: its flag
/// (`worse`, `better`, `same`, `undecided`) and a link to the comparison.
fn judgement(series: &FarmSeries) -> String {
    let Some(previous) = &series.previous else {
        return "its first run".to_string();
    };
    let compare = format!(
        "<a href=\"{}\">compared with the run before</a>",
        xml_escaped(&format!(
            "/compare?base={}&new={}",
            percent_encoded(previous),
            percent_encoded(&series.latest)
        ))
    );
    let flag = |flag: Flag| format!("<span class=\"flag {0}\">{0}</span>", flag.word());
    match &series.judgement {
        Judgement::FirstRun | Judgement::NotJudged => {
            format!("not judged: a run is no longer stored ({compare})")
        }
        Judgement::Unknown(why) => {
            format!(
                "{}: {} ({compare})",
                flag(Flag::Undecided),
                xml_escaped(why)
            )
        }
        judged @ Judgement::Judged {
            relative_change, ..
        } => {
            let change = relative_change
                .map(|r| format!(", p99.9 {:+.0} %", r * 100.0))
                .unwrap_or_default();
            let flag = flag(judged.flag().unwrap_or(Flag::Undecided));
            format!("{flag}{change} ({compare})")
        }
    }
}

/// A link to a run's page, named by its id.
fn run_link(id: &str) -> String {
    format!(
        "<a href=\"{}\">{}</a>",
        xml_escaped(&format!("/run/{}", percent_encoded(id))),
        xml_escaped(id)
    )
}

/// A run's outcome and, while it runs or after it died, its state.
fn outcome(run: &FarmRun) -> String {
    let verdict = run.verdict.replace('-', " ");
    let verdict = match run.failed() {
        true => format!(
            "<span class=\"flag worse\">{}</span>",
            xml_escaped(&verdict)
        ),
        false => xml_escaped(&verdict),
    };
    match &run.progress {
        Some(progress) => format!("{verdict}<br>{}", xml_escaped(&progress.describe())),
        None => verdict,
    }
}

/// A window's figures: runs, samples, worst max, worst p99.9, spike rate.
fn window_cells(figures: &WindowFigures) -> String {
    let cell = |text: String| format!("<td class=\"num\">{}</td>", xml_escaped(&text));
    let figure = |text: String| match figures.runs {
        0 => cell("–".to_string()),
        _ => cell(text),
    };
    [
        cell(figures.runs.to_string()),
        cell(figures.samples.to_string()),
        figure(latency(figures.max)),
        figure(latency(figures.p99_9)),
        figure(figures.spike_rate.map_or("unknown".to_string(), |r| {
            format!("{:.1} above {}", r.per_hour, r.above_ns)
        })),
    ]
    .concat()
}

/// A latency with its unit, a bound as `≥ 7.2 ms`, unknown as `unknown`.
fn latency(figure: Option<Percentile>) -> String {
    figure.map_or("unknown".to_string(), |p| p.to_string())
}

/// An instant to the minute, in UTC: `2026-11-28 12:00 UTC`; `unknown`.
fn minute(at: Option<SystemTime>) -> String {
    match at {
        Some(at) => format!(
            "{} UTC",
            rfc3339(at).get(..16).unwrap_or("").replacen('T', " ", 1)
        ),
        None => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's content, without the style sheet every page shares.
    fn content(page: &str) -> &str {
        let start = page.find("<main>").unwrap();
        &page[start..page.find("</main>").unwrap()]
    }

    #[test]
    fn the_page_shows_the_key_numbers_first_then_rigs_and_series() {
        let mut farm = super::super::tests::farm();
        // The timer series of rig1 got worse.
        farm.rigs[0].series[1].judgement = Judgement::Judged {
            change: crate::compare::Change::Regression,
            relative_change: Some(0.5),
        };
        let query = [("host".to_string(), "rig*".to_string())];
        let page = farm_page(&farm, "farm.sqlite", &query).unwrap();
        insta::assert_snapshot!(content(&page));
    }

    #[test]
    fn the_page_escapes_what_runs_and_requests_say() {
        let mut farm = super::super::tests::farm();
        farm.rigs[0].latest.host = Some("<script>alert(1)</script>".to_string());
        farm.rigs[0].series[0].key.load = "scenario:\"><b>".to_string();
        let query = [("host".to_string(), "\"><script>".to_string())];
        let page = farm_page(&farm, "a <store>", &query).unwrap();
        assert!(
            !page.contains("<script>") && !page.contains("<b>"),
            "{page}"
        );
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("a &lt;store&gt;"));
    }
}
