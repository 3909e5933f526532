//! `openmetrics`: OpenMetrics text for Prometheus — each stream's latency as a
//! histogram on log-spaced bounds, plus gauges for its percentiles and counters for its
//! samples, missed periods and early wakes.

mod buckets;

use super::{histogram_of, ExportError, Exporter};
use crate::run::{percentile_key, Run, REPORTED_PERCENTILES};
use std::fmt::Write as _;

pub(super) struct OpenMetrics;

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
        let kept = run
            .streams
            .iter()
            .map(|s| {
                // A stream whose source kept no histogram has no series here.
                Ok(histogram_of(s)?.map(|h| {
                    let values = buckets::known_values(s, &h);
                    (s, h, values)
                }))
            })
            .collect::<Result<Vec<_>, ExportError>>()?;
        let kept: Vec<_> = kept.into_iter().flatten().collect();
        let bounds = buckets::span(
            &kept
                .iter()
                .map(|(s, _, values)| (*s, values.as_slice()))
                .collect::<Vec<_>>(),
        );
        for (s, histogram, values) in &kept {
            let l = labels(s);
            let counts = buckets::cumulative(s, values, histogram, &bounds);
            for (bound, below) in bounds.iter().zip(counts) {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{{l},le=\"{}\"}} {below}",
                    seconds(*bound as f64)
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
    fn histograms_are_cumulative_and_end_with_the_count() {
        let run = fixture::run();
        let text = OpenMetrics.export(&run).unwrap();
        for stream in &run.streams {
            let label = format!("cpu=\"{}\"", stream.cpu.unwrap());
            let buckets: Vec<u64> = text
                .lines()
                .filter(|l| {
                    l.starts_with("latlab_wakeup_latency_seconds_bucket") && l.contains(&label)
                })
                .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
                .collect();
            assert!(buckets.len() > 2, "{text}");
            assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
            assert_eq!(buckets.last(), Some(&stream.samples));
            // The last finite bound holds the maximum, the first none of the samples.
            assert_eq!(buckets[buckets.len() - 2], stream.samples);
            assert_eq!(buckets[0], 0);
        }
    }

    #[test]
    fn seconds_are_written_without_exponents() {
        assert_eq!(seconds(2_000.0), "0.000002");
        assert_eq!(seconds(0.0), "0.0");
    }
}
