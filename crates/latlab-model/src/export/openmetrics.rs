//! `openmetrics`: OpenMetrics text for Prometheus — each stream's latency as a
//! histogram with fixed bounds, plus gauges for its percentiles and counters for its
//! samples, missed periods and early wakes.

use super::{histogram_of, ExportError, Exporter};
use crate::run::{percentile_key, Run, REPORTED_PERCENTILES};
use std::fmt::Write as _;

pub(super) struct OpenMetrics;

/// Histogram bounds in seconds: 1-2-5 steps from 1 µs to 1 s.
const BOUNDS_NS: [u64; 19] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
];

fn seconds(ns: f64) -> String {
    let s = format!("{:.9}", ns / 1e9);
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Exporter for OpenMetrics {
    fn name(&self) -> &'static str {
        "openmetrics"
    }

    fn describe(&self) -> &'static str {
        "OpenMetrics text (Prometheus): latency histograms, percentile gauges, counters"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let mut out = String::new();
        let labels = |s: &crate::run::Stream| {
            format!(
                "run=\"{}\",host=\"{}\",phase=\"{}\",cpu=\"{}\",method=\"{}\"",
                escape(&run.id),
                // An empty label is an absent one: a fact the source lacked.
                escape(run.host.as_ref().map_or("", |h| h.hostname.as_str())),
                escape(&s.phase),
                s.cpu.map_or("-".to_string(), |c| c.to_string()),
                escape(s.method.as_deref().unwrap_or(""))
            )
        };
        let name = "latlab_wakeup_latency_seconds";
        let _ = writeln!(out, "# TYPE {name} histogram");
        let _ = writeln!(out, "# UNIT {name} seconds");
        let _ = writeln!(
            out,
            "# HELP {name} Wake-up latency: wake-up minus deadline."
        );
        for s in &run.streams {
            // A stream whose source kept no histogram has no series here.
            let Some(histogram) = histogram_of(s)? else {
                continue;
            };
            let buckets = histogram.known_buckets();
            // Samples known only as bounds lie somewhere up to the maximum: counted from
            // the first bucket that surely holds them.
            let bounded = histogram.bounded();
            let max = s.stats.max_ns.map_or(u64::MAX, |m| m.0.max(0) as u64);
            let l = labels(s);
            for bound in BOUNDS_NS {
                let below: u64 = buckets
                    .iter()
                    .filter(|(v, _)| *v <= bound)
                    .map(|(_, c)| c)
                    .sum::<u64>()
                    + if bound >= max { bounded } else { 0 };
                let _ = writeln!(
                    out,
                    "{name}_bucket{{{l},le=\"{}\"}} {below}",
                    seconds(bound as f64)
                );
            }
            let _ = writeln!(out, "{name}_bucket{{{l},le=\"+Inf\"}} {}", s.samples);
            if let Some(mean) = s.stats.mean_ns {
                let _ = writeln!(
                    out,
                    "{name}_sum{{{l}}} {}",
                    seconds(mean * s.samples as f64)
                );
            }
            let _ = writeln!(out, "{name}_count{{{l}}} {}", s.samples);
        }
        let gauge = "latlab_wakeup_latency_quantile_seconds";
        let _ = writeln!(out, "# TYPE {gauge} gauge");
        let _ = writeln!(out, "# UNIT {gauge} seconds");
        let _ = writeln!(
            out,
            "# HELP {gauge} Wake-up latency percentiles and maximum."
        );
        for s in &run.streams {
            let l = labels(s);
            // A percentile known only as a bound has no value to give.
            for p in REPORTED_PERCENTILES {
                if let Some(v) = s.stats.percentile(p).and_then(|v| v.exact()) {
                    let q = percentile_key(p / 100.0);
                    let _ = writeln!(
                        out,
                        "{gauge}{{{l},quantile=\"{q}\"}} {}",
                        seconds(v.0 as f64)
                    );
                }
            }
            if let Some(max) = s.stats.max_ns {
                let _ = writeln!(
                    out,
                    "{gauge}{{{l},quantile=\"1\"}} {}",
                    seconds(max.0 as f64)
                );
            }
        }
        let counters = [
            ("latlab_missed_periods", "Periods without a wake-up."),
            ("latlab_early_wakes", "Wake-ups before the deadline."),
        ];
        for (counter, help) in counters {
            let _ = writeln!(out, "# TYPE {counter} counter");
            let _ = writeln!(out, "# HELP {counter} {help}");
            for s in &run.streams {
                let value = match counter {
                    "latlab_missed_periods" => s.missed_periods,
                    _ => s.early_wakes,
                };
                // Uncounted by the source: no sample rather than a made-up 0.
                if let Some(value) = value {
                    let _ = writeln!(out, "{counter}_total{{{}}} {value}", labels(s));
                }
            }
        }
        out.push_str("# EOF\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixture;

    #[test]
    fn writes_every_figure_and_ends_with_eof() {
        insta::assert_snapshot!(OpenMetrics.export(&fixture::run()).unwrap());
    }

    #[test]
    fn histograms_are_cumulative() {
        let text = OpenMetrics.export(&fixture::run()).unwrap();
        for cpu in ["0", "1"] {
            let label = format!("cpu=\"{cpu}\"");
            let buckets: Vec<u64> = text
                .lines()
                .filter(|l| {
                    l.starts_with("latlab_wakeup_latency_seconds_bucket") && l.contains(&label)
                })
                .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(buckets.len(), BOUNDS_NS.len() + 1);
            assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
        }
    }

    #[test]
    fn seconds_are_written_without_exponents() {
        assert_eq!(seconds(2_000.0), "0.000002");
        assert_eq!(seconds(0.0), "0.0");
    }
}
