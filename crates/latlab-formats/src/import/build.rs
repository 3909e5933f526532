//! Turning what a foreign file holds into a Run.
//!
//! Importers describe each measuring thread as a [`StreamSource`]: either the source's
//! histogram buckets and its own summary figures ([`Binned`](super::binned::Binned)), or
//! every sample, in order ([`Exact`], from a cyclictest `-v` log). [`assemble`] makes the Run: the histogram, the
//! statistics (min, max and mean from the source where it has them, percentiles from the
//! histogram, bounds where they fall among overflowed samples), and the provenance: what
//! the source lacked, whose fields are `null` in the Run.

use super::binned::Binned;
use super::provenance::Provenance;
use super::{Format, ImportContext, ImportError};
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::*;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::collections::BTreeMap;

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
    if source.started_at.is_none() {
        provenance.lack("no start or end time");
    }
    if source.command_line.is_none() {
        provenance.lack("no command line");
    }
    if source.host.is_none() {
        provenance.lack("no host facts (kernel, CPUs, clocksource)");
    }
    let elapsed = source.elapsed.or(stream_elapsed);
    let mut cpus: Vec<usize> = built.iter().filter_map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut run = Run::new(Tool {
        name: source.tool.to_string(),
        version: source.version,
    });
    run.id = ctx.id.clone();
    run.started_at = source.started_at.clone();
    run.ended_at = source.ended_at.clone();
    run.command_line = source.command_line;
    // Not latlab's plan: what the source says of how it ran. An empty `probes` tells
    // readers that the other requested settings are not known.
    run.plan.duration_ns = source.duration;
    run.plan.cpus = cpus;
    run.plan.memory_lock = source.memory_lock;
    run.host = source.host;
    run.interrupted = source.interrupted;
    run.warnings = source.warnings;
    run.phases = vec![Phase {
        name: "main".to_string(),
        started_at: source.started_at,
        elapsed_ns: elapsed,
        loads: Vec::new(),
    }];
    run.streams = built;
    run.import = Some(ImportRecord {
        format: format.name().to_string(),
        file: ctx.file.clone(),
        imported_at: ctx.imported_at.clone(),
        lacks: provenance.into_lacks(),
    });
    run.seal();
    // The checks every Run read from a file or the store passes: what is saved can be
    // read back.
    run.check().map_err(|e| {
        ImportError::whole(&ctx.file, format!("the file's figures do not add up: {e}"))
    })?;
    Ok(run)
}

/// One Stream.
fn stream(s: StreamSource, p: &mut Provenance, file: &str) -> Result<Stream, ImportError> {
    if s.policy.is_none() {
        p.lack("no scheduling policy");
    }
    if s.period.is_none() {
        p.lack("no period");
    }
    // Counted by the source where it keeps every sample; set below.
    let mut stream = Stream {
        probe: s.probe.to_string(),
        method: s.method.map(str::to_string),
        phase: "main".to_string(),
        thread: s.thread,
        cpu: s.cpu,
        policy: s.policy,
        period_ns: s.period,
        samples: 0,
        missed_periods: None,
        overrun_wakes: None,
        early_wakes: None,
        first_sample_ns: None,
        warm_up_samples: 0,
        drift_ns: None,
        elapsed_ns: s.elapsed,
        timer_slack_ns: None,
        page_faults: None,
        stats: Statistics {
            min_ns: None,
            max_ns: None,
            mean_ns: None,
            stddev_ns: None,
            percentiles_ns: BTreeMap::new(),
        },
        histogram: None,
        spikes: Spikes::default(),
        timeline: Timeline::default(),
    };
    match s.values {
        Values::Binned(binned) => fill_binned(&mut stream, binned, p, file)?,
        Values::Exact(exact) => fill_exact(&mut stream, *exact),
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
    if samples == 0 {
        stream.histogram = Some(EncodedHistogram::from_histogram(&LatencyHistogram::new()));
        stream.early_wakes = Some(0);
        return Ok(());
    }
    p.lack("no standard deviation (the source keeps only a histogram and summary figures)");
    if !b.histogram {
        p.lack(format!(
            "no histogram for {} (only minimum, mean and maximum): no percentiles",
            stream.label()
        ));
        stream.stats = binned_statistics(&b);
        return Ok(());
    }
    let hist = record_binned(&b, stream, p, file)?;
    stream.histogram = Some(EncodedHistogram::from_histogram(&hist));
    stream.stats = binned_statistics(&b);
    Ok(())
}

/// The histogram of a source's buckets and overflows; sets the stream's early wakes
/// where the figures tell them. Overflowed samples of unknown value are recorded as
/// bounds at the range's end, so percentiles among them are bounds.
fn record_binned(
    b: &Binned,
    stream: &mut Stream,
    p: &mut Provenance,
    file: &str,
) -> Result<LatencyHistogram, ImportError> {
    let mut hist = LatencyHistogram::new();
    let too_many = || {
        ImportError::whole(
            file,
            format!(
                "{}: the counts add up to more samples than a histogram holds (2^63 - 1): \
                 the file is damaged",
                stream.label()
            ),
        )
    };
    for &(edge, count) in &b.buckets {
        hist.record_n(edge.0, count).map_err(|_| too_many())?;
    }
    let mut early_wakes_known = b.min.is_some_and(|m| m.0 >= 0);
    let from = b.overflow_from.0.max(0) as u64;
    if b.overflow > 0 {
        match (b.min, b.max) {
            // Nothing reached the range's end, so every overflow was a negative sample.
            (_, Some(max)) if max < b.overflow_from => {
                hist.record_n(0, b.overflow).map_err(|_| too_many())?;
                stream.early_wakes = Some(b.overflow);
                early_wakes_known = true;
            }
            // At least one overflowed sample was the maximum; the others lie between
            // the range's end and it.
            (Some(min), Some(max)) => {
                hist.record_overflow(from, b.overflow - 1);
                hist.record_n(max.0, 1).map_err(|_| too_many())?;
                early_wakes_known = min.0 >= 0;
                if b.overflow > 1 {
                    p.lack(format!(
                        "overflowed samples ({} in {}) above the histogram range: counted; \
                         their values are unknown except the maximum, so percentiles among \
                         them are shown as {}",
                        b.overflow,
                        named(stream),
                        bounds(b.overflow_from)
                    ));
                }
            }
            _ => {
                hist.record_overflow(from, b.overflow);
                p.lack(format!(
                    "overflowed samples ({} in {}) outside the histogram range: counted; \
                     their values are unknown, so percentiles among them are shown as {}",
                    b.overflow,
                    named(stream),
                    bounds(b.overflow_from)
                ));
            }
        }
    }
    if early_wakes_known && stream.early_wakes.is_none() {
        stream.early_wakes = Some(0);
    }
    Ok(hist)
}

/// A stream as a note about it names it: its CPU (or thread), with its probe unless
/// that is the timer (`timerlat-irq cpu 0`: an rtla file has several per CPU).
fn named(stream: &Stream) -> String {
    match stream.probe.as_str() {
        "timer" => stream.label(),
        probe => format!("{probe} {}", stream.label()),
    }
}

/// How percentiles among overflowed samples read: bounds from where the range ends,
/// or no bound at all where the source does not say (never `≥ 0 ns`).
fn bounds(from: Nanos) -> String {
    match from.0 > 0 {
        true => format!("bounds (≥ {from})"),
        false => "bounds whose floor the source does not give".to_string(),
    }
}

/// Statistics from the source's figures, percentiles from its histogram (clamped to the
/// source's minimum and maximum, as latlab's own are).
fn binned_statistics(b: &Binned) -> Statistics {
    let min = b.min.unwrap_or(Nanos(i64::MIN));
    let max = b.max.unwrap_or(Nanos(i64::MAX));
    let percentiles_ns = if b.histogram {
        REPORTED_PERCENTILES
            .iter()
            .filter_map(|&q| Some((percentile_key(q), b.percentile(q)?.within(min, max))))
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
fn fill_exact(stream: &mut Stream, e: Exact) {
    stream.samples = e.sums.count;
    stream.first_sample_ns = e.first;
    stream.early_wakes = Some(e.early_wakes);
    // cyclictest skips the periods a late wake passed without counting them: missed
    // periods and overrun wakes stay unknown.
    stream.stats = Statistics::compute(&e.sums, &e.histogram);
    stream.histogram = Some(EncodedHistogram::from_histogram(&e.histogram));
    stream.spikes = e.spikes;
    stream.timeline = e.timeline;
}
