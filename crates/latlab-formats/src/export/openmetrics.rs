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
//! Each stream whose samples above the run's spike level can be counted (`--spike`,
//! else `--max`, else 100 µs; see `latlab_model::rate`) has `latlab_spikes_total`, the
//! span they were counted in and the rate per hour with its 95 % Poisson interval,
//! labelled `level` (seconds) and, on the interval's ends, `confidence`.
//!
//! A Run measured with `--explain` adds counters per cause (`openmetrics/causes.rs`):
//! `latlab_spike_cause_seconds_total` and `latlab_spike_cause_spikes_total`, labelled
//! `run`, `host`, `phase`, `cpu`, `cause` (as `latlab explain` names it) and `kind`,
//! and `latlab_explain_spikes_total` by `outcome`.

//! `openmetrics` and `prometheus`: a Run for Prometheus, as the families of
//! [`crate::metrics`] (which `latlab run --listen` serves live) say it. Beside what a
//! live scrape serves, a Run has its exact percentiles (a summary per stream) and, when
//! measured with `--explain`, the spikes handed to the explainer by outcome.

mod buckets;

use super::{histogram_of, ExportError, Exporter};
use crate::metrics::{
    Buckets, Dialect, ExplainOutcomes, Exposition, PhaseLoad, RunLabels, StreamFigures,
};
use buckets::StreamValues;
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{percentile_key, Run, Stream, REPORTED_PERCENTILES};
use latlab_model::Nanos;

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
        Ok(exposition(run)?.write(Dialect::OpenMetrics))
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
        Ok(exposition(run)?.write(Dialect::Prometheus))
    }
}

/// What the Run says to Prometheus.
fn exposition(run: &Run) -> Result<Exposition, ExportError> {
    let histograms = run
        .streams
        .iter()
        .map(histogram_of)
        .collect::<Result<Vec<_>, _>>()?;
    // One set of bounds for the whole Run, so `sum by (le)` over its streams (all
    // CPUs, say) adds like buckets.
    let values: Vec<Option<StreamValues>> = run
        .streams
        .iter()
        .zip(&histograms)
        .map(|(s, h)| h.as_ref().map(|h| StreamValues::new(s, h)))
        .collect();
    let bounds = buckets::span(&values.iter().flatten().collect::<Vec<_>>());
    let level = rate::level_of(run);
    let streams = run
        .streams
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(index, (s, values))| StreamFigures {
            probe: s.probe.clone(),
            method: s.method.clone(),
            phase: s.phase.clone(),
            index,
            cpu: s.cpu,
            wake_ups: s.measures_wake_ups(),
            samples: s.samples,
            histogram: values.as_ref().map(|v| Buckets {
                cumulative: bounds
                    .iter()
                    .zip(v.cumulative(&bounds))
                    .map(|(&bound, count)| (Nanos(bound as i64), count))
                    .collect(),
            }),
            sum_ns: s.stats.mean_ns.map(|mean| mean * s.samples as f64),
            quantiles: Some(quantiles(s)),
            missed_periods: s.missed_periods,
            early_wakes: s.early_wakes,
            max: s.stats.max_ns,
            last_second_max: None,
            five_minute_max: None,
            spikes: SpikeRate::of_stream(s, level, rate::CONFIDENCE),
        })
        .collect();
    let explain = run.explain.as_ref().filter(|e| e.unavailable.is_none());
    Ok(Exposition {
        run: RunLabels {
            run: run.id.clone(),
            published: run.published.as_ref().map(|p| p.citation()),
            host: run.host.as_ref().map(|h| h.hostname.clone()),
        },
        streams,
        loads: run
            .phases
            .iter()
            .flat_map(|p| {
                p.loads.iter().map(|load| PhaseLoad {
                    phase: p.name.clone(),
                    load: load.clone(),
                })
            })
            .collect(),
        // Tracing unavailable: nothing was counted, so nothing is written, not a 0.
        causes: explain.map(|e| e.catalogue.clone()).unwrap_or_default(),
        explained: explain.map(|e| ExplainOutcomes {
            explained: e.spikes_explained,
            incomplete: e.spikes_incomplete,
            unexplained: e.spikes_unexplained,
        }),
    })
}

/// The exact percentiles by rank, then the maximum as quantile 1; a percentile known
/// only as a bound has no value to give.
fn quantiles(s: &Stream) -> Vec<(String, Nanos)> {
    let ranks = REPORTED_PERCENTILES.iter().filter_map(|&p| {
        let value = s.stats.percentile(p)?.exact()?;
        Some((percentile_key(p / 100.0), value))
    });
    let max = s.stats.max_ns.map(|m| ("1".to_string(), m));
    ranks.chain(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;
    use latlab_model::hist::LatencyHistogram;
    use latlab_model::run::EncodedHistogram;

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
                "# TYPE latlab_samples counter",
                "# TYPE latlab_missed_periods counter",
                "# TYPE latlab_early_wakes counter",
                "# TYPE latlab_max_seconds gauge",
                "# TYPE latlab_spikes counter",
                "# TYPE latlab_spike_span_seconds gauge",
                "# TYPE latlab_spike_rate_per_hour gauge",
                "# TYPE latlab_spike_rate_low_per_hour gauge",
                "# TYPE latlab_spike_rate_high_per_hour gauge",
            ]
        );
        assert!(text
            .lines()
            .filter(|l| l.contains("probe=\"msg\""))
            .all(|l| l.starts_with("latlab_sample_")
                || l.starts_with("latlab_samples_total")
                || l.starts_with("latlab_missed_periods")
                || l.starts_with("latlab_early_wakes")
                || l.starts_with("latlab_spike")
                || l.starts_with("latlab_max_seconds")));
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
