//! The HTML writer: one self-contained page with inline CSS and inline SVG plots. No
//! script, no font, image or style sheet from anywhere else: it opens offline, prints,
//! and can be attached to a review as it is.

use super::document::{Block, Document, Severity, Table};
use super::{bars, plot, ReportError};
use latlab_model::outcome::ExitStatus;
use latlab_model::text::xml_escaped;
use std::fmt::Write as _;

/// Light theme, system fonts, tables that scroll rather than squeeze, plots that scale
/// with the page, and print rules that keep tables and plots whole.
const STYLE: &str = r#"
:root { --text: #1f2328; --muted: #59636e; --rule: #d1d9e0; --band: #f6f8fa; }
* { box-sizing: border-box; }
html { background: #fff; color: var(--text); }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 28px 36px 48px; }
h1 { font-size: 1.75rem; margin: 0 0 .25rem; line-height: 1.25; overflow-wrap: anywhere; }
h2 { font-size: 1.35rem; margin: 2.2rem 0 .6rem; padding-bottom: .3rem; border-bottom: 1px solid var(--rule); overflow-wrap: anywhere; }
h3 { font-size: 1.12rem; margin: 1.6rem 0 .5rem; }
h4 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
h1 + p { color: var(--muted); margin-top: 0; }
p, ul { max-width: 95ch; }
p { overflow-wrap: anywhere; }
.verdict { display: flex; align-items: baseline; gap: 1rem; flex-wrap: wrap; margin: 1.2rem 0; padding: 14px 18px; border-radius: 8px; border: 2px solid; }
.verdict .status { font-size: 1.6rem; font-weight: 800; letter-spacing: .04em; }
.verdict .headline { font-size: 1.1rem; font-weight: 600; }
.verdict ul { flex-basis: 100%; margin: .2rem 0 0; padding-left: 1.3rem; }
.verdict.pass { background: #dafbe1; border-color: #1a7f37; color: #0f5323; }
.verdict.fail { background: #ffebe9; border-color: #cf222e; color: #82071e; }
.verdict.none { background: var(--band); border-color: #818b98; color: #393f46; }
.verdict.undecided { background: #fff8c5; border-color: #9a6700; color: #4d2d00; }
.alert { margin: 1rem 0; padding: 12px 18px; border-radius: 8px; border-left: 6px solid; }
.alert strong { display: block; font-size: 1.05rem; }
.alert ul { margin: .3rem 0 0; padding-left: 1.3rem; }
.alert.degraded { background: #82071e; border-color: #4c0410; color: #fff; }
.alert.degraded strong { font-size: 1.5rem; letter-spacing: .05em; }
.alert.warning { background: #fff8c5; border-color: #bf8700; color: #3b2300; }
.alert.note { background: #ddf4ff; border-color: #0969da; color: #0a3069; }
dl.facts { display: grid; grid-template-columns: minmax(10rem, max-content) 1fr; gap: .25rem 1.5rem; margin: .4rem 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.table { overflow-x: auto; margin: .5rem 0 .8rem; }
.table:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
caption { text-align: left; color: var(--muted); font-size: .9rem; padding: 0 0 .25rem; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; vertical-align: bottom; }
td.num, th.num { text-align: right; }
td.num, td:first-child { white-space: nowrap; }
tbody tr:nth-child(even) { background: #fbfcfd; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .45em; border-radius: 2px; vertical-align: -.05em; }
figure { margin: 1.2rem 0 1.8rem; }
figure svg { display: block; width: 100%; max-width: 1100px; height: auto; border: 1px solid var(--rule); border-radius: 6px; }
figure svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
figcaption { color: var(--muted); font-size: .9rem; margin-top: .4rem; max-width: 110ch; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
nav { display: flex; gap: 1.2rem; margin: 0 0 1rem; padding-bottom: .5rem; border-bottom: 1px solid var(--rule); }
form.filter { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: .6rem 0 1rem; }
form.filter label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
form.filter input, form.filter select { font: inherit; padding: 2px 6px; }
.muted { color: var(--muted); }
td.wrap { white-space: normal; }
ul.keys { display: flex; flex-wrap: wrap; gap: .2rem 1.8rem; list-style: none; padding: 0; margin: .8rem 0; font-size: 1.05rem; }
ul.keys strong { font-size: 1.6rem; margin-right: .3rem; }
ul.keys .bad strong, .flag.worse { color: #a40e26; }
.flag { font-weight: 700; }
.flag.better { color: #116329; }
.flag.undecided { color: #7d4e00; }
th.window { white-space: nowrap; vertical-align: top; }
th.series { background: #fff; font-weight: 400; vertical-align: top; min-width: 15rem; max-width: 24rem; }
@media (max-width: 1150px) {
  main { padding: 20px 18px 40px; }
  table { font-size: 12.5px; }
  th, td { padding: 3px 6px; }
}
@page { size: A4 landscape; margin: 12mm; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  .verdict, .alert, .swatch, th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  figure, table, .verdict, .alert, dl.facts { break-inside: avoid; }
  h2, h3, h4 { break-after: avoid; }
  .table { overflow: visible; }
}
"#;

/// Writes the page.
pub(crate) fn render(document: &Document) -> Result<String, ReportError> {
    render_framed(document, &Frame::default())
}

/// What a page served by `latlab serve` has around its document.
#[derive(Default)]
pub(crate) struct Frame {
    /// Reload the page after this many seconds (a running run).
    pub refresh_s: Option<u32>,
    /// HTML placed first in the page (navigation, forms), already escaped.
    pub top: String,
    /// HTML placed after the document's blocks, already escaped.
    pub bottom: String,
}

/// Writes the page with its `frame`.
pub(crate) fn render_framed(document: &Document, frame: &Frame) -> Result<String, ReportError> {
    let mut out = String::with_capacity(256 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if let Some(seconds) = frame.refresh_s {
        let _ = writeln!(out, "<meta http-equiv=\"refresh\" content=\"{seconds}\">");
    }
    let _ = writeln!(out, "<title>{}</title>", xml_escaped(&document.title));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>\n<main>");
    out.push_str(&frame.top);
    let mut place = Place::default();
    for block in &document.blocks {
        write_block(&mut out, block, &mut place)?;
    }
    out.push_str(&frame.bottom);
    out.push_str(
        "<footer>Written by latlab from Run data alone; this page loads nothing from \
         anywhere.</footer>\n</main>\n</body>\n</html>\n",
    );
    Ok(out)
}

/// Where the writer is in the page: the heading a table without a caption of its own
/// is captioned with, and how many plots came before (each gets its own ids).
#[derive(Default)]
struct Place {
    heading: String,
    plots: usize,
}

fn write_block(out: &mut String, block: &Block, place: &mut Place) -> Result<(), ReportError> {
    match block {
        Block::Heading { level, text } => {
            let _ = writeln!(out, "<h{level}>{}</h{level}>", xml_escaped(text));
            place.heading = text.clone();
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "<p>{}</p>", xml_escaped(text));
        }
        Block::List(items) => write_list(out, items),
        Block::Verdict {
            status,
            headline,
            details,
        } => {
            let class = match status {
                ExitStatus::Passed => "pass",
                ExitStatus::NoThresholds => "none",
                ExitStatus::Undecided | ExitStatus::Incomplete => "undecided",
                ExitStatus::ThresholdFailed
                | ExitStatus::CouldNotMeasure
                | ExitStatus::Untrusted => "fail",
            };
            let word = status.word();
            let _ = writeln!(
                out,
                "<div class=\"verdict {class}\"><span class=\"status\">{word}</span>\
                 <span class=\"headline\">{}</span>",
                xml_escaped(headline)
            );
            write_list(out, details);
            out.push_str("</div>\n");
        }
        Block::Alert {
            severity,
            title,
            lines,
        } => {
            let class = match severity {
                Severity::Degraded => "degraded",
                Severity::Warning => "warning",
                Severity::Note => "note",
            };
            let _ = writeln!(
                out,
                "<div class=\"alert {class}\" role=\"alert\"><strong>{}</strong>",
                xml_escaped(title)
            );
            write_list(out, lines);
            out.push_str("</div>\n");
        }
        Block::Facts(pairs) => {
            out.push_str("<dl class=\"facts\">\n");
            for (name, value) in pairs {
                let _ = writeln!(
                    out,
                    "<dt>{}</dt><dd>{}</dd>",
                    xml_escaped(name),
                    xml_escaped(value)
                );
            }
            out.push_str("</dl>\n");
        }
        Block::Table(table) => write_table(
            out,
            table,
            table.caption.as_deref().unwrap_or(&place.heading),
        ),
        Block::Figure(chart) => {
            // The plot is named by its title and described by the figure's caption.
            place.plots += 1;
            let id = format!("plot-{}", place.plots);
            let caption_id = format!("{id}-caption");
            out.push_str("<figure>\n");
            out.push_str(&plot::svg(
                chart,
                &id,
                plot::Description::Elsewhere(&caption_id),
            )?);
            let _ = writeln!(
                out,
                "<figcaption id=\"{caption_id}\">{}</figcaption>\n</figure>",
                xml_escaped(&chart.explanation)
            );
        }
        Block::Bars(drawing) => {
            place.plots += 1;
            let id = format!("plot-{}", place.plots);
            let caption_id = format!("{id}-caption");
            out.push_str("<figure>\n");
            out.push_str(&bars::svg(drawing, &id, &caption_id));
            let _ = writeln!(
                out,
                "<figcaption id=\"{caption_id}\">{}</figcaption>\n</figure>",
                xml_escaped(&drawing.explanation)
            );
        }
    }
    Ok(())
}

fn write_list(out: &mut String, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str("<ul>\n");
    for item in items {
        let _ = writeln!(out, "<li>{}</li>", xml_escaped(item));
    }
    out.push_str("</ul>\n");
}

/// The start of a table, up to its caption, in a region of its own: the region
/// scrolls sideways when the table is wider than the page, and is named by the caption
/// and focusable so that a keyboard can scroll it (WCAG 2.1.1; axe's
/// scrollable-region-focusable).
pub(crate) fn table_start(caption: &str) -> String {
    let caption = xml_escaped(caption);
    format!(
        "<div class=\"table\" role=\"region\" tabindex=\"0\" aria-label=\"{caption}\"><table>\n\
         <caption>{caption}</caption>\n"
    )
}

fn write_table(out: &mut String, table: &Table, caption: &str) {
    out.push_str(&table_start(caption));
    out.push_str("<thead><tr>");
    let class = |numeric: bool| if numeric { " class=\"num\"" } else { "" };
    for column in &table.columns {
        let _ = write!(
            out,
            "<th{}>{}</th>",
            class(column.numeric),
            xml_escaped(&column.title)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (i, (cell, column)) in row.cells.iter().zip(&table.columns).enumerate() {
            let _ = write!(out, "<td{}>", class(column.numeric));
            if let (0, Some(colour)) = (i, row.colour) {
                let _ = write!(
                    out,
                    "<span class=\"swatch\" style=\"background:{}\"></span>",
                    plot::colour_hex(colour)
                );
            }
            let _ = write!(out, "{}</td>", xml_escaped(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}
