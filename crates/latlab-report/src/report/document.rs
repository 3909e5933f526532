//! What a report says, before it is written in any language: headings, facts, the
//! verdict, alerts, tables and figures in reading order. The HTML, Markdown and text
//! writers only lay these blocks out (and escape them), so every kind says the same.
//! This module is the model only: `assemble.rs` chooses the blocks of each kind of
//! report, from the sections that build on this model.

use super::bars::Bars;
use super::chart::Chart;
use latlab_model::outcome::ExitStatus;

/// A whole report.
pub(crate) struct Document {
    /// The page's title.
    pub title: String,
    /// The content, in reading order.
    pub blocks: Vec<Block>,
}

/// One piece of a report. All text is plain: writers escape it.
pub(crate) enum Block {
    /// A heading; level 1 is the report's title.
    Heading {
        /// 1 (title) to 4.
        level: usize,
        /// The heading.
        text: String,
    },
    /// A paragraph.
    Paragraph(String),
    /// A bulleted list.
    List(Vec<String>),
    /// The verdict, shown prominently.
    Verdict {
        /// The run's outcome: what it exits with.
        status: ExitStatus,
        /// One line: what the verdict means.
        headline: String,
        /// The thresholds judged, or the failed checks.
        details: Vec<String>,
    },
    /// Something the reader must not miss.
    Alert {
        /// How loud.
        severity: Severity,
        /// The alert's first line.
        title: String,
        /// The reasons, one per line.
        lines: Vec<String>,
    },
    /// Named facts: (name, value).
    Facts(Vec<(String, String)>),
    /// A table.
    Table(Table),
    /// A plot (drawn only by writers that can show it).
    Figure(Chart),
    /// Stacked bars (drawn only by writers that can show them).
    Bars(Bars),
}

/// How loud an [`Block::Alert`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Severity {
    /// The results are not real-time results.
    Degraded,
    /// Something deserves attention.
    Warning,
    /// Context the reader needs (stopped early, imported).
    Note,
}

/// A table: columns with their units in the titles, rows of formatted cells.
pub(crate) struct Table {
    /// What the table holds, when its section's heading does not say it alone.
    pub caption: Option<String>,
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows.
    pub rows: Vec<Row>,
}

/// A table column.
pub(crate) struct Column {
    /// Its title, with the unit: `p99 (µs)`.
    pub title: String,
    /// True for numbers, which are aligned right.
    pub numeric: bool,
}

/// A table row.
pub(crate) struct Row {
    /// One formatted cell per column.
    pub cells: Vec<String>,
    /// The palette index of the line this row is drawn as, if it is one.
    pub colour: Option<usize>,
}

impl Table {
    /// A table with `columns`: (title, numeric).
    pub fn new(columns: &[(&str, bool)]) -> Table {
        Table {
            caption: None,
            columns: columns
                .iter()
                .map(|&(title, numeric)| Column {
                    title: title.to_string(),
                    numeric,
                })
                .collect(),
            rows: Vec::new(),
        }
    }

    /// The table with `caption`.
    pub fn captioned(mut self, caption: impl Into<String>) -> Table {
        self.caption = Some(caption.into());
        self
    }

    /// Adds a row.
    pub fn push(&mut self, cells: Vec<String>, colour: Option<usize>) {
        self.rows.push(Row { cells, colour });
    }
}
