//! The figures of a run for Prometheus: one set of metric families, written as
//! OpenMetrics 1.0 text (what Prometheus scrapes) or as the Prometheus text format
//! 0.0.4 (what `promtool` and node_exporter's textfile collector read).
//!
//! Two sources feed it one [`Exposition`]: `latlab export --format
//! openmetrics|prometheus` from a kept Run, and `latlab run --listen` from the figures
//! the measuring threads publish while they measure. Whatever a source does not know is
//! left out (an absent family, series or label), never written as 0: a live scrape has
//! no exact percentiles, an export no maximum of the last second.
//!
//! The families name what a sample is. Streams whose samples are wake-up latencies
//! (the timer probe; cyclictest, rtla timerlat and jitterdebugger imports) go to
//! `latlab_wakeup_latency_seconds`; every other probe's samples (a message's latency, a
//! semaphore shuffle, an OS-noise gap, ...) to `latlab_sample_seconds`, whose `probe`
//! label names the probe that defines them (`latlab probes --long`).
//!
//! Each stream's series carry `run`, `published` (a published reference's paper and
//! table), `host`, `probe`, `method`, `phase`, `stream` (its index among the run's
//! streams: unique, so streams without a CPU, as SCHED_DEADLINE runs and most imports
//! have, never collide) and `cpu` (when the thread was pinned), each only when known.

mod causes;
mod text;

use latlab_model::explain::CauseTotal;
use latlab_model::rate::SpikeRate;
use latlab_model::run::LoadRecord;
use latlab_model::Nanos;
use text::{escape_label, seconds, Family, Kind, Sample};

pub use text::Dialect;

/// Everything one exposition says.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Who measured: the labels of every series.
    pub run: RunLabels,
    /// The measuring threads' figures, in the run's order.
    pub streams: Vec<StreamFigures>,
    /// The background loads and the work they did, per phase.
    pub loads: Vec<PhaseLoad>,
    /// The causes of the spikes explained (`--explain`), as the catalogue sums them.
    pub causes: Vec<CauseTotal>,
    /// What became of the spikes handed to the explainer, when counted.
    pub explained: Option<ExplainOutcomes>,
}

/// The labels that say which run a series is of.
#[derive(Debug, Clone, Default)]
pub struct RunLabels {
    /// The run's id.
    pub run: String,
    /// For a published reference: the paper and table its figures come from.
    pub published: Option<String>,
    /// The host it ran on.
    pub host: Option<String>,
}

/// One measuring thread's figures.
#[derive(Debug, Clone, Default)]
pub struct StreamFigures {
    /// The probe (`latlab probes`).
    pub probe: String,
    /// Its method or parameters.
    pub method: Option<String>,
    /// The phase.
    pub phase: String,
    /// Its index among the run's streams.
    pub index: usize,
    /// The CPU it was pinned to.
    pub cpu: Option<usize>,
    /// Whether its samples are wake-up latencies (`Stream::measures_wake_ups`).
    pub wake_ups: bool,
    /// Samples taken.
    pub samples: u64,
    /// Its histogram, when its source kept one.
    pub histogram: Option<Buckets>,
    /// The sum of its samples in ns, when known.
    pub sum_ns: Option<f64>,
    /// Exact percentiles from every sample, by rank as a quantile (`0.99`; `1` is the
    /// maximum); `None` where none were computed (a live scrape).
    pub quantiles: Option<Vec<(String, Nanos)>>,
    /// Periods missed, when counted.
    pub missed_periods: Option<u64>,
    /// Samples below zero, when counted.
    pub early_wakes: Option<u64>,
    /// The largest sample, when known.
    pub max: Option<Nanos>,
    /// The largest sample of the last whole second (live only).
    pub last_second_max: Option<Nanos>,
    /// The largest sample of the last 5 minutes (live only).
    pub five_minute_max: Option<Nanos>,
    /// How often its samples were above the run's spike level, when countable (a
    /// kept Run's histogram with no sample known only as a bound at or below the
    /// level; a live scrape has none).
    pub spikes: Option<SpikeRate>,
}

/// A cumulative histogram's finite buckets. Samples known only as bounds ("at least
/// N": a source's overflow bucket, beyond the histogram's range) are in none of them,
/// only in `+Inf`, which holds every sample: a quantile among them is then read by
/// `histogram_quantile` as the highest finite bound, never inside a bucket they may
/// not lie in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Buckets {
    /// (upper bound, samples of known value at or below it), ascending.
    pub cumulative: Vec<(Nanos, u64)>,
}

/// A background load of a phase and what it did.
#[derive(Debug, Clone)]
pub struct PhaseLoad {
    /// The phase.
    pub phase: String,
    /// The load's record (so far, while it runs).
    pub load: LoadRecord,
}

/// The spikes handed to the explainer, by outcome; they add up to the spikes seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExplainOutcomes {
    /// Explained.
    pub explained: u64,
    /// Explained with events lost in the window.
    pub incomplete: u64,
    /// Not explained: no window to read.
    pub unexplained: u64,
}

impl Exposition {
    /// The exposition as text in `dialect`.
    pub fn write(&self, dialect: Dialect) -> String {
        text::write(&self.families(), dialect)
    }

    /// Every family, those without samples left out.
    fn families(&self) -> Vec<Family> {
        let labels: Vec<String> = self.streams.iter().map(|s| self.stream_labels(s)).collect();
        let mut families = Vec::new();
        for kind in &SAMPLE_KINDS {
            let streams: Vec<(&StreamFigures, &str)> = self
                .streams
                .iter()
                .zip(&labels)
                .filter(|(s, _)| s.wake_ups == kind.wake_ups)
                .map(|(s, l)| (s, l.as_str()))
                .collect();
            families.push(histogram(kind, &streams));
            families.push(quantiles(kind, &streams));
        }
        for scalar in &SCALARS {
            families.push(Family {
                name: scalar.name,
                kind: scalar.kind,
                unit: scalar.unit,
                help: scalar.help,
                samples: self
                    .streams
                    .iter()
                    .zip(&labels)
                    .filter_map(|(s, l)| {
                        Some(Sample {
                            suffix: scalar.kind.suffix(),
                            labels: l.clone(),
                            value: (scalar.value)(s)?,
                        })
                    })
                    .collect(),
            });
        }
        families.extend(spike_families(&self.streams, &labels));
        families.extend(self.load_families());
        families.extend(causes::families(
            &self.run_labels(),
            &self.causes,
            self.explained,
        ));
        families.retain(|f| !f.samples.is_empty());
        families
    }

    /// The run's own labels: `run`, `published`, `host`, as far as known.
    fn run_labels(&self) -> Vec<(&'static str, String)> {
        let mut labels = vec![("run", self.run.run.clone())];
        // Published figures, not measured here: every series says whose they are.
        if let Some(published) = &self.run.published {
            labels.push(("published", published.clone()));
        }
        if let Some(host) = &self.run.host {
            labels.push(("host", host.clone()));
        }
        labels
    }

    /// The labels that tell a stream apart.
    fn stream_labels(&self, s: &StreamFigures) -> String {
        let mut labels = self.run_labels();
        labels.push(("probe", s.probe.clone()));
        if let Some(method) = &s.method {
            labels.push(("method", method.clone()));
        }
        labels.push(("phase", s.phase.clone()));
        labels.push(("stream", s.index.to_string()));
        if let Some(cpu) = s.cpu {
            labels.push(("cpu", cpu.to_string()));
        }
        join(&labels)
    }

    /// The loads' work as counters and their rates as gauges, per phase and load.
    fn load_families(&self) -> [Family; 2] {
        let labels = |l: &PhaseLoad, unit: (&'static str, &str)| {
            let mut labels = self.run_labels();
            labels.push(("phase", l.phase.clone()));
            labels.push(("load", l.load.spec.clone()));
            labels.push((unit.0, unit.1.to_string()));
            join(&labels)
        };
        [
            Family {
                name: "latlab_load_work",
                kind: Kind::Counter,
                unit: "",
                help: "Work a background load has done, in the unit its work_unit label \
                       names (hackbench messages, bytes copied, ...): its rate is the \
                       load's throughput.",
                samples: self
                    .loads
                    .iter()
                    .map(|l| Sample {
                        suffix: "_total",
                        labels: labels(l, ("work_unit", &l.load.unit)),
                        value: l.load.work.to_string(),
                    })
                    .collect(),
            },
            Family {
                name: "latlab_load_rate",
                kind: Kind::Gauge,
                unit: "",
                help: "A background load's throughput since it started, in its rate_unit \
                       label's unit.",
                samples: self
                    .loads
                    .iter()
                    .filter_map(|l| {
                        Some(Sample {
                            suffix: "",
                            labels: labels(l, ("rate_unit", &l.load.rate_unit)),
                            value: l.load.rate?.to_string(),
                        })
                    })
                    .collect(),
            },
        ]
    }
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

/// A counter or gauge with one series per stream.
struct Scalar {
    /// Its OpenMetrics name (a counter's without `_total`).
    name: &'static str,
    kind: Kind,
    /// What it counts or measures, which the name ends with.
    unit: &'static str,
    help: &'static str,
    /// The stream's value, `None` where its source does not know it.
    value: fn(&StreamFigures) -> Option<String>,
}

const SCALARS: [Scalar; 6] = [
    Scalar {
        name: "latlab_samples",
        kind: Kind::Counter,
        unit: "samples",
        help: "Samples taken.",
        value: |s| Some(s.samples.to_string()),
    },
    Scalar {
        name: "latlab_missed_periods",
        kind: Kind::Counter,
        unit: "periods",
        help: "Periods that passed without a sample because one came more than a period late.",
        value: |s| s.missed_periods.map(|n| n.to_string()),
    },
    Scalar {
        name: "latlab_early_wakes",
        kind: Kind::Counter,
        unit: "wakes",
        help: "Samples below zero: wake-ups before the deadline.",
        value: |s| s.early_wakes.map(|n| n.to_string()),
    },
    Scalar {
        name: "latlab_max_seconds",
        kind: Kind::Gauge,
        unit: "seconds",
        help: "The largest sample of the phase so far.",
        value: |s| s.max.map(|ns| seconds(ns.0 as f64)),
    },
    Scalar {
        name: "latlab_last_second_max_seconds",
        kind: Kind::Gauge,
        unit: "seconds",
        help: "The largest sample of the last whole second (absent when it had none).",
        value: |s| s.last_second_max.map(|ns| seconds(ns.0 as f64)),
    },
    Scalar {
        name: "latlab_five_minute_max_seconds",
        kind: Kind::Gauge,
        unit: "seconds",
        help: "The largest sample of the last 5 minutes, from per-second maxima (OSADL's \
               5-minute maxima).",
        value: |s| s.five_minute_max.map(|ns| seconds(ns.0 as f64)),
    },
];

/// A figure of a stream's spike rate, one family each.
struct SpikeFigure {
    name: &'static str,
    kind: Kind,
    unit: &'static str,
    help: &'static str,
    /// Whether the figure is an end of the interval, labelled with its confidence.
    interval: bool,
    value: fn(&SpikeRate) -> String,
}

const SPIKE_FIGURES: [SpikeFigure; 5] = [
    SpikeFigure {
        name: "latlab_spikes",
        kind: Kind::Counter,
        unit: "",
        help: "Samples above the spike level (label level, in seconds).",
        interval: false,
        value: |r| r.count.to_string(),
    },
    SpikeFigure {
        name: "latlab_spike_span_seconds",
        kind: Kind::Gauge,
        unit: "seconds",
        help: "The measured time the spikes were counted in.",
        interval: false,
        value: |r| seconds(r.span_ns.0 as f64),
    },
    SpikeFigure {
        name: "latlab_spike_rate_per_hour",
        kind: Kind::Gauge,
        unit: "",
        help: "Samples above the spike level per hour of measuring.",
        interval: false,
        value: |r| r.per_hour.to_string(),
    },
    SpikeFigure {
        name: "latlab_spike_rate_low_per_hour",
        kind: Kind::Gauge,
        unit: "",
        help: "The low end of the spike rate's Poisson interval (label confidence).",
        interval: true,
        value: |r| r.per_hour_low.to_string(),
    },
    SpikeFigure {
        name: "latlab_spike_rate_high_per_hour",
        kind: Kind::Gauge,
        unit: "",
        help: "The high end of the spike rate's Poisson interval (label confidence).",
        interval: true,
        value: |r| r.per_hour_high.to_string(),
    },
];

/// The spike rate of every stream whose spikes could be counted: the count, the time
/// it is over, the rate and its interval, labelled with the level (and the interval's
/// confidence) besides the stream's labels. A stream whose count is not known has no
/// series, never a 0.
fn spike_families(streams: &[StreamFigures], labels: &[String]) -> Vec<Family> {
    SPIKE_FIGURES
        .iter()
        .map(|figure| Family {
            name: figure.name,
            kind: figure.kind,
            unit: figure.unit,
            help: figure.help,
            samples: streams
                .iter()
                .zip(labels)
                .filter_map(|(s, l)| {
                    let rate = s.spikes.as_ref()?;
                    let mut more = vec![("level", seconds(rate.above_ns.0 as f64))];
                    if figure.interval {
                        more.push(("confidence", rate.confidence.to_string()));
                    }
                    Some(Sample {
                        suffix: figure.kind.suffix(),
                        labels: format!("{l},{}", join(&more)),
                        value: (figure.value)(rate),
                    })
                })
                .collect(),
        })
        .collect()
}

/// The histogram of the streams that keep one: their finite buckets, `+Inf` (every
/// sample, those known only as bounds included), and `_sum` and `_count` when the sum
/// is known (OpenMetrics allows a histogram's `_count` only beside its `_sum`).
fn histogram(kind: &SampleKind, streams: &[(&StreamFigures, &str)]) -> Family {
    let mut samples = Vec::new();
    for (s, labels) in streams {
        // A stream whose source kept no histogram has no series here, only its summary.
        let Some(buckets) = &s.histogram else {
            continue;
        };
        for (bound, count) in &buckets.cumulative {
            samples.push(Sample {
                suffix: "_bucket",
                labels: format!("{labels},le=\"{}\"", seconds(bound.0 as f64)),
                value: count.min(&s.samples).to_string(),
            });
        }
        samples.push(Sample {
            suffix: "_bucket",
            labels: format!("{labels},le=\"+Inf\""),
            value: s.samples.to_string(),
        });
        if let Some(sum) = s.sum_ns {
            samples.extend(sum_and_count(s, labels, sum));
        }
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
/// `latlab_wakeup_latency_quantile_seconds{quantile="0.99"}`, and `histogram_quantile`
/// on the histogram serves aggregates over streams or runs. A percentile known only as
/// a bound has no value to give and no sample.
fn quantiles(kind: &SampleKind, streams: &[(&StreamFigures, &str)]) -> Family {
    let mut samples = Vec::new();
    for (s, labels) in streams {
        let Some(quantiles) = &s.quantiles else {
            continue;
        };
        for (quantile, value) in quantiles {
            samples.push(Sample {
                suffix: "",
                labels: format!("{labels},quantile=\"{quantile}\""),
                value: seconds(value.0 as f64),
            });
        }
        // A summary's `_count` stands without its `_sum`.
        let [sum, count] = sum_and_count(s, labels, s.sum_ns.unwrap_or_default());
        samples.extend(s.sum_ns.map(|_| sum));
        samples.push(count);
    }
    Family {
        name: kind.quantiles,
        kind: Kind::Summary,
        unit: "seconds",
        help: kind.quantiles_help,
        samples,
    }
}

/// `_sum` and `_count`.
fn sum_and_count(s: &StreamFigures, labels: &str, sum_ns: f64) -> [Sample; 2] {
    [
        Sample {
            suffix: "_sum",
            labels: labels.to_string(),
            value: seconds(sum_ns),
        },
        Sample {
            suffix: "_count",
            labels: labels.to_string(),
            value: s.samples.to_string(),
        },
    ]
}

/// Labels as `name="value",...`, empty values left out (an absent label to
/// Prometheus).
fn join(labels: &[(&'static str, String)]) -> String {
    labels
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label(value)))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> StreamFigures {
        StreamFigures {
            probe: "timer".into(),
            method: Some("abs".into()),
            phase: "main".into(),
            index: 0,
            cpu: Some(1),
            wake_ups: true,
            samples: 5,
            histogram: Some(Buckets {
                cumulative: vec![(Nanos(1_000), 0), (Nanos(2_000), 3), (Nanos(4_000), 4)],
            }),
            sum_ns: Some(9_000.0),
            ..StreamFigures::default()
        }
    }

    /// One sample known only as "at least 4 µs": above every finite bound, in `+Inf`.
    #[test]
    fn a_sample_known_only_as_a_bound_is_counted_in_inf_only() {
        let exposition = Exposition {
            run: RunLabels {
                run: "r".into(),
                ..RunLabels::default()
            },
            streams: vec![stream()],
            ..Exposition::default()
        };
        let text = exposition.write(Dialect::Prometheus);
        let buckets: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("latlab_wakeup_latency_seconds_bucket"))
            .map(|l| l.split_once("le=").unwrap().1)
            .collect();
        assert_eq!(
            buckets,
            [
                "\"0.000001\"} 0",
                "\"0.000002\"} 3",
                "\"0.000004\"} 4",
                "\"+Inf\"} 5"
            ]
        );
    }

    /// A stream's spike rate: its count, span, rate and interval, each labelled with
    /// the level; the interval's ends with their confidence too.
    #[test]
    fn a_streams_spike_rate_is_five_series_labelled_with_its_level() {
        let rate =
            SpikeRate::from_count(Nanos(100_000), 3, Nanos(3_600_000_000_000), 0.95).unwrap();
        let exposition = Exposition {
            streams: vec![
                StreamFigures {
                    spikes: Some(rate),
                    ..stream()
                },
                StreamFigures {
                    index: 1,
                    ..stream()
                },
            ],
            ..Exposition::default()
        };
        let text = exposition.write(Dialect::OpenMetrics);
        let spikes: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("latlab_spike"))
            .collect();
        let series =
            "probe=\"timer\",method=\"abs\",phase=\"main\",stream=\"0\",cpu=\"1\",level=\"0.0001\"";
        assert_eq!(
            spikes,
            [
                format!("latlab_spikes_total{{{series}}} 3"),
                format!("latlab_spike_span_seconds{{{series}}} 3600.0"),
                format!("latlab_spike_rate_per_hour{{{series}}} 3"),
                format!(
                    "latlab_spike_rate_low_per_hour{{{series},confidence=\"0.95\"}} {}",
                    rate.per_hour_low
                ),
                format!(
                    "latlab_spike_rate_high_per_hour{{{series},confidence=\"0.95\"}} {}",
                    rate.per_hour_high
                ),
            ]
        );
    }

    /// A live scrape knows no exact percentiles: no summary, not an empty one.
    #[test]
    fn figures_a_source_does_not_know_are_absent_families() {
        let exposition = Exposition {
            streams: vec![stream()],
            ..Exposition::default()
        };
        let text = exposition.write(Dialect::OpenMetrics);
        let families: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        assert_eq!(
            families,
            [
                "# TYPE latlab_wakeup_latency_seconds histogram",
                "# TYPE latlab_samples counter"
            ]
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
