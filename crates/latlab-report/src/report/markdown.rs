//! The Markdown writer: GitHub-flavoured Markdown with the facts and tables of the
//! report, for a pull request, an issue or a wiki page. Plots are left out.

use super::document::{Block, Document, Severity, Table};
use std::fmt::Write as _;

/// Escapes text so Markdown shows it as it is: `<`, `>` and `&` become entities (so no
/// renderer can take them for HTML), the characters that start emphasis, code, links,
/// tables, headings or strike-through are backslash-escaped (CommonMark allows it before
/// any ASCII punctuation), and control characters become spaces or U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Writes the report.
pub(crate) fn render(document: &Document) -> String {
    let mut out = String::new();
    for block in &document.blocks {
        write_block(&mut out, block);
    }
    out
}

fn write_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { level, text } => {
            let _ = writeln!(out, "{} {}\n", "#".repeat(*level), escape(text));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "{}\n", escape(text));
        }
        Block::List(items) => write_list(out, items),
        Block::Verdict {
            status,
            headline,
            details,
        } => {
            let word = status.word();
            let _ = writeln!(out, "**Verdict: {word}**: {}\n", escape(headline));
            write_list(out, details);
        }
        Block::Alert {
            severity,
            title,
            lines,
        } => {
            let marker = match severity {
                Severity::Degraded => "[!CAUTION]",
                Severity::Warning => "[!WARNING]",
                Severity::Note => "[!NOTE]",
            };
            let _ = writeln!(out, "> {marker}\n> **{}**\n>", escape(title));
            for line in lines {
                let _ = writeln!(out, "> - {}", escape(line));
            }
            out.push('\n');
        }
        Block::Facts(pairs) => {
            out.push_str("| | |\n|---|---|\n");
            for (name, value) in pairs {
                let _ = writeln!(out, "| {} | {} |", escape(name), escape(value));
            }
            out.push('\n');
        }
        Block::Table(table) => write_table(out, table),
        Block::Figure(_) | Block::Bars(_) => {}
    }
}

fn write_list(out: &mut String, items: &[String]) {
    if items.is_empty() {
        return;
    }
    for item in items {
        let _ = writeln!(out, "- {}", escape(item));
    }
    out.push('\n');
}

fn write_table(out: &mut String, table: &Table) {
    let titles: Vec<String> = table.columns.iter().map(|c| escape(&c.title)).collect();
    let _ = writeln!(out, "| {} |", titles.join(" | "));
    let rules: Vec<&str> = table
        .columns
        .iter()
        .map(|c| if c.numeric { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "|{}|", rules.join("|"));
    for row in &table.rows {
        let cells: Vec<String> = row.cells.iter().map(|c| escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markdown_and_html() {
        assert_eq!(
            escape("<script>alert(1)</script>&\"'|*_"),
            "&lt;script&gt;alert(1)&lt;/script&gt;&amp;\"'\\|\\*\\_"
        );
        assert_eq!(escape("a\nb\u{1b}[31m"), "a b\u{FFFD}\\[31m");
    }
}
