//! `openmetrics` and `prometheus`: a Run for Prometheus. One set of metric families,
//! written as OpenMetrics text (what Prometheus scrapes) or as the Prometheus text
//! format 0.0.4 (what node_exporter's textfile collector and `promtool` read).
//!
//! The families name what a sample is. Streams whose samples are wake-up latencies
//! (the timer probe; cyclictest, rtla timerlat and jitterdebugger imports) go to
//! `latlab_wakeup_latency_seconds`; every other probe's samples (a message's latency,
//! a semaphore shuffle, an OS-noise gap, ...) to `latlab_sample_seconds`, whose `probe`
//! label names the probe that defines them (`latlab probes --long`).
//!
//! Each stream's series carry `run`, `host` (when known), `probe`, `method` (when
//! known), `phase`, `stream` (its index among the Run's streams: unique, so streams
//! without a CPU, as SCHED_DEADLINE runs and most imports have, never collide) and
//! `cpu` (when the thread was pinned); a published reference Run's (`ref:NAME`) also
//! `published`, the paper and table its figures come from. A fact the Run lacks is an
//! absent label or an absent sample, never a 0.
//!
//! A Run measured with `--explain` adds counters per cause (`openmetrics/causes.rs`):
//! `latlab_spike_cause_seconds_total` and `latlab_spike_cause_spikes_total`, labelled
//! `run`, `host`, `phase`, `cpu`, `cause` (as `latlab explain` names it) and `kind`,
//! and `latlab_explain_spikes_total` by `outcome`.

mod buckets;
mod causes;

use super::{histogram_of, ExportError, Exporter};
use buckets::StreamValues;
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{percentile_key, Run, Stream, REPORTED_PERCENTILES};
use std::fmt::Write as _;

/// OpenMetrics 1.0 text.
pub(super) struct OpenMetrics;

/// The Prometheus text format 0.0.4.
pub(super) struct PrometheusText;

impl Exporter for OpenMetrics {
    fn name(&self) -> &'static str {
        "openmetrics"
    }

    fn describe(&self) -> &'static str {
        "OpenMetrics text (Prometheus scrapes): latency histograms, percentiles, counters"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        super::streams_to_export(run, self.name())?;
        Ok(write(&families(run)?, Dialect::OpenMetrics))
    }
}

impl Exporter for PrometheusText {
    fn name(&self) -> &'static str {
        "prometheus"
    }

    fn describe(&self) -> &'static str {
        "Prometheus text 0.0.4 (node_exporter's textfile collector): the openmetrics figures"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        super::streams_to_export(run, self.name())?;
        Ok(write(&families(run)?, Dialect::Prometheus))
    }
}

/// The two ways of writing the same families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `# TYPE`, `# UNIT`, `# HELP`; a counter's family named without `_total`;
    /// `# EOF` at the end.
    OpenMetrics,
    /// `# HELP`, `# TYPE`; a counter's family named as its sample, with `_total`; no
    /// units, no end marker.
    Prometheus,
}

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Histogram,
    Summary,
    Counter,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Counter => "counter",
        }
    }
}

/// One metric family and its samples.
struct Family {
    /// Its OpenMetrics name: a counter's without `_total`.
    name: &'static str,
    kind: Kind,
    /// The unit, which the name ends with.
    unit: &'static str,
    help: &'static str,
    samples: Vec<Sample>,
}

/// One sample line: the family's name plus `suffix`, its labels, its value.
struct Sample {
    suffix: &'static str,
    labels: String,
    value: String,
}

/// What the samples of a set of streams are: the names and help of their families.
struct SampleKind {
    /// Whether it holds the streams whose samples are wake-up latencies.
    wake_ups: bool,
    histogram: &'static str,
    histogram_help: &'static str,
    /// The summary of the exact percentiles.
    quantiles: &'static str,
    quantiles_help: &'static str,
}

const SAMPLE_KINDS: [SampleKind; 2] = [
    SampleKind {
        wake_ups: true,
        histogram: "latlab_wakeup_latency_seconds",
        histogram_help: "Wake-up latency: wake-up minus deadline.",
        quantiles: "latlab_wakeup_latency_quantile_seconds",
        quantiles_help:
            "Wake-up latency percentiles from every sample (quantile 1: the exact maximum).",
    },
    SampleKind {
        wake_ups: false,
        histogram: "latlab_sample_seconds",
        histogram_help:
            "A probe's sample, as the probe in the probe label defines it (latlab probes --long).",
        quantiles: "latlab_sample_quantile_seconds",
        quantiles_help:
            "Percentiles of a probe's samples from every sample (quantile 1: the exact maximum).",
    },
];

/// A count of events per stream.
struct Counter {
    /// Its OpenMetrics name, without `_total`.
    name: &'static str,
    /// What it counts, which the name ends with (`# UNIT latlab_missed_periods periods`).
    unit: &'static str,
    help: &'static str,
    /// The stream's count, `None` where its source did not count.
    count: fn(&Stream) -> Option<u64>,
}

const COUNTERS: [Counter; 2] = [
    Counter {
        name: "latlab_missed_periods",
        unit: "periods",
        help: "Periods that passed without a sample because one came more than a period late.",
        count: |s| s.missed_periods,
    },
    Counter {
        name: "latlab_early_wakes",
        unit: "wakes",
        help: "Samples below zero: wake-ups before the deadline.",
        count: |s| s.early_wakes,
    },
];

/// Every family of the Run, those without samples left out.
fn families(run: &Run) -> Result<Vec<Family>, ExportError> {
    let histograms = run
        .streams
        .iter()
        .map(histogram_of)
        .collect::<Result<Vec<_>, _>>()?;
    let labels: Vec<String> = run
        .streams
        .iter()
        .enumerate()
        .map(|(index, s)| stream_labels(run, index, s))
        .collect();
    let mut families = Vec::new();
    for kind in &SAMPLE_KINDS {
        let streams: Vec<usize> = (0..run.streams.len())
            .filter(|&i| run.streams[i].measures_wake_ups() == kind.wake_ups)
            .collect();
        families.push(histogram(kind, run, &streams, &histograms, &labels));
        families.push(quantiles(kind, run, &streams, &labels));
    }
    for counter in &COUNTERS {
        families.push(Family {
            name: counter.name,
            kind: Kind::Counter,
            unit: counter.unit,
            help: counter.help,
            // Uncounted by the source: no sample rather than a made-up 0.
            samples: run
                .streams
                .iter()
                .zip(&labels)
                .filter_map(|(s, l)| {
                    (counter.count)(s).map(|value| Sample {
                        suffix: "_total",
                        labels: l.clone(),
                        value: value.to_string(),
                    })
                })
                .collect(),
        });
    }
    families.extend(causes::families(run));
    families.retain(|f| !f.samples.is_empty());
    Ok(families)
}

/// The labels that tell a stream apart, as `name="value",...`.
fn stream_labels(run: &Run, index: usize, s: &Stream) -> String {
    let mut labels = vec![("run", run.id.clone())];
    // Published figures, not measured here: every series says whose they are.
    if let Some(p) = &run.published {
        labels.push(("published", p.citation()));
    }
    if let Some(host) = &run.host {
        labels.push(("host", host.hostname.clone()));
    }
    labels.push(("probe", s.probe.clone()));
    if let Some(method) = &s.method {
        labels.push(("method", method.clone()));
    }
    labels.push(("phase", s.phase.clone()));
    labels.push(("stream", index.to_string()));
    if let Some(cpu) = s.cpu {
        labels.push(("cpu", cpu.to_string()));
    }
    labels
        .iter()
        // An empty value is an absent label to Prometheus: left out.
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label(value)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The histogram of the streams that keep one, on bounds shared by all of them.
fn histogram(
    kind: &SampleKind,
    run: &Run,
    streams: &[usize],
    histograms: &[Option<LatencyHistogram>],
    labels: &[String],
) -> Family {
    // A stream whose source kept no histogram has no series here, only its summary.
    let (kept, values): (Vec<usize>, Vec<StreamValues>) = streams
        .iter()
        .filter_map(|&i| {
            let h = histograms[i].as_ref()?;
            Some((i, StreamValues::new(&run.streams[i], h)))
        })
        .unzip();
    let bounds = buckets::span(&values);
    let mut samples = Vec::new();
    for (&i, values) in kept.iter().zip(&values) {
        let s = &run.streams[i];
        let l = &labels[i];
        let counts = values.cumulative(&bounds);
        for (bound, count) in bounds.iter().zip(counts) {
            samples.push(Sample {
                suffix: "_bucket",
                labels: format!("{l},le=\"{}\"", seconds(*bound as f64)),
                value: count.to_string(),
            });
        }
        samples.push(Sample {
            suffix: "_bucket",
            labels: format!("{l},le=\"+Inf\""),
            value: s.samples.to_string(),
        });
        samples.extend(sum_and_count(s, l, Kind::Histogram));
    }
    Family {
        name: kind.histogram,
        kind: Kind::Histogram,
        unit: "seconds",
        help: kind.histogram_help,
        samples,
    }
}

/// The exact percentiles as a summary.
///
/// latlab computes its percentiles client-side from every sample, which is what a
/// Prometheus summary is for: one family holds every rank, queried as
/// `latlab_wakeup_latency_quantile_seconds{quantile="0.99"}` (the name and labels the
/// percentiles had as gauges), and `histogram_quantile` on the histogram serves
/// aggregates over streams or runs. Quantile 1 is the exact maximum. A percentile
/// known only as a bound has no value to give and no sample.
fn quantiles(kind: &SampleKind, run: &Run, streams: &[usize], labels: &[String]) -> Family {
    let mut samples = Vec::new();
    for &i in streams {
        let s = &run.streams[i];
        let l = &labels[i];
        let ranks = REPORTED_PERCENTILES.iter().filter_map(|&p| {
            let value = s.stats.percentile(p)?.exact()?;
            Some((percentile_key(p / 100.0), value))
        });
        let max = s.stats.max_ns.map(|m| ("1".to_string(), m));
        for (quantile, value) in ranks.chain(max) {
            samples.push(Sample {
                suffix: "",
                labels: format!("{l},quantile=\"{quantile}\""),
                value: seconds(value.0 as f64),
            });
        }
        samples.extend(sum_and_count(s, l, Kind::Summary));
    }
    Family {
        name: kind.quantiles,
        kind: Kind::Summary,
        unit: "seconds",
        help: kind.quantiles_help,
        samples,
    }
}

/// A summary's `_sum` (when the mean is known) and `_count`; a histogram's, whose
/// `_count` OpenMetrics allows only beside a `_sum` (its `+Inf` bucket counts the
/// samples all the same), only when the mean is known.
fn sum_and_count(s: &Stream, labels: &str, kind: Kind) -> Vec<Sample> {
    let sum = s.stats.mean_ns.map(|mean| Sample {
        suffix: "_sum",
        labels: labels.to_string(),
        value: seconds(mean * s.samples as f64),
    });
    if sum.is_none() && kind == Kind::Histogram {
        return Vec::new();
    }
    let count = Sample {
        suffix: "_count",
        labels: labels.to_string(),
        value: s.samples.to_string(),
    };
    sum.into_iter().chain([count]).collect()
}

/// The families as text in `dialect`.
fn write(families: &[Family], dialect: Dialect) -> String {
    let mut out = String::new();
    for f in families {
        let (name, kind) = (f.name, f.kind.name());
        let help = escape_help(f.help, dialect);
        match dialect {
            Dialect::OpenMetrics => {
                let _ = writeln!(out, "# TYPE {name} {kind}");
                let _ = writeln!(out, "# UNIT {name} {}", f.unit);
                let _ = writeln!(out, "# HELP {name} {help}");
            }
            Dialect::Prometheus => {
                // The text format names a counter's family as its sample: with `_total`.
                let total = if f.kind == Kind::Counter {
                    "_total"
                } else {
                    ""
                };
                let _ = writeln!(out, "# HELP {name}{total} {help}");
                let _ = writeln!(out, "# TYPE {name}{total} {kind}");
            }
        }
        for sample in &f.samples {
            let _ = writeln!(
                out,
                "{}{}{{{}}} {}",
                f.name, sample.suffix, sample.labels, sample.value
            );
        }
    }
    if dialect == Dialect::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// Seconds from nanoseconds, in plain decimals (to the ns).
fn seconds(ns: f64) -> String {
    let s = format!("{:.9}", ns / 1e9);
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

/// A label value, escaped as both formats escape it.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A help text, escaped as `dialect` escapes it (OpenMetrics escapes quotes too).
fn escape_help(help: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::OpenMetrics => escape_label(help),
        Dialect::Prometheus => help.replace('\\', "\\\\").replace('\n', "\\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;
    use latlab_model::hist::LatencyHistogram;
    use latlab_model::run::EncodedHistogram;
    use latlab_model::Nanos;

    #[test]
    fn writes_every_figure_and_ends_with_eof() {
        insta::assert_snapshot!(OpenMetrics.export(&fixture::run()).unwrap());
    }

    #[test]
    fn prometheus_text_names_counters_with_total_and_has_no_units_or_eof() {
        insta::assert_snapshot!(PrometheusText.export(&fixture::run()).unwrap());
    }

    /// Every series of a published reference names the paper and table.
    #[test]
    fn every_series_of_published_figures_says_whose_they_are() {
        let run = latlab_model::published::reference_run("rr-table3").unwrap();
        let label = "published=\"A. C. Heursch, H. Rzehak: Rapid Reaction Linux, Proceedings of \
                     the 5th Annual Linux Showcase & Conference (ALS 2001), Oakland, CA, Table 3\"";
        for text in [
            OpenMetrics.export(&run).unwrap(),
            PrometheusText.export(&run).unwrap(),
        ] {
            let series: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
            assert!(!series.is_empty());
            for line in series {
                assert!(line.contains(label), "{line}");
            }
        }
    }

    #[test]
    fn histograms_are_cumulative_and_end_with_the_count() {
        let run = fixture::run();
        let text = OpenMetrics.export(&run).unwrap();
        for (index, stream) in run.streams.iter().enumerate() {
            let label = format!("stream=\"{index}\"");
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
    fn streams_without_a_cpu_still_have_labels_of_their_own() {
        let mut run = fixture::run();
        for s in &mut run.streams {
            s.cpu = None;
            s.method = None;
        }
        run.host = None;
        let text = OpenMetrics.export(&run).unwrap();
        let counts: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("latlab_wakeup_latency_seconds_count"))
            .collect();
        assert_eq!(
            counts,
            [
                "latlab_wakeup_latency_seconds_count{run=\"20261121T000000Z-abcdef\",probe=\"timer\",phase=\"main\",stream=\"0\"} 4",
                "latlab_wakeup_latency_seconds_count{run=\"20261121T000000Z-abcdef\",probe=\"timer\",phase=\"main\",stream=\"1\"} 5",
            ]
        );
    }

    #[test]
    fn a_probe_other_than_the_timer_is_not_called_wake_up_latency() {
        let mut run = fixture::run();
        run.streams[1].probe = "msg".into();
        let text = OpenMetrics.export(&run).unwrap();
        let families: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        assert_eq!(
            families,
            [
                "# TYPE latlab_wakeup_latency_seconds histogram",
                "# TYPE latlab_wakeup_latency_quantile_seconds summary",
                "# TYPE latlab_sample_seconds histogram",
                "# TYPE latlab_sample_quantile_seconds summary",
                "# TYPE latlab_missed_periods counter",
                "# TYPE latlab_early_wakes counter",
            ]
        );
        assert!(text
            .lines()
            .filter(|l| l.contains("probe=\"msg\""))
            .all(|l| l.starts_with("latlab_sample_")
                || l.starts_with("latlab_missed_periods")
                || l.starts_with("latlab_early_wakes")));
    }

    #[test]
    fn without_a_known_mean_the_histogram_has_no_count_and_the_summary_has() {
        let mut run = fixture::run();
        run.streams.truncate(1);
        run.streams[0].stats.mean_ns = None;
        let text = OpenMetrics.export(&run).unwrap();
        let sums_and_counts: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("_sum{") || l.contains("_count{"))
            .map(|l| l.split('{').next().unwrap())
            .collect();
        assert_eq!(
            sums_and_counts,
            ["latlab_wakeup_latency_quantile_seconds_count"]
        );
    }

    #[test]
    fn an_explained_run_counts_time_and_spikes_per_cause() {
        let text = PrometheusText.export(&fixture::explained_run()).unwrap();
        let explain: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("latlab_spike_cause") || l.contains("latlab_explain"))
            .collect();
        insta::assert_snapshot!(explain.join("\n"));
    }

    #[test]
    fn a_run_whose_tracing_was_unavailable_has_no_cause_counters() {
        let mut run = fixture::explained_run();
        run.explain.as_mut().unwrap().unavailable = Some("no tracefs".into());
        let text = OpenMetrics.export(&run).unwrap();
        assert_eq!(text, OpenMetrics.export(&fixture::run()).unwrap());
    }

    #[test]
    fn seconds_are_written_without_exponents() {
        assert_eq!(seconds(2_000.0), "0.000002");
        assert_eq!(seconds(0.0), "0.0");
    }

    /// Three samples of 5 µs known, two only as "at least 100 µs", the largest 300 µs:
    /// the finite bounds end at the first at or above 100 µs and count the three, and
    /// `+Inf` counts all five, so `histogram_quantile(0.5)` reads 100 µs, what latlab
    /// says of p50 (≥ 100 µs), not a value inside a bucket nothing is known to lie in.
    #[test]
    fn samples_known_only_as_bounds_are_in_inf_only() {
        let mut run = fixture::run();
        run.streams.truncate(1);
        let stream = &mut run.streams[0];
        let mut histogram = LatencyHistogram::new();
        histogram.record_n(5_000, 3).unwrap();
        histogram.record_overflow(100_000, 2);
        stream.histogram = Some(EncodedHistogram::from_histogram(&histogram));
        stream.samples = 5;
        stream.stats.min_ns = Some(Nanos(5_000));
        stream.stats.max_ns = Some(Nanos(300_000));
        let text = PrometheusText.export(&run).unwrap();
        let buckets: Vec<(&str, &str)> = text
            .lines()
            .filter(|l| l.starts_with("latlab_wakeup_latency_seconds_bucket"))
            .map(|l| {
                let (labels, count) = l.rsplit_once(' ').unwrap();
                (
                    labels
                        .split("le=\"")
                        .nth(1)
                        .unwrap()
                        .trim_end_matches("\"}"),
                    count,
                )
            })
            .collect();
        let (last_finite, inf) = (buckets[buckets.len() - 2], buckets[buckets.len() - 1]);
        assert_eq!(last_finite, ("0.0001", "3"), "{buckets:?}");
        assert_eq!(inf, ("+Inf", "5"));
        assert!(buckets
            .iter()
            .all(|&(_, count)| count == "0" || count == "3" || count == "5"));
    }
}
