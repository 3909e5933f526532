//! `cyclictest --json=FILE`: rt-tests' header ([`rt_json`](super::rt_json)), then
//! cyclictest's `write_stats` (`src/cyclictest/cyclictest.c`): `num_threads`,
//! `resolution_in_ns` (1 with `-N`), and per thread its histogram (non-zero buckets,
//! one per µs or ns; an empty object without `-h`), `cycles`, `min`, `max`, `avg`
//! (`%.2f`), `cpu` (-1 when not pinned) and `node`.
//!
//! Real files are not always valid JSON (see [`printf_json`](super::printf_json)), and a
//! thread without cycles has `avg` `-nan`, `min` 1000000 and `max` 0. The settings the
//! JSON does not repeat (interval, policy, memory locking, the histogram's range) come
//! from its command line, read as cyclictest reads it.

use super::binned::{self, Binned, Disagreement, TooManySamples};
use super::build::{self, StreamSource, Values};
use super::cyclictest_cmdline::{self, Options};
use super::printf_json::line_of;
use super::provenance::Provenance;
use super::rt_json::{self, Header};
use super::{ImportContext, ImportError, TimeUnit};
use latlab_model::run::{MemoryLockPlan, Run};
use latlab_model::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;

#[derive(Deserialize)]
struct File {
    #[serde(flatten)]
    header: Header,
    num_threads: usize,
    resolution_in_ns: Option<u8>,
    thread: BTreeMap<String, Thread>,
}

#[derive(Deserialize)]
struct Thread {
    histogram: Option<BTreeMap<u64, u64>>,
    cycles: u64,
    min: i64,
    max: i64,
    avg: Option<f64>,
    cpu: i64,
}

/// Imports a cyclictest JSON file.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let mut p = Provenance::default();
    let (text, file) = rt_json::read::<File>(input, ctx, "cyclictest JSON", &mut p)?;
    let unit = unit(&file, &text, ctx, &mut p)?;
    let options = options(&file.header, &mut p);
    let threads_line = line_of(&text, "\"thread\"", 1).unwrap_or(1);
    if file.thread.len() != file.num_threads {
        let problem = format!(
            "num_threads is {} but \"thread\" holds {} entries: the file is inconsistent \
             (truncated or edited?)",
            file.num_threads,
            file.thread.len()
        );
        return Err(ImportError::at(&ctx.file, threads_line, problem));
    }
    let mut streams = Vec::with_capacity(file.num_threads);
    for i in 0..file.num_threads {
        let line =
            line_of(&text, &format!("\"{i}\": {{"), threads_line as usize).unwrap_or(threads_line);
        let thread = file.thread.get(&i.to_string()).ok_or_else(|| {
            let problem = format!(
                "threads are numbered 0 to {}, but thread {i} is missing",
                file.num_threads - 1
            );
            ImportError::at(&ctx.file, threads_line, problem)
        })?;
        let binned = binned(thread, unit, options.as_ref())
            .map_err(|e| ImportError::at(&ctx.file, line, format!("thread {i}: {e}")))?;
        streams.push(StreamSource {
            probe: "timer",
            method: options.as_ref().map(Options::method),
            thread: i,
            cpu: usize::try_from(thread.cpu).ok(),
            policy: options.as_ref().map(|o| o.policy(i, file.num_threads)),
            period: options.as_ref().map(|o| o.period(i)),
            elapsed: None,
            values: Values::Binned(binned),
        });
    }
    if streams.iter().any(|s| s.cpu.is_none()) {
        p.lack("threads not pinned (cpu -1): no CPU numbers for them");
    }
    if unit == TimeUnit::Microseconds {
        p.lack(
            "values truncated to whole µs by cyclictest: buckets are recorded at their \
             lower edge, so percentiles are to the 1 µs bucket width, lower edge",
        );
    }
    // A Run latlab exported as cyclictest JSON reads back as latlab's.
    let tool = if file.header.program() == "latlab" {
        "latlab"
    } else {
        "cyclictest"
    };
    let mut source = file.header.source(tool, &mut p);
    if let Some(o) = &options {
        source.memory_lock = Some(if o.mlockall {
            MemoryLockPlan::All
        } else {
            MemoryLockPlan::None
        });
        source.duration = o.duration_s.filter(|&s| s > 0).map(Nanos::from_secs);
    }
    build::assemble(super::Format::CyclictestJson, ctx, source, streams, p)
}

/// The values' unit: `resolution_in_ns`, which a unit given must agree with.
fn unit(
    file: &File,
    text: &str,
    ctx: &ImportContext,
    p: &mut Provenance,
) -> Result<TimeUnit, ImportError> {
    let Some(r) = file.resolution_in_ns else {
        return Ok(super::unit_or_default(ctx, p, "cyclictest"));
    };
    let unit = if r == 1 {
        TimeUnit::Nanoseconds
    } else {
        TimeUnit::Microseconds
    };
    if ctx.unit.is_some_and(|given| given != unit) {
        let line = line_of(text, "\"resolution_in_ns\"", 1).unwrap_or(1);
        let problem = format!(
            "the file says its values are in {} (resolution_in_ns {r}): import it without a unit",
            unit.name()
        );
        return Err(ImportError::at(&ctx.file, line, problem));
    }
    Ok(unit)
}

/// The command line's settings, when it is cyclictest's and readable.
fn options(header: &Header, p: &mut Provenance) -> Option<Options> {
    if header.program() != "cyclictest" {
        p.lack("no cyclictest command line: period, scheduling policy and memory locking unknown");
        return None;
    }
    match cyclictest_cmdline::parse(&header.argv()[1..]) {
        Ok(o) => Some(o),
        Err(e) => {
            p.lack(format!(
                "the command line could not be read as cyclictest's ({e}): period, \
                 scheduling policy and memory locking unknown"
            ));
            None
        }
    }
}

/// Why a thread's histogram and figures cannot be taken together.
#[derive(Debug, thiserror::Error)]
enum ThreadError {
    #[error(transparent)]
    Counts(#[from] TooManySamples),
    #[error(
        "the histogram holds {in_buckets} samples but cycles is {cycles}: the file is \
         inconsistent (edited?)"
    )]
    MoreThanCycles { in_buckets: u64, cycles: u64 },
    #[error("avg is not a number although cycles is not 0: the file is damaged")]
    AvgNotANumber,
    #[error(transparent)]
    Disagreement(#[from] Disagreement),
}

/// One thread's histogram and figures, checked against each other.
fn binned(t: &Thread, unit: TimeUnit, options: Option<&Options>) -> Result<Binned, ThreadError> {
    let u = unit.nanos();
    let in_buckets = binned::sum_counts(t.histogram.iter().flat_map(|h| h.values().copied()))?;
    if in_buckets > t.cycles {
        return Err(ThreadError::MoreThanCycles {
            in_buckets,
            cycles: t.cycles,
        });
    }
    let buckets: Vec<(Nanos, u64)> = t
        .histogram
        .iter()
        .flatten()
        .map(|(&k, &c)| (Nanos(k as i64 * u), c))
        .collect();
    // cyclictest writes an empty histogram object without -h too: the command line tells;
    // without it, an empty histogram of a thread with cycles is taken as no histogram.
    let has_histogram = match options {
        Some(o) => o.histogram_us.is_some(),
        None => t.histogram.as_ref().is_some_and(|h| !h.is_empty()),
    };
    // -h N tracks N buckets of the values' unit.
    let range = options.and_then(|o| o.histogram_us).map(|r| Nanos(r * u));
    let highest = buckets.last().map_or(0, |b| b.0 .0 + u);
    let mut b = Binned {
        histogram: has_histogram,
        buckets,
        width: Nanos(u),
        overflow: t.cycles - in_buckets,
        overflow_from: range.unwrap_or(Nanos(highest)),
        min: None,
        max: None,
        mean: None,
    };
    if t.cycles == 0 {
        return Ok(b);
    }
    let avg = t
        .avg
        .filter(|a| a.is_finite())
        .ok_or(ThreadError::AvgNotANumber)?;
    b.min = Some(Nanos(t.min.saturating_mul(u)));
    b.max = Some(Nanos(t.max.saturating_mul(u)));
    b.mean = Some(binned::rounded_mean(&b, avg, u));
    b.check()?;
    Ok(b)
}
