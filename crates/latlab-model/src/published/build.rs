//! A published table as a Run: one phase per row, one stream per row with a published
//! sample count, every figure the table lacks unknown.

use super::table::{PublishedRow, PublishedTable, RowFigures};
use super::{table_named, PublishedError, PublishedRecord, NOT_MEASURED_HERE, REFERENCE_PREFIX};
use crate::run::*;
use std::collections::BTreeMap;

/// The Run of the shipped table named `name` (`rr-table3`); its id is `ref:NAME`.
pub fn reference_run(name: &str) -> Result<Run, PublishedError> {
    let table = table_named(name)?;
    let mut phases = Vec::with_capacity(table.row.len());
    let mut streams = Vec::new();
    for row in &table.row {
        let figures = table.figures(row).map_err(PublishedError::Table)?;
        phases.push(Phase {
            name: row.label.clone(),
            started_at: None,
            elapsed_ns: None,
            loads: Vec::new(),
        });
        if let Some(samples) = row.samples {
            streams.push(stream(&table, row, &figures, samples));
        }
    }
    let mut lacks = table.lacks.clone();
    let uncounted: Vec<&str> = table
        .row
        .iter()
        .filter(|r| r.samples.is_none())
        .map(|r| r.label.as_str())
        .collect();
    if !uncounted.is_empty() {
        lacks.push(format!(
            "no sample count for {}: no stream, the figures are in the published rows only",
            uncounted.join(", ")
        ));
    }
    let mut run = Run::new(Tool {
        name: table.tool.clone(),
        version: None,
    });
    run.id = format!("{REFERENCE_PREFIX}{}", table.name);
    run.phases = phases;
    run.streams = streams;
    run.published = Some(PublishedRecord {
        note: NOT_MEASURED_HERE.to_string(),
        name: table.name.clone(),
        title: table.title.clone(),
        source: table.source.clone(),
        table: table.table.clone(),
        machine: table.machine.clone(),
        kernel: table.kernel.clone(),
        load: table.load.clone(),
        tool: table.tool.clone(),
        figure: table.figure.clone(),
        unit: table.unit.clone(),
        lacks,
        rows: table.row.clone(),
    });
    run.seal();
    run.check().map_err(|e| {
        PublishedError::Table(super::TableError {
            table: table.name.clone(),
            row: String::new(),
            field: "figures",
            problem: e.to_string(),
        })
    })?;
    Ok(run)
}

/// A row's stream: its figures, and `null` for all the table does not give.
fn stream(table: &PublishedTable, row: &PublishedRow, f: &RowFigures, samples: u64) -> Stream {
    let mut percentiles_ns = BTreeMap::new();
    if let Some(p) = f.p99_999 {
        percentiles_ns.insert(percentile_key(99.999), Percentile::Exact(p));
    }
    Stream {
        probe: table.probe.clone(),
        method: table.method.clone(),
        phase: row.label.clone(),
        thread: 0,
        cpu: None,
        policy: None,
        period_ns: f.period,
        samples,
        missed_periods: None,
        overrun_wakes: None,
        // No sample lies below the minimum: none early when it is not negative.
        early_wakes: f.min.filter(|m| m.0 >= 0).map(|_| 0),
        first_sample_ns: None,
        warm_up_samples: 0,
        drift_ns: None,
        elapsed_ns: None,
        timer_slack_ns: None,
        page_faults: None,
        stats: Statistics {
            min_ns: f.min,
            max_ns: f.max,
            mean_ns: f.mean,
            stddev_ns: f.stddev,
            percentiles_ns,
        },
        histogram: None,
        spikes: Spikes::default(),
        timeline: Timeline::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::published::names;
    use crate::Nanos;

    #[test]
    fn every_reference_is_a_run_that_reads_back() {
        for name in names() {
            let run = reference_run(name).unwrap();
            assert_eq!(run.id, format!("ref:{name}"));
            let record = run.published.as_ref().unwrap();
            assert_eq!(record.note, NOT_MEASURED_HERE);
            assert_eq!(run.phases.len(), record.rows.len());
            let back = Run::from_json(&run.to_json_pretty()).unwrap();
            assert_eq!(back, run, "{name}");
        }
    }

    #[test]
    fn what_a_table_lacks_is_unknown_never_zero() {
        let run = reference_run("rr-table3").unwrap();
        assert_eq!(run.streams.len(), 8);
        for s in &run.streams {
            assert_eq!(s.samples, 1000);
            assert!(s.histogram.is_none() && s.stats.percentiles_ns.is_empty());
            assert_eq!(s.stats.stddev_ns, None);
            assert_eq!(
                (s.missed_periods, s.first_sample_ns, s.policy.as_ref()),
                (None, None, None)
            );
        }
        // The busy-wait row's minimum is negative: how many woke early is not known.
        assert_eq!(run.streams[0].early_wakes, None);
        assert_eq!(run.streams[1].early_wakes, Some(0));
        assert_eq!(run.streams[1].stats.min_ns, Some(Nanos(18_000)));
        assert!(run.host.is_none() && run.started_at.is_none());
    }

    #[test]
    fn rows_without_a_count_are_no_streams_and_say_so() {
        let run = reference_run("loongson-table2").unwrap();
        assert!(run.streams.is_empty());
        // Their samples and missed periods are not counted: unknown, not 0.
        assert_eq!(
            (run.total_samples(), run.total_missed_periods()),
            (None, None)
        );
        let table3 = reference_run("rr-table3").unwrap();
        assert_eq!(table3.total_samples(), Some(8000));
        assert_eq!(table3.total_missed_periods(), None);
        let lacks = &run.published.as_ref().unwrap().lacks;
        assert!(
            lacks
                .iter()
                .any(|l| l.starts_with("no sample count for idle, ping")),
            "{lacks:?}"
        );
    }
}
