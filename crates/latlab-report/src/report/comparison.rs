//! Runs side by side: the seeds' table (one row per run), how a later run differs from
//! the first in what it measured, each later run's verdicts against the first, and
//! their loads side by side. The report of several runs and `latlab compare` both show
//! these very blocks.

use super::document::{Block, Severity, Table};
use super::figures;
use crate::compare::{
    run_name, Change, Comparisons, Estimate, Judged, LoadComparison, LoadFigures, Outcome,
    PeriodTable, RunComparison, RunFigures, ThroughputChange, Tolerance, Verdict,
};
use latlab_model::outcome::ExitStatus;
use latlab_model::run::{Phase, PublishedRecord, Run};
use latlab_model::threshold::Metric;

/// The comparison's blocks: the table, then per later run what differs, the verdicts
/// and the loads, then the method.
pub(crate) fn blocks(runs: &[Run], merged: &[RunFigures], compared: &Comparisons) -> Vec<Block> {
    let mut blocks = vec![Block::Table(table(runs, merged))];
    for c in &compared.comparisons {
        if !c.differences.is_empty() {
            let lines = c.differences.iter().map(ToString::to_string).collect();
            blocks.push(Block::Alert {
                severity: Severity::Warning,
                title: format!(
                    "{} measured something else than the base {}: its latencies do not tell \
                     what a change did",
                    c.new.label(),
                    compared.base.label()
                ),
                lines,
            });
        }
        if c.new.published || compared.base.published {
            blocks.push(Block::Paragraph(format!(
                "{} beside {}: published figures, not measured here, are put side by side \
                 (period by period below, when the runs share periods), not judged. A \
                 table of several rows has its figures row by row only (no paper printed \
                 one over them all): `latlab show` of it lists them.",
                c.new.label(),
                compared.base.label()
            )));
            continue;
        }
        let lines = c
            .verdicts
            .iter()
            .map(|v| verdict_line(compared, c, v))
            .collect();
        blocks.push(Block::List(lines));
        if !c.loads.is_empty() {
            blocks.push(Block::Table(loads_table(c)));
        }
    }
    if let Some(periods) = &compared.periods {
        blocks.extend(period_blocks(periods));
    }
    // The method of the verdicts, when some were reached (none beside published figures).
    if compared.comparisons.iter().any(|c| !c.verdicts.is_empty()) {
        blocks.push(Block::Paragraph(format!("Method: {}", compared.method)));
    }
    if compared.comparisons.iter().any(|c| !c.loads.is_empty()) {
        blocks.push(Block::Paragraph(compared.loads_method.to_string()));
    }
    blocks
}

/// The seeds' table: one row per run.
fn table(runs: &[Run], merged: &[RunFigures]) -> Table {
    let mut table = Table::new(&[
        ("run", false),
        ("name", false),
        ("host", false),
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
        ("loads", false),
    ]);
    for (colour, (run, f)) in runs.iter().zip(merged).enumerate() {
        let status = run.exit_status();
        // An accepted degraded run passes, and still says what it was.
        let verdict = if run.degraded && status != ExitStatus::Untrusted {
            format!("{} · DEGRADED", status.word())
        } else {
            status.word().to_string()
        };
        let stat = |value: String, known: bool| figures::stat(f.samples, value, known);
        let percentile = |p: f64| {
            let value = f.percentile(p);
            stat(figures::us_percentile(value), value.is_some())
        };
        table.push(
            vec![
                run.id.clone(),
                run_name(run).unwrap_or_else(|| figures::MISSING.to_string()),
                figures::fact(f.host.clone(), |h| h),
                figures::fact(f.kernel.clone(), |k| k),
                verdict,
                figures::cell(f.samples, |n| n.to_string()),
                figures::cell(f.missed_periods, |m| m.to_string()),
                stat(figures::us(f.min), f.min.is_some()),
                stat(figures::us_f64(f.mean), f.mean.is_some()),
                percentile(50.0),
                percentile(99.0),
                percentile(99.9),
                stat(figures::us(f.max), f.max.is_some()),
                loads_cell(run),
            ],
            Some(colour),
        );
    }
    table
}

/// The runs period by period: for each run its phase at each period (a row per phase
/// where a run has several there), its minimum, mean and maximum, then the tick model
/// (Linux 2.4's jiffies nanosleep), and what the columns mean.
fn period_blocks(periods: &PeriodTable) -> Vec<Block> {
    let mut titles = vec!["period".to_string()];
    let runs = periods
        .runs
        .iter()
        .zip(&periods.names)
        .zip(&periods.published);
    for ((id, name), published) in runs {
        // The run by its name, else its id: the table above pairs them.
        let run = name.as_deref().unwrap_or(id);
        let run = match published {
            true => format!("{run}, published"),
            false => run.to_string(),
        };
        titles.push(format!("{run}: phase"));
        titles.extend(["min", "mean", "max"].map(|f| format!("{run}: {f} (µs)")));
    }
    if let Some(t) = &periods.tick_model {
        titles.push(format!("Linux 2.4 jiffies nanosleep at HZ={} (µs)", t.hz));
    }
    // Every column right-aligned but the phases'.
    let columns: Vec<(&str, bool)> = titles
        .iter()
        .map(|t| (t.as_str(), !t.ends_with(": phase")))
        .collect();
    let mut table = Table::new(&columns).captioned("Period by period");
    for row in &periods.rows {
        let mut cells = vec![row.period_ns.to_string()];
        for figures in &row.runs {
            match figures {
                Some(f) => cells.extend([
                    f.phase.clone(),
                    figures::stat(f.samples, figures::us(f.min_ns), f.min_ns.is_some()),
                    figures::stat(f.samples, figures::us_f64(f.mean_ns), f.mean_ns.is_some()),
                    figures::stat(f.samples, figures::us(f.max_ns), f.max_ns.is_some()),
                ]),
                None => cells.extend([
                    figures::MISSING.to_string(),
                    figures::MISSING.to_string(),
                    figures::MISSING.to_string(),
                    figures::MISSING.to_string(),
                ]),
            }
        }
        if periods.tick_model.is_some() {
            cells.push(figures::us(row.expected_without_hrtimers_ns));
        }
        table.push(cells, None);
    }
    let model = match &periods.tick_model {
        Some(t) => format!(
            "Linux 2.4 jiffies nanosleep: the tick model's delay of a relative sleep of P on \
             Linux 2.4, which sleeps ⌈P/tick⌉ + 1 jiffies, tick·(⌈P/tick⌉ + 1) − P with tick = \
             1/HZ, the papers' kernel; HZ={} from {}; the first period may be up to a tick \
             shorter. It is not what a current kernel without high-resolution timers \
             (highres=off) shows: that one adds no jiffy.",
            t.hz, t.from
        ),
        None => "Linux 2.4 jiffies nanosleep: unknown, as the tick rate is: no measured run \
                 read its kernel's CONFIG_HZ; give it with --hz."
            .to_string(),
    };
    vec![
        Block::Table(table),
        Block::Paragraph(format!(
            "Phases matched by period, a row per phase where a run has several at one period; \
             {} = the run has no phase there, {} = not in the published table. Published \
             figures are the paper's, as printed, converted to µs.",
            figures::MISSING,
            figures::NOT_IN_SOURCE
        )),
        Block::Paragraph(model),
    ]
}

/// A run's loads and their rates, phase by phase: `load: hackbench 1.23e4 messages/s`;
/// a published run's as its paper gives them.
fn loads_cell(run: &Run) -> String {
    if let Some(published) = &run.published {
        return published_loads(published, &run.phases);
    }
    let several = run.phases.len() > 1;
    let loads: Vec<String> = run
        .phases
        .iter()
        .flat_map(|p| {
            p.loads.iter().map(move |l| {
                let rate = l.rate.map_or_else(
                    || "no work".to_string(),
                    |r| format!("{} {}", number(r), l.rate_unit),
                );
                let phase = if several {
                    format!("{}: ", p.name)
                } else {
                    String::new()
                };
                format!("{phase}{} {rate}", l.spec)
            })
        })
        .collect();
    if loads.is_empty() {
        "none".to_string()
    } else {
        loads.join("; ")
    }
}

/// The loads of a published run's rows in the paper's words, once when all its rows
/// share one, else row by row (`unknown` where the paper does not say).
fn published_loads(published: &PublishedRecord, phases: &[Phase]) -> String {
    let loads: Vec<(&str, &str)> = phases
        .iter()
        .map(|p| {
            let load = published.load_of(&p.name).unwrap_or(figures::UNKNOWN);
            (p.name.as_str(), load)
        })
        .collect();
    match loads.as_slice() {
        [] => figures::UNKNOWN.to_string(),
        [(_, first), rest @ ..] if rest.iter().all(|(_, l)| l == first) => first.to_string(),
        several => several
            .iter()
            .map(|(phase, load)| format!("{phase}: {load}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A rate or time with three significant digits: `12300`, `12.3`, `0.0123`.
fn number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let digits = (2 - value.abs().log10().floor() as i32).max(0) as usize;
    format!("{value:.digits$}")
}

/// An estimate for a verdict line: `12.345 µs [11.0, 13.1]`, `≥ 400.000 µs`,
/// `0.040 % [0.016, 0.103]`, `12.0 per hour [6.20, 21.0]`.
fn estimate(e: &Estimate, metric: Judged) -> String {
    if let Judged::SpikeRate(_) = metric {
        return match e.interval {
            Some((low, high)) => format!(
                "{} per hour [{}, {}]",
                number(e.value),
                number(low),
                number(high)
            ),
            None => format!("{} per hour", number(e.value)),
        };
    }
    let latency = matches!(metric, Judged::Latency(_));
    let (scale, unit) = if latency { (1e-3, "µs") } else { (100.0, "%") };
    let value = format!("{:.3} {unit}", e.value * scale);
    if e.bound {
        return format!("≥ {value}");
    }
    match e.interval {
        Some((low, high)) if high.is_finite() => {
            format!("{value} [{:.3}, {:.3}]", low * scale, high * scale)
        }
        Some((low, _)) => format!("{value} [{:.3}, unbounded]", low * scale),
        None => value,
    }
}

/// How far the tolerance goes, for a verdict on a latency or a rate.
fn tolerance(t: Tolerance, latency: bool) -> String {
    match t {
        Tolerance::Absolute(_) if !latency => {
            "0 % (an absolute tolerance applies to latencies)".to_string()
        }
        t => t.to_string(),
    }
}

/// One verdict: `[load] p99: base … vs … (+1.9 %): no significant change`.
fn verdict_line(compared: &Comparisons, c: &RunComparison, v: &Verdict) -> String {
    let phase = v
        .phase
        .as_ref()
        .map_or_else(String::new, |p| format!("[{p}] "));
    let metric = v.metric;
    let (base, new) = match (v.outcome, &v.base, &v.new) {
        (Outcome::NoSamples, ..) => {
            return format!(
                "{phase}{metric}: FAILED: {} has no samples to compare",
                c.new.label()
            )
        }
        (Outcome::Judged(_), Some(b), Some(n)) => (b, n),
        _ => {
            let why = v.reason.as_deref().unwrap_or("a run lacks it");
            return format!("{phase}{metric}: CANNOT BE JUDGED: {why}");
        }
    };
    let latency = matches!(metric, Judged::Latency(_));
    let within = tolerance(compared.tolerance, latency);
    let verdict = match v.outcome {
        Outcome::Judged(Change::Regression) => format!("REGRESSION (beyond {within})"),
        Outcome::Judged(Change::Improvement) => format!("improvement (beyond {within})"),
        Outcome::Judged(Change::WithinTolerance) => format!("within tolerance ({within})"),
        Outcome::Judged(Change::NoSignificantChange) => "no significant change".to_string(),
        _ => "CANNOT BE JUDGED: a value known only as a lower bound (≥) may lie either side of \
              the other"
            .to_string(),
    };
    let relative = v
        .relative_change
        .map_or_else(String::new, |r| format!(" ({:+.1} %)", r * 100.0));
    let unmeasured = if metric == Judged::Latency(Metric::Mean)
        && !base.bound
        && (base.interval.is_none() || new.interval.is_none())
    {
        " (no interval: a standard deviation is unknown, the means are compared as they are)"
    } else {
        ""
    };
    format!(
        "{phase}{metric}: base {} {} vs {} {}{relative}: {verdict}{unmeasured}",
        compared.base.label(),
        estimate(base, metric),
        c.new.label(),
        estimate(new, metric),
    )
}

/// The loads of the base and one later run, side by side (the runs are named in the
/// verdict lines above it).
fn loads_table(c: &RunComparison) -> Table {
    let mut table = Table::new(&[
        ("phase", false),
        ("load", false),
        ("base rate", true),
        ("new rate", true),
        ("change", true),
        ("verdict", false),
        ("base CPU, wall time (s)", true),
        ("new CPU, wall time (s)", true),
    ]);
    for row in &c.loads {
        table.push(load_row(row), None);
    }
    table
}

fn load_row(row: &LoadComparison) -> Vec<String> {
    let rate = |f: &Option<LoadFigures>| match f {
        None => "did not run".to_string(),
        Some(LoadFigures { rate: None, .. }) => "no work".to_string(),
        Some(LoadFigures {
            rate: Some(rate),
            interval,
            ..
        }) => {
            let value = format!("{} {}", number(*rate), row.rate_unit);
            match interval {
                &Some((low, high)) => format!("{value} [{}, {}]", number(low), number(high)),
                None => value,
            }
        }
    };
    let times = |f: &Option<LoadFigures>| match f {
        None => figures::MISSING.to_string(),
        Some(f) => {
            let wall = format!("wall {}", number(f.wall_s));
            match (f.user_s, f.system_s, f.cpu_s) {
                (Some(user), Some(system), _) => {
                    format!("user {} / sys {} / {wall}", number(user), number(system))
                }
                (_, _, Some(cpu)) => format!("CPU {} / {wall}", number(cpu)),
                _ => wall,
            }
        }
    };
    let verdict = match row.change {
        Some(ThroughputChange::Lower) => "LOWER throughput".to_string(),
        Some(ThroughputChange::Higher) => "higher throughput".to_string(),
        Some(ThroughputChange::NoSignificantChange) => "no significant change".to_string(),
        None => "no interval (one phase)".to_string(),
    };
    let phase = match (&row.phase, row.base.as_ref().or(row.new.as_ref())) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => format!("all ({} phases)", f.phases),
        (None, None) => "all".to_string(),
    };
    vec![
        phase,
        row.load.clone(),
        rate(&row.base),
        rate(&row.new),
        row.relative_change.map_or_else(
            || figures::MISSING.to_string(),
            |r| format!("{:+.1} %", r * 100.0),
        ),
        verdict,
        times(&row.base),
        times(&row.new),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_runs, Judged};
    use latlab_model::published::reference_run;
    use latlab_model::width::Width;

    #[test]
    fn a_sweep_beside_table_4_is_shown_period_by_period_with_the_tick_model() {
        let mut sweep = crate::compare::periods_tests_sweep();
        sweep.name = Some("sweep".to_string());
        let runs = [sweep, reference_run("rr-table4").unwrap()];
        let compared = compare_runs(&runs, &[Judged::DEFAULT], Tolerance::NONE, None).unwrap();
        assert_eq!((compared.failures, compared.undecided), (0, 0));
        let text = crate::report::render_comparison(&runs, &compared, Width::Unlimited).unwrap();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn six_rows_at_one_period_are_six_rows_labelled_with_their_phases() {
        let mut run =
            crate::compare::periods_tests_phases_at(&[("idle", 50_000_000), ("disk", 50_000_000)]);
        run.name = Some("two".to_string());
        let runs = [run, reference_run("rr-table1").unwrap()];
        let compared = compare_runs(&runs, &[Judged::DEFAULT], Tolerance::NONE, None).unwrap();
        let text = crate::report::render_comparison(&runs, &compared, Width::Unlimited).unwrap();
        insta::assert_snapshot!(text);
    }

    /// Table 5 gives no sample counts: its samples and missed periods are unknown, not
    /// 0, and its rows at 50 ms stand beside Table 3's from its published rows.
    #[test]
    fn a_table_without_counts_has_unknown_samples_and_its_periods_still() {
        let runs = [
            reference_run("rr-table3").unwrap(),
            reference_run("rr-table5").unwrap(),
        ];
        let compared = compare_runs(&runs, &[Judged::DEFAULT], Tolerance::NONE, None).unwrap();
        let new = &compared.comparisons[0].new;
        assert_eq!((new.samples, new.missed_periods), (None, None));
        assert_eq!(compared.base.samples, Some(8000));
        let text = crate::report::render_comparison(&runs, &compared, Width::Unlimited).unwrap();
        insta::assert_snapshot!(text);
    }

    /// Table 1 was measured under disk stress: its loads are the paper's, not "none";
    /// Loongson's differ row by row.
    #[test]
    fn a_published_runs_loads_are_its_papers() {
        let table1 = reference_run("rr-table1").unwrap();
        assert_eq!(loads_cell(&table1), table1.published.as_ref().unwrap().load);
        let mut loongson = reference_run("loongson-table2").unwrap();
        let cell = loads_cell(&loongson);
        assert!(cell.starts_with("idle: idle; ping: ping; "), "{cell}");
        loongson.published.as_mut().unwrap().rows[0].load = None;
        assert!(loads_cell(&loongson).starts_with("idle: unknown; "));
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(number(12_345.6), "12346");
        assert_eq!(number(12.345), "12.3");
        assert_eq!(number(0.012345), "0.0123");
        assert_eq!(number(0.0), "0");
    }
}
