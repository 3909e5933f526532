//! What a report says, before it is written in any language: headings, facts, the
//! verdict, alerts, tables and figures in reading order. The HTML, Markdown and text
//! writers only lay these blocks out (and escape them), so every kind says the same.

use super::curves::{self, Chart};
use super::figures::DecodedRun;
use super::{comparison, run_section, PlotKind, ReportError};
use latlab_model::run::Run;
use latlab_model::threshold::{Metric, Status};

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
        /// Pass, fail or none.
        status: Status,
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

    /// Adds a row.
    pub fn push(&mut self, cells: Vec<String>, colour: Option<usize>) {
        self.rows.push(Row { cells, colour });
    }
}

impl Document {
    /// The report of `runs` (at least one); `with_figures` adds the plots.
    pub fn build(runs: &[Run], with_figures: bool) -> Result<Document, ReportError> {
        let decoded = runs
            .iter()
            .map(DecodedRun::decode)
            .collect::<Result<Vec<_>, _>>()?;
        if let [one] = decoded.as_slice() {
            return Ok(Document {
                title: format!("latlab report: run {}", one.run.id),
                blocks: run_section::blocks(one, 1, with_figures),
            });
        }
        let merged = curves::merged_figures(runs)?;
        let mut blocks = vec![
            Block::Heading {
                level: 1,
                text: format!("latlab report: {} runs", runs.len()),
            },
            Block::Paragraph(
                "The runs side by side: the comparison table and overlaid plots (one line per \
                 run, every stream of a run merged), then each run's own report."
                    .to_string(),
            ),
        ];
        let degraded: Vec<String> = runs
            .iter()
            .filter(|r| r.degraded)
            .map(|r| r.id.clone())
            .collect();
        if !degraded.is_empty() {
            blocks.push(Block::Alert {
                severity: Severity::Degraded,
                title: "DEGRADED runs: their results are NOT real-time results".to_string(),
                lines: degraded,
            });
        }
        blocks.push(Block::Heading {
            level: 2,
            text: "Comparison".to_string(),
        });
        let metrics = [Metric::Percentile(99.0), Metric::Percentile(99.9)];
        blocks.extend(comparison::blocks(runs, &merged, &metrics, 0.0).blocks);
        if with_figures {
            blocks.push(Block::Heading {
                level: 2,
                text: "Plots".to_string(),
            });
            for plot in PlotKind::ALL {
                blocks.push(Block::Figure(curves::overlay(&decoded, &merged, plot)));
            }
        }
        for run in &decoded {
            blocks.extend(run_section::blocks(run, 2, with_figures));
        }
        Ok(Document {
            title: format!("latlab report: {} runs", runs.len()),
            blocks,
        })
    }
}
