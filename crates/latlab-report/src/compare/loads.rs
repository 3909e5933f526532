//! Real time against real fast: each phase's background loads, base and new side by
//! side, so a change that buys latency with throughput shows both sides (McKenney,
//! "'Real Time' vs. 'Real Fast': How to Choose?", OLS 2009; OSADL compares kernels by
//! the system time of an image conversion).
//!
//! A load's rate in one phase is one figure, without an interval: it is one count over
//! one span. A load that ran in several phases of a run gets a row of its own, pooled
//! over those phases: their mean rate with a 95 % Student-t interval, and a verdict
//! when both runs have one.

use latlab_model::run::{CpuTime, LoadRecord, Run};
use latlab_model::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;

/// One load compared between the base and a new run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadComparison {
    /// The phase, or `None` for the row pooled over every phase the load ran in.
    pub phase: Option<String>,
    /// The load as given (`hackbench`, `exec:make -j4`).
    pub load: String,
    /// The rate's unit (`messages/s`, `CPU s/s`).
    pub rate_unit: String,
    /// The base run's figures (`None`: the load did not run there).
    pub base: Option<LoadFigures>,
    /// The new run's figures.
    pub new: Option<LoadFigures>,
    /// New rate / base rate − 1, when both are known and the base's is not 0.
    pub relative_change: Option<f64>,
    /// The verdict, when both rates have an interval.
    pub change: Option<ThroughputChange>,
}

/// What a load achieved in a run (in one phase, or pooled over several).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadFigures {
    /// The rate achieved (the mean over phases when pooled; `None`: it did no work).
    pub rate: Option<f64>,
    /// The rate's 95 % interval, when pooled over two or more phases.
    pub interval: Option<(f64, f64)>,
    /// The phases it is taken from.
    pub phases: usize,
    /// CPU time, user and system together, in seconds: what an `exec:` load's
    /// command used (its work).
    pub cpu_s: Option<f64>,
    /// CPU time in user mode of the load's processes, in seconds (`None`: not
    /// recorded).
    pub user_s: Option<f64>,
    /// CPU time in the kernel on behalf of the load's processes, in seconds.
    pub system_s: Option<f64>,
    /// How long the load ran (summed over phases when pooled), in seconds.
    pub wall_s: f64,
}

/// What a comparison concluded for a load's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThroughputChange {
    /// The new run's interval lies entirely below the base's.
    Lower,
    /// The new run's interval lies entirely above the base's.
    Higher,
    /// The intervals overlap.
    NoSignificantChange,
}

/// The two-sided 95 % quantile of Student's t for `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// The figures of one or several records of the same load.
fn figures(records: &[&LoadRecord]) -> LoadFigures {
    let rates: Option<Vec<f64>> = records.iter().map(|r| r.rate).collect();
    let n = records.len();
    let (rate, interval) = match rates {
        Some(rates) if n >= 2 => {
            let mean = rates.iter().sum::<f64>() / n as f64;
            let variance = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t95(n - 1) * (variance / n as f64).sqrt();
            (Some(mean), Some((mean - half, mean + half)))
        }
        Some(rates) => (rates.first().copied(), None),
        None => (None, None),
    };
    // The exec load counts its command's CPU time as its work, in ns.
    let cpu_s = records
        .iter()
        .all(|r| r.name == "exec")
        .then(|| records.iter().map(|r| r.work as f64 / 1e9).sum());
    let seconds = |part: fn(&CpuTime) -> Nanos| {
        let times: Option<Vec<CpuTime>> = records.iter().map(|r| r.cpu_time).collect();
        times.map(|t| t.iter().map(|t| part(t).0 as f64 / 1e9).sum())
    };
    LoadFigures {
        rate,
        interval,
        phases: n,
        cpu_s,
        user_s: seconds(|t| t.user_ns),
        system_s: seconds(|t| t.system_ns),
        wall_s: records.iter().map(|r| r.elapsed_ns.0 as f64 / 1e9).sum(),
    }
}

/// A run's loads: (phase, spec) → record, in phase order.
fn by_phase(run: &Run) -> Vec<(&str, &LoadRecord)> {
    run.phases
        .iter()
        .flat_map(|p| p.loads.iter().map(move |l| (p.name.as_str(), l)))
        .collect()
}

/// The records of `loads` of one (phase, spec).
fn matching<'a>(loads: &[(&str, &'a LoadRecord)], key: (&str, &str)) -> Vec<&'a LoadRecord> {
    let same = loads.iter().filter(|(p, r)| (*p, r.spec.as_str()) == key);
    same.map(|&(_, r)| r).collect()
}

/// One row from the records of each side.
fn row(phase: Option<&str>, base: &[&LoadRecord], new: &[&LoadRecord]) -> LoadComparison {
    let any = base.first().or(new.first()).expect("a row has a record");
    let side = |records: &[&LoadRecord]| (!records.is_empty()).then(|| figures(records));
    let (b, n) = (side(base), side(new));
    let rates = b
        .as_ref()
        .and_then(|b| b.rate)
        .zip(n.as_ref().and_then(|n| n.rate));
    let intervals = b
        .as_ref()
        .and_then(|b| b.interval)
        .zip(n.as_ref().and_then(|n| n.interval));
    LoadComparison {
        phase: phase.map(str::to_string),
        load: any.spec.clone(),
        rate_unit: any.rate_unit.clone(),
        relative_change: rates.filter(|(b, _)| *b > 0.0).map(|(b, n)| n / b - 1.0),
        change: intervals.map(|((b_low, b_high), (n_low, n_high))| {
            if n_high < b_low {
                ThroughputChange::Lower
            } else if n_low > b_high {
                ThroughputChange::Higher
            } else {
                ThroughputChange::NoSignificantChange
            }
        }),
        base: b,
        new: n,
    }
}

/// Every load of either run, phase by phase, then pooled rows for loads that ran in
/// several phases of a run.
pub fn compare_loads(base: &Run, new: &Run) -> Vec<LoadComparison> {
    let (base_loads, new_loads) = (by_phase(base), by_phase(new));
    let mut rows = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for &(phase, record) in base_loads.iter().chain(&new_loads) {
        let key = (phase, record.spec.as_str());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let (b, n) = (matching(&base_loads, key), matching(&new_loads, key));
        rows.push(row(Some(phase), &b, &n));
    }
    let mut phases_of: BTreeMap<&str, (Vec<&LoadRecord>, Vec<&LoadRecord>)> = BTreeMap::new();
    for &(_, r) in &base_loads {
        phases_of.entry(&r.spec).or_default().0.push(r);
    }
    for &(_, r) in &new_loads {
        phases_of.entry(&r.spec).or_default().1.push(r);
    }
    for (base_records, new_records) in phases_of.values() {
        if base_records.len() >= 2 || new_records.len() >= 2 {
            rows.push(row(None, base_records, new_records));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(spec: &str, rate: f64) -> LoadRecord {
        LoadRecord {
            spec: spec.into(),
            name: spec.split(':').next().unwrap().into(),
            params: Default::default(),
            cpus: vec![0],
            work: (rate * 1e9) as u64,
            unit: "units".into(),
            rate: Some(rate),
            rate_unit: "units/s".into(),
            elapsed_ns: Nanos::SECOND,
            ended: "stopped".into(),
            stop_ns: Nanos(0),
            notes: Vec::new(),
            cpu_time: None,
        }
    }

    #[test]
    fn one_phase_gives_a_change_without_a_verdict() {
        let rows = [row(
            Some("main"),
            &[&record("cpu", 100.0)],
            &[&record("cpu", 80.0)],
        )];
        assert_eq!(rows[0].change, None);
        assert!((rows[0].relative_change.unwrap() + 0.2).abs() < 1e-9);
        assert_eq!(rows[0].new.as_ref().unwrap().interval, None);
    }

    #[test]
    fn repeated_phases_give_intervals_and_a_verdict() {
        let base = [
            record("cpu", 100.0),
            record("cpu", 102.0),
            record("cpu", 98.0),
        ];
        let new = [
            record("cpu", 80.0),
            record("cpu", 81.0),
            record("cpu", 79.0),
        ];
        let (base, new): (Vec<_>, Vec<_>) = (base.iter().collect(), new.iter().collect());
        let pooled = row(None, &base, &new);
        let (low, high) = pooled.base.as_ref().unwrap().interval.unwrap();
        assert!(low < 100.0 && 100.0 < high, "{pooled:?}");
        assert_eq!(pooled.change, Some(ThroughputChange::Lower));
        let same = row(None, &base, &base);
        assert_eq!(same.change, Some(ThroughputChange::NoSignificantChange));
    }

    #[test]
    fn an_exec_load_shows_its_cpu_time() {
        let mut exec = record("exec:make", 1.5);
        let f = figures(&[&exec]);
        assert_eq!(f.cpu_s, Some(1.5));
        assert_eq!(
            (f.user_s, f.system_s),
            (None, None),
            "not recorded: unknown"
        );
        assert_eq!(f.wall_s, 1.0);
        exec.cpu_time = Some(CpuTime {
            user_ns: Nanos(1_000_000_000),
            system_ns: Nanos(500_000_000),
        });
        let twice = figures(&[&exec, &exec]);
        assert_eq!((twice.user_s, twice.system_s), (Some(2.0), Some(1.0)));
        assert_eq!(figures(&[&record("cpu", 1.0)]).cpu_s, None);
    }
}
