//! What a report says, before it is written in any language: headings, facts, the
//! verdict, alerts, tables and figures in reading order. The HTML, Markdown and text
//! writers only lay these blocks out (and escape them), so every kind says the same.

use super::curves::{self, Chart};
use super::figures::{self, DecodedRun, Unknowns};
use super::{run_section, PlotKind, ReportError};
use crate::compare::{compare, Change, RunFigures, METHOD};
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
        blocks.push(Block::Table(comparison_table(runs, &merged)));
        blocks.push(Block::List(changes(&merged)));
        blocks.push(Block::Paragraph(format!("Method: {METHOD}")));
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

/// The seeds' table: one row per run.
fn comparison_table(runs: &[Run], merged: &[RunFigures]) -> Table {
    let mut table = Table::new(&[
        ("run", false),
        ("host", false),
        ("scenario", false),
        ("kernel", false),
        ("verdict", false),
        ("samples", true),
        ("missed periods", true),
        ("min (µs)", true),
        ("mean (µs)", true),
        ("p50 (µs)", true),
        ("p99 (µs)", true),
        ("p99.9 (µs)", true),
        ("max (µs)", true),
    ]);
    for (colour, (run, f)) in runs.iter().zip(merged).enumerate() {
        let unknowns = Unknowns::of(run);
        let status = match run.verdict.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::None => "no thresholds",
        };
        let verdict = if run.degraded {
            format!("{status} · DEGRADED")
        } else {
            status.to_string()
        };
        table.push(
            vec![
                run.id.clone(),
                unknowns.or("host.hostname", || run.host.hostname.clone()),
                run.scenario
                    .clone()
                    .unwrap_or_else(|| figures::MISSING.to_string()),
                unknowns.or("host.kernel_release", || run.host.kernel_release.clone()),
                verdict,
                f.samples.to_string(),
                f.missed_periods.to_string(),
                figures::us(f.min),
                figures::us_f64(f.mean),
                figures::us(f.percentile(50.0)),
                figures::us(f.percentile(99.0)),
                figures::us(f.percentile(99.9)),
                figures::us(f.max),
            ],
            Some(colour),
        );
    }
    table
}

/// Each later run against the first, for p99 and p99.9, at 95 % confidence.
fn changes(merged: &[RunFigures]) -> Vec<String> {
    let Some((base, later)) = merged.split_first() else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for new in later {
        for metric in [Metric::Percentile(99.0), Metric::Percentile(99.9)] {
            let Some(c) = compare(base, new, metric, 0.0) else {
                lines.push(format!(
                    "{metric}: {} or {} has no samples to compare",
                    base.id, new.id
                ));
                continue;
            };
            let estimate = |e: &crate::compare::Estimate| match e.interval {
                Some((low, high)) => format!(
                    "{:.3} µs [{:.3}, {:.3}]",
                    e.value / 1e3,
                    low / 1e3,
                    high / 1e3
                ),
                None => format!("{:.3} µs", e.value / 1e3),
            };
            let verdict = match c.change {
                Change::Regression => "REGRESSION",
                Change::Improvement => "improvement",
                Change::NoSignificantChange => "no significant change",
            };
            lines.push(format!(
                "{metric}: {} {} → {} {} ({:+.1} %): {verdict}",
                base.id,
                estimate(&c.base),
                new.id,
                estimate(&c.new),
                c.relative_change * 100.0
            ));
        }
    }
    lines
}
