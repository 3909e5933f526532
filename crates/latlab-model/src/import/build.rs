//! Turning what a foreign file holds into a Run.
//!
//! Importers describe each measuring thread as a [`StreamSource`]: either the source's
//! histogram buckets and its own summary figures ([`Binned`](super::binned::Binned)), or
//! every sample, in order ([`Exact`], from a cyclictest `-v` log). [`assemble`] makes the Run: the histogram, the
//! statistics (min, max and mean from the source where it has them, percentiles from the
//! histogram), and the provenance: what the source lacked, and which fields of the Run
//! hold stand-ins rather than facts.

use super::binned::Binned;
use super::{Format, ImportContext, ImportError};
use crate::hist::{LatencyHistogram, HIGHEST_NS, SIGNIFICANT_DIGITS};
use crate::run::*;
use crate::spec::SchedSpec;
use crate::threshold::Verdict;
use crate::Nanos;
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, BTreeSet};

/// Run-level facts of the source; `None` where it does not have them.
#[derive(Default)]
pub(super) struct Source {
    /// The tool that measured (`cyclictest`, `oslat`, `rtla`, `jitterdebugger`).
    pub(super) tool: &'static str,
    /// Its version, when the file says.
    pub(super) version: Option<String>,
    /// Start and end, RFC 3339 UTC.
    pub(super) started_at: Option<String>,
    pub(super) ended_at: Option<String>,
    /// The command line.
    pub(super) command_line: Option<Vec<String>>,
    /// Host facts.
    pub(super) host: Option<HostFacts>,
    /// Whether the tool locked memory.
    pub(super) memory_lock: Option<MemoryLockPlan>,
    /// The planned measuring span (`plan.duration_ns`).
    pub(super) duration: Option<Nanos>,
    /// How long it measured, when known (the phase's `elapsed_ns`).
    pub(super) elapsed: Option<Nanos>,
    /// The tool says it stopped early.
    pub(super) interrupted: bool,
    /// What the source reported as going wrong.
    pub(super) warnings: Vec<Warning>,
}

/// What the source lacked, as sentences, and the Run fields holding stand-ins.
#[derive(Default)]
pub(super) struct Provenance {
    lacks: Vec<String>,
    unknown: BTreeSet<&'static str>,
}

impl Provenance {
    /// Notes something the source did not have (once).
    pub(super) fn lack(&mut self, sentence: impl Into<String>) {
        let sentence = sentence.into();
        if !self.lacks.contains(&sentence) {
            self.lacks.push(sentence);
        }
    }

    /// Marks a Run field as a stand-in, not a fact.
    pub(super) fn unknown(&mut self, field: &'static str) {
        self.unknown.insert(field);
    }
}

/// One measuring thread (or CPU column) of the source.
pub(super) struct StreamSource {
    /// latlab's probe name (`timer`, `noise`, `timerlat-irq`, ...).
    pub(super) probe: &'static str,
    /// The sleep method, when known.
    pub(super) method: Option<&'static str>,
    /// Index within the source, from 0.
    pub(super) thread: usize,
    /// The CPU it ran on, when known.
    pub(super) cpu: Option<usize>,
    /// Its scheduling policy, when known.
    pub(super) policy: Option<SchedSpec>,
    /// Its period, when known.
    pub(super) period: Option<Nanos>,
    /// How long it measured, when known.
    pub(super) elapsed: Option<Nanos>,
    /// The samples.
    pub(super) values: Values,
}

/// The samples of a stream, as the source has them.
pub(super) enum Values {
    /// A histogram and summary figures.
    Binned(Binned),
    /// Every sample, in order.
    Exact(Box<Exact>),
}

/// Every sample of a stream, accumulated in order.
pub(super) struct Exact {
    pub(super) histogram: LatencyHistogram,
    pub(super) sums: ExactSums,
    pub(super) first: Option<Nanos>,
    pub(super) early_wakes: u64,
    pub(super) spikes: Spikes,
    pub(super) timeline: Timeline,
}

/// Makes the Run.
pub(super) fn assemble(
    format: Format,
    ctx: &ImportContext,
    source: Source,
    streams: Vec<StreamSource>,
    mut provenance: Provenance,
) -> Result<Run, ImportError> {
    if streams.is_empty() {
        return Err(ImportError::whole(
            &ctx.file,
            "no measuring thread in the file: it holds no results to import",
        ));
    }
    let stream_elapsed = streams.iter().filter_map(|s| s.elapsed).max();
    let mut built = Vec::with_capacity(streams.len());
    for source_stream in streams {
        built.push(stream(source_stream, &mut provenance, &ctx.file)?);
    }
    let version = source.version.unwrap_or_else(|| {
        provenance.unknown("tool.version");
        String::new()
    });
    let started_at = source.started_at.unwrap_or_else(|| {
        provenance.unknown("started_at");
        provenance.lack("no start or end time");
        String::new()
    });
    let ended_at = source.ended_at.unwrap_or_else(|| {
        provenance.unknown("ended_at");
        String::new()
    });
    let command_line = source.command_line.unwrap_or_else(|| {
        provenance.lack("no command line");
        Vec::new()
    });
    let host = source.host.unwrap_or_else(|| {
        provenance.unknown("host");
        provenance.lack("no host facts (kernel, CPUs, clocksource)");
        HostFacts::default()
    });
    let memory_lock = source.memory_lock.unwrap_or_else(|| {
        provenance.unknown("plan.memory_lock");
        MemoryLockPlan::None
    });
    provenance.unknown("conditions");
    provenance.unknown("plan.probes");
    provenance.unknown("plan.dma_latency_us");
    let elapsed = source.elapsed.or(stream_elapsed).unwrap_or_else(|| {
        provenance.unknown("phases[].elapsed_ns");
        Nanos::ZERO
    });
    let mut cpus: Vec<usize> = built.iter().filter_map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let verdict = Verdict::judge(&[], &built);
    Ok(Run {
        schema: SCHEMA.to_string(),
        id: ctx.id.clone(),
        tool: Tool {
            name: source.tool.to_string(),
            version,
        },
        started_at: started_at.clone(),
        ended_at,
        command_line,
        scenario: None,
        plan: Plan {
            duration_ns: source.duration,
            warm_up_ns: Nanos::ZERO,
            cpus,
            probes: Vec::new(),
            dma_latency_us: None,
            memory_lock,
        },
        host,
        conditions: Conditions::default(),
        degraded: false,
        interrupted: source.interrupted,
        warnings: source.warnings,
        phases: vec![Phase {
            name: "main".to_string(),
            started_at,
            elapsed_ns: elapsed,
            loads: Vec::new(),
        }],
        streams: built,
        events: Vec::new(),
        thresholds: Vec::new(),
        verdict,
        audit: None,
        import: Some(ImportRecord {
            format: format.name().to_string(),
            file: ctx.file.clone(),
            imported_at: ctx.imported_at.clone(),
            lacks: provenance.lacks,
            unknown_fields: provenance.unknown.into_iter().map(String::from).collect(),
        }),
    })
}

/// One Stream.
fn stream(s: StreamSource, p: &mut Provenance, file: &str) -> Result<Stream, ImportError> {
    let policy = s.policy.unwrap_or_else(|| {
        p.unknown("streams[].policy");
        p.lack("no scheduling policy");
        SchedSpec::Other { nice: 0 }
    });
    let method = s.method.unwrap_or_else(|| {
        p.unknown("streams[].method");
        "unknown"
    });
    let period_ns = s.period.unwrap_or_else(|| {
        p.unknown("streams[].period_ns");
        p.lack("no period");
        Nanos::ZERO
    });
    let elapsed_ns = s.elapsed.unwrap_or_else(|| {
        p.unknown("streams[].elapsed_ns");
        Nanos::ZERO
    });
    p.unknown("streams[].timer_slack_ns");
    p.unknown("streams[].page_faults");
    let mut stream = Stream {
        probe: s.probe.to_string(),
        method: method.to_string(),
        phase: "main".to_string(),
        thread: s.thread,
        cpu: s.cpu,
        policy,
        period_ns,
        samples: 0,
        missed_periods: 0,
        overrun_wakes: 0,
        early_wakes: 0,
        first_sample_ns: None,
        warm_up_samples: 0,
        drift_ns: None,
        elapsed_ns,
        timer_slack_ns: 0,
        page_faults: 0,
        stats: Statistics {
            min_ns: None,
            max_ns: None,
            mean_ns: None,
            stddev_ns: None,
            percentiles_ns: BTreeMap::new(),
        },
        histogram: EncodedHistogram::from_histogram(&LatencyHistogram::new()),
        spikes: Spikes::default(),
        timeline: Timeline::default(),
    };
    match s.values {
        Values::Binned(binned) => fill_binned(&mut stream, binned, p, file)?,
        Values::Exact(exact) => fill_exact(&mut stream, *exact, p),
    }
    Ok(stream)
}

/// Fills a stream from a source histogram and the source's figures.
fn fill_binned(
    stream: &mut Stream,
    b: Binned,
    p: &mut Provenance,
    file: &str,
) -> Result<(), ImportError> {
    let samples = b.samples();
    stream.samples = samples;
    p.unknown("streams[].missed_periods");
    p.unknown("streams[].overrun_wakes");
    if samples == 0 {
        return Ok(());
    }
    p.unknown("streams[].stats.stddev_ns");
    p.lack("no standard deviation (the source keeps only a histogram and summary figures)");
    if !b.histogram {
        p.unknown("streams[].histogram");
        p.unknown("streams[].stats.percentiles_ns");
        p.unknown("streams[].early_wakes");
        p.lack(format!(
            "no histogram for {} (only minimum, mean and maximum): no percentiles, and \
             histogram.total is 0 while samples counts every cycle",
            stream.label()
        ));
        stream.stats = binned_statistics(&b);
        return Ok(());
    }
    let (hist, clamped) = record_binned(&b, stream, p, file)?;
    let mut encoded = EncodedHistogram::from_histogram(&hist);
    encoded.clamped = clamped;
    stream.histogram = encoded;
    stream.stats = binned_statistics(&b);
    Ok(())
}

/// The histogram of a source's buckets and overflows, and how many values were above
/// its 60 s range; sets the stream's early wakes where the figures tell them.
fn record_binned(
    b: &Binned,
    stream: &mut Stream,
    p: &mut Provenance,
    file: &str,
) -> Result<(LatencyHistogram, u64), ImportError> {
    let mut raw = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("constant bounds are valid");
    let mut clamped = 0;
    let mut record = |value: Nanos, count: u64| {
        if count == 0 {
            return;
        }
        let v = value.0.max(0) as u64;
        if v > HIGHEST_NS {
            clamped += count;
        }
        // Within bounds after clamping, so this cannot fail.
        let _ = raw.record_n(v.min(HIGHEST_NS), count);
    };
    for &(edge, count) in &b.buckets {
        record(edge, count);
    }
    let mut early_wakes_known = b.min.is_some_and(|m| m.0 >= 0);
    if b.overflow > 0 {
        match (b.min, b.max) {
            // Nothing reached the range's end, so every overflow was a negative sample.
            (_, Some(max)) if max < b.overflow_from => {
                record(Nanos::ZERO, b.overflow);
                stream.early_wakes = b.overflow;
                early_wakes_known = true;
            }
            // At least one overflowed sample was the maximum; the others lie between
            // the range's end and it.
            (Some(min), Some(max)) => {
                record(b.overflow_from, b.overflow - 1);
                record(max, 1);
                early_wakes_known = min.0 >= 0;
                p.lack(match b.overflow {
                    1 => format!(
                        "one overflowed sample in {} above the histogram range ({}): the \
                         maximum, recorded as it",
                        stream.label(),
                        b.overflow_from
                    ),
                    n => format!(
                        "overflowed samples ({n} in {}) above the histogram range: counted, \
                         recorded at the range's end ({}) and one at the maximum; their \
                         values are unknown except the maximum",
                        stream.label(),
                        b.overflow_from
                    ),
                });
            }
            _ => {
                record(b.overflow_from, b.overflow);
                p.lack(format!(
                    "overflowed samples ({} in {}) outside the histogram range: counted, \
                     recorded at the range's end ({}); their values are unknown",
                    b.overflow,
                    stream.label(),
                    b.overflow_from
                ));
            }
        }
    }
    if !early_wakes_known {
        p.unknown("streams[].early_wakes");
    }
    Ok((from_raw(&raw, file)?, clamped))
}

/// Statistics from the source's figures, percentiles from its histogram (clamped to the
/// source's minimum and maximum, as latlab's own are).
fn binned_statistics(b: &Binned) -> Statistics {
    let min = b.min.map_or(i64::MIN, |m| m.0);
    let max = b.max.map_or(i64::MAX, |m| m.0).max(min);
    let percentiles_ns = if b.histogram {
        REPORTED_PERCENTILES
            .iter()
            .filter_map(|&q| Some((percentile_key(q), Nanos(b.percentile(q)?.0.clamp(min, max)))))
            .collect()
    } else {
        BTreeMap::new()
    };
    Statistics {
        min_ns: b.min,
        max_ns: b.max,
        mean_ns: b.mean,
        stddev_ns: None,
        percentiles_ns,
    }
}

/// Fills a stream from every sample.
fn fill_exact(stream: &mut Stream, e: Exact, p: &mut Provenance) {
    stream.samples = e.sums.count;
    stream.first_sample_ns = e.first;
    stream.early_wakes = e.early_wakes;
    // cyclictest skips the periods a late wake passed without counting them.
    p.unknown("streams[].missed_periods");
    p.unknown("streams[].overrun_wakes");
    stream.stats = Statistics::compute(&e.sums, &e.histogram);
    stream.histogram = EncodedHistogram::from_histogram(&e.histogram);
    stream.spikes = e.spikes;
    stream.timeline = e.timeline;
}

/// A [`LatencyHistogram`] holding the counts of `raw` (same bounds and precision).
fn from_raw(raw: &Histogram<u64>, file: &str) -> Result<LatencyHistogram, ImportError> {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(raw, &mut bytes)
        .map_err(|e| {
            ImportError::whole(file, format!("internal error encoding a histogram: {e:?}"))
        })?;
    LatencyHistogram::decode(&base64::engine::general_purpose::STANDARD.encode(bytes))
        .map_err(|e| ImportError::whole(file, format!("internal error decoding a histogram: {e}")))
}
