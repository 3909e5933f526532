//! The text writer: the report for a terminal or a plain-text attachment, with aligned
//! tables and, for a terminal, ANSI emphasis on what must not be missed (the degraded
//! banner, warnings, the verdict). Plots are left out.

use super::document::{Block, Document, Severity, Table};
use comfy_table::{presets, CellAlignment};
use latlab_model::outcome::ExitStatus;
use std::fmt::Write as _;

/// Paragraphs are wrapped at this width.
const WIDTH: usize = 100;

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

/// Writes the report.
pub(crate) fn render(document: &Document, ansi: Ansi) -> String {
    let mut out = String::new();
    for block in &document.blocks {
        write_block(&mut out, block, ansi);
    }
    out
}

fn write_block(out: &mut String, block: &Block, ansi: Ansi) {
    match block {
        Block::Heading { level, text } => {
            let text = clean(text);
            let rule = match level {
                1 => '=',
                2 => '-',
                _ => '·',
            };
            let width = text.chars().count();
            let _ = writeln!(out, "{text}\n{}\n", rule.to_string().repeat(width));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "{}\n", wrap(&clean(text), "", ""));
        }
        Block::List(items) => write_list(out, "", items),
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
            let _ = writeln!(out, "VERDICT: {word}: {}", clean(headline));
            write_list(out, "", details);
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
            let _ = writeln!(out, "{prefix}{}", ansi.emphasise(style, &clean(title)));
            write_list(out, prefix, lines);
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
                    wrap(&clean(value), &format!("{name}{pad}"), &indent)
                );
            }
            out.push('\n');
        }
        Block::Table(table) => write_table(out, table),
        Block::Figure(_) | Block::Bars(_) => {}
    }
}

fn write_list(out: &mut String, prefix: &str, items: &[String]) {
    for item in items {
        let first = format!("{prefix}  • ");
        let rest = format!("{prefix}    ");
        let _ = writeln!(out, "{}", wrap(&clean(item), &first, &rest));
    }
    out.push('\n');
}

/// Wraps `text` at [`WIDTH`] columns: the first line starts with `first`, the others
/// with `rest`. A word longer than a line stays whole.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = first.to_string();
    let mut column = first.chars().count();
    let mut line_start = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = word.chars().count();
        if !line_start && column + 1 + len > WIDTH {
            out.push('\n');
            out.push_str(rest);
            column = rest.chars().count();
            line_start = true;
        }
        if !line_start {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
        line_start = false;
    }
    out
}

fn write_table(out: &mut String, table: &Table) {
    let mut t = comfy_table::Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    // Numbers are narrower than their titles: a title's first word goes on a line of
    // its own (`p99.9` over `(µs)`), which keeps wide tables within a terminal.
    t.set_header(table.columns.iter().map(|c| {
        let title = clean(&c.title);
        if c.numeric {
            title.replacen(' ', "\n", 1)
        } else {
            title
        }
    }));
    for row in &table.rows {
        t.add_row(row.cells.iter().map(|c| clean(c)));
    }
    for (i, column) in table.columns.iter().enumerate() {
        if let (true, Some(c)) = (column.numeric, t.column_mut(i)) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{t}\n");
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

    #[test]
    fn wraps_at_the_width_with_indents() {
        let text = "word ".repeat(40);
        let wrapped = wrap(&text, "- ", "  ");
        assert!(wrapped.lines().count() > 1);
        assert!(wrapped.lines().all(|l| l.chars().count() <= WIDTH));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("  word")));
    }
}
