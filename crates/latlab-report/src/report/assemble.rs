//! Which blocks each kind of report holds, in which order: the report of one run or of
//! several (with their comparison first), and the run summary.

use super::curves;
use super::document::{Block, Document, Severity};
use super::figures::{self, DecodedRun};
use super::{comparison, run_section, summary, LatencyAxis, PlotKind, ReportError};
use crate::compare::{compare_runs, Judged, Tolerance};
use latlab_model::run::Run;

/// The report of `runs` (at least one); `plots` adds the plots, with their latency
/// axis.
pub(crate) fn report(runs: &[Run], plots: Option<LatencyAxis>) -> Result<Document, ReportError> {
    let decoded = runs
        .iter()
        .map(DecodedRun::decode)
        .collect::<Result<Vec<_>, _>>()?;
    if let [one] = decoded.as_slice() {
        return Ok(Document {
            title: format!("latlab report: run {}", one.run.id),
            blocks: run_section::blocks(one, 1, plots),
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
    // The verdicts `latlab compare` draws by default, so that a pair of runs gets one.
    let compared = compare_runs(runs, &[Judged::DEFAULT], Tolerance::DEFAULT, None)
        .map_err(ReportError::from)?;
    blocks.extend(comparison::blocks(runs, &merged, &compared));
    if let Some(axis) = plots {
        blocks.push(Block::Heading {
            level: 2,
            text: "Plots".to_string(),
        });
        for plot in PlotKind::ALL {
            blocks.push(Block::Figure(curves::overlay(
                &decoded, &merged, plot, axis,
            )));
        }
    }
    for run in &decoded {
        blocks.extend(run_section::blocks(run, 2, plots));
    }
    Ok(Document {
        title: format!("latlab report: {} runs", runs.len()),
        blocks,
    })
}

/// The summary of each of `runs`, one after the other, each under a heading that
/// names its run.
pub(crate) fn summary(runs: &[Run]) -> Document {
    let mut blocks = Vec::new();
    for run in runs {
        let decoded = DecodedRun::figures_only(run);
        blocks.push(Block::Heading {
            level: 2,
            text: format!("Run {}", figures::run_label(run)),
        });
        blocks.extend(summary::blocks(&decoded));
    }
    Document {
        title: "latlab summary".to_string(),
        blocks,
    }
}
