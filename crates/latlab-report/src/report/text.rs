//! The text writer: the report for a terminal or a plain-text attachment, with aligned
//! tables and, for a terminal, ANSI emphasis on what must not be missed (the degraded
//! banner, warnings, the verdict). Plots are left out. Laid out for a width: tables
//! are fitted to it (`crate::table`), text wrapped at it.

use super::document::{Block, Document, Severity, Table};
use crate::table::{Align, Frame, TextTable};
use latlab_model::outcome::ExitStatus;
use latlab_model::width::{self, Width};
use std::fmt::Write as _;

/// Paragraphs are wrapped at this width, or at the terminal's when it is narrower:
/// longer lines read badly however wide the window.
const PROSE: usize = 100;

/// Makes text safe for a terminal (one rule for every printer of text from files).
fn clean(text: &str) -> String {
    latlab_model::text::terminal_safe(text).into_owned()
}

/// Whether text is emphasised with ANSI escape sequences (for a terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ansi {
    /// Plain text: files, pipes, reports.
    Off,
    /// Bold and colour for a terminal.
    On,
}

impl Ansi {
    /// `text` in `style` (an SGR code: `1` bold, `1;31` bold red, `1;32` bold green).
    fn emphasise(self, style: &str, text: &str) -> String {
        match self {
            Ansi::Off => text.to_string(),
            Ansi::On => format!("\x1b[{style}m{text}\x1b[0m"),
        }
    }
}

const BOLD: &str = "1";
const RED: &str = "1;31";
const GREEN: &str = "1;32";

/// Writes the report, laid out for `width`.
pub(crate) fn render(document: &Document, ansi: Ansi, width: Width) -> String {
    let mut out = String::new();
    let layout = Layout {
        prose: width.or(PROSE).min(PROSE),
        width,
    };
    for block in &document.blocks {
        write_block(&mut out, block, ansi, layout);
    }
    width.fold(&out)
}

/// How wide the text of a report is.
#[derive(Clone, Copy)]
struct Layout {
    /// Where paragraphs, lists and facts wrap.
    prose: usize,
    /// What tables fit.
    width: Width,
}

impl Layout {
    /// `text` wrapped at the prose width (see [`width::wrap`]).
    fn wrap(self, text: &str, first: &str, rest: &str) -> String {
        width::wrap(text, self.prose, first, rest)
    }

    /// A title (of an alert, of the verdict) on one line, as it always was, unless it
    /// does not fit: then wrapped, with room left for an alert's prefix (`!! `).
    fn title(self, text: &str, first: &str, rest: &str) -> String {
        let room = self.width.or(usize::MAX).saturating_sub(ALERT_PREFIX);
        let whole = format!("{first}{text}");
        match width::columns(&whole) > room {
            true => width::wrap(text, room, first, rest),
            false => whole,
        }
    }
}

/// The width of an alert's prefix (`!! `).
const ALERT_PREFIX: usize = 3;

fn write_block(out: &mut String, block: &Block, ansi: Ansi, layout: Layout) {
    match block {
        Block::Heading { level, text } => {
            let text = clean(text);
            let rule = match level {
                1 => '=',
                2 => '-',
                _ => '·',
            };
            let width = width::columns(&text).min(layout.width.or(usize::MAX));
            let _ = writeln!(out, "{text}\n{}\n", rule.to_string().repeat(width));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "{}\n", layout.wrap(&clean(text), "", ""));
        }
        Block::List(items) => write_list(out, "", items, layout),
        Block::Verdict {
            status,
            headline,
            details,
        } => {
            let style = match status {
                ExitStatus::Passed => GREEN,
                ExitStatus::NoThresholds => BOLD,
                _ => RED,
            };
            let word = ansi.emphasise(style, status.word());
            let headline = format!("{word}: {}", clean(headline));
            let _ = writeln!(out, "{}", layout.title(&headline, "VERDICT: ", "         "));
            write_list(out, "", details, layout);
        }
        Block::Alert {
            severity,
            title,
            lines,
        } => {
            let (prefix, style) = match severity {
                Severity::Degraded => ("!! ", RED),
                Severity::Warning => ("!  ", BOLD),
                Severity::Note => ("   ", BOLD),
            };
            for line in layout.title(&clean(title), "", "").lines() {
                let _ = writeln!(out, "{prefix}{}", ansi.emphasise(style, line));
            }
            write_list(out, prefix, lines, layout);
        }
        Block::Facts(pairs) => {
            let width = pairs
                .iter()
                .map(|(name, _)| name.chars().count())
                .max()
                .unwrap_or(0);
            for (name, value) in pairs {
                let name = clean(name);
                let pad = " ".repeat(width - name.chars().count() + 2);
                let indent = " ".repeat(width + 2);
                let _ = writeln!(
                    out,
                    "{}",
                    layout.wrap(&clean(value), &format!("{name}{pad}"), &indent)
                );
            }
            out.push('\n');
        }
        Block::Table(table) => write_table(out, table, layout.width),
        Block::Figure(_) | Block::Bars(_) => {}
    }
}

fn write_list(out: &mut String, prefix: &str, items: &[String], layout: Layout) {
    for item in items {
        let first = format!("{prefix}  • ");
        let rest = format!("{prefix}    ");
        let _ = writeln!(out, "{}", layout.wrap(&clean(item), &first, &rest));
    }
    out.push('\n');
}

fn write_table(out: &mut String, table: &Table, width: Width) {
    let mut t = TextTable::new(Frame::Boxed);
    // Numbers are narrower than their titles: a title's first word goes on a line of
    // its own (`p99.9` over `(µs)`), which keeps wide tables within a terminal.
    for c in &table.columns {
        let title = clean(&c.title);
        match c.numeric {
            true => t.column(title.replacen(' ', "\n", 1), Align::Right),
            false => t.column(title, Align::Left),
        };
    }
    for row in &table.rows {
        t.row(row.cells.iter().map(|c| clean(c)).collect());
    }
    let _ = writeln!(out, "{}\n", t.fit(width).text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_terminal_gets_escape_sequences() {
        assert_eq!(Ansi::Off.emphasise(RED, "FAIL"), "FAIL");
        assert_eq!(Ansi::On.emphasise(RED, "FAIL"), "\x1b[1;31mFAIL\x1b[0m");
    }

    #[test]
    fn control_characters_are_replaced() {
        assert_eq!(clean("vm\u{1b}[2J\nx"), "vm\u{FFFD}[2J x");
    }
}
