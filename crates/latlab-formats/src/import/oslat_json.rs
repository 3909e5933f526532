//! `oslat --json=FILE`: rt-tests' header ([`rt_json`](super::rt_json)), then oslat's
//! `write_summary_json`
//! (`src/oslat/oslat.c`): `num_threads` and per thread `cpu`, `freq` (MHz), `min` and
//! `max` (in oslat's unit: µs, or ns with a `-W` not a multiple of 1000), `avg` (µs,
//! `%3lf`), `duration` (s) and `histogram`: non-zero buckets keyed by their label, the
//! bucket's upper end in µs (see [`oslat_text`](super::oslat_text) for what a bucket
//! holds). The bucket width is oslat's default (1 µs) unless the command line sets `-W`.

use super::build;
use super::getopt::{self, atoi, parse_time_string, Arg, Long};
use super::oslat_text::{self, decimal_us, OslatColumn};
use super::printf_json::line_of;
use super::provenance::Provenance;
use super::rt_json::{self, Header};
use super::{ImportContext, ImportError};
use latlab_model::run::{MemoryLockPlan, Run};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;

/// `getopt_long` option string of oslat (`W` from the versions with `--bucket-width`).
const SHORT: &str = "b:Bc:C:D:f:hm:qsw:W:T:vz";

/// oslat's long options.
const LONG: &[Long] = &[
    ("bucket-size", Arg::Required, 'b'),
    ("bucket-width", Arg::Required, 'W'),
    ("cpu-list", Arg::Required, 'c'),
    ("cpu-main-thread", Arg::Required, 'C'),
    ("duration", Arg::Required, 'D'),
    ("json", Arg::Required, '-'),
    ("rtprio", Arg::Required, 'f'),
    ("help", Arg::No, 'h'),
    ("trace-threshold", Arg::Required, 'T'),
    ("workload", Arg::Required, 'w'),
    ("workload-mem", Arg::Required, 'm'),
    ("bias", Arg::No, 'B'),
    ("quiet", Arg::No, 'q'),
    ("single-preheat", Arg::No, 's'),
    ("zero-omit", Arg::No, 'z'),
    ("version", Arg::No, 'v'),
];

#[derive(Deserialize)]
struct File {
    #[serde(flatten)]
    header: Header,
    num_threads: usize,
    thread: BTreeMap<String, Thread>,
}

#[derive(Deserialize)]
struct Thread {
    cpu: i64,
    min: u64,
    avg: Option<f64>,
    max: u64,
    duration: f64,
    histogram: BTreeMap<String, u64>,
}

/// What the command line says, as oslat's `parse_options` reads it.
struct Settings {
    /// Bucket width in ns.
    width: i64,
    /// Nanoseconds per unit of `min` and `max`.
    unit: i64,
    policy: Option<SchedSpec>,
    duration: Option<Nanos>,
}

/// Imports an oslat JSON file.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let mut p = Provenance::default();
    let (text, file) = rt_json::read::<File>(input, ctx, "oslat JSON", &mut p)?;
    let settings = settings(&file.header, &mut p);
    let threads_line = line_of(&text, "\"thread\"", 1).unwrap_or(1);
    let thread_line = |t: usize| {
        line_of(&text, &format!("\"{t}\": {{"), threads_line as usize).unwrap_or(threads_line)
    };
    if file.thread.len() != file.num_threads {
        let problem = format!(
            "num_threads is {} but \"thread\" holds {} entries: the file is inconsistent",
            file.num_threads,
            file.thread.len()
        );
        return Err(ImportError::at(&ctx.file, threads_line, problem));
    }
    let mut columns = Vec::with_capacity(file.num_threads);
    for i in 0..file.num_threads {
        let t = file.thread.get(&i.to_string()).ok_or_else(|| {
            ImportError::at(&ctx.file, threads_line, format!("thread {i} is missing"))
        })?;
        let column = column(t, &settings)
            .map_err(|e| ImportError::at(&ctx.file, thread_line(i), format!("thread {i}: {e}")))?;
        columns.push(column);
    }
    // The JSON lists only non-zero buckets; overflowed samples are in oslat's last bucket,
    // which is then the last listed and ends below the maximum.
    let line_of = |t: usize, _| thread_line(t);
    let streams = oslat_text::streams(
        &columns,
        settings.width,
        settings.policy,
        &mut p,
        &ctx.file,
        &line_of,
    )?;
    let mut source = file.header.source("oslat", &mut p);
    source.memory_lock = Some(MemoryLockPlan::All);
    source.duration = settings.duration;
    source.elapsed = columns.iter().filter_map(|c| c.duration).max();
    build::assemble(super::Format::OslatJson, ctx, source, streams, p)
}

/// A thread oslat would not have written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ThreadError {
    #[error("histogram key '{0}' is not a bucket label in µs")]
    Label(String),
    #[error("avg is not a number although it has samples: the file is damaged")]
    AvgNotANumber,
}

/// One thread as oslat's text would show it.
fn column(t: &Thread, settings: &Settings) -> Result<OslatColumn, ThreadError> {
    let mut labels = Vec::with_capacity(t.histogram.len());
    for (label, &count) in &t.histogram {
        let ns = decimal_us(label).ok_or_else(|| ThreadError::Label(label.clone()))?;
        labels.push((ns, count));
    }
    labels.sort_unstable();
    let samples: u64 = labels.iter().map(|l| l.1).sum();
    let avg = t.avg.filter(|a| a.is_finite());
    if samples > 0 && avg.is_none() {
        return Err(ThreadError::AvgNotANumber);
    }
    let value = |v: u64| {
        i64::try_from(v)
            .ok()
            .and_then(|v| v.checked_mul(settings.unit))
    };
    Ok(OslatColumn {
        cpu: usize::try_from(t.cpu).ok(),
        labels,
        min: value(t.min),
        avg: avg.map(|a| a * 1_000.0),
        max: value(t.max),
        duration: (t.duration.is_finite() && t.duration >= 0.0)
            .then(|| Nanos((t.duration * 1e9).round() as i64)),
    })
}

/// oslat's bucket width, unit, priority and duration from its command line
/// (`-W`/`--bucket-width`, `-f`/`--rtprio`, `-D`/`--duration`), its defaults otherwise.
fn settings(header: &Header, p: &mut Provenance) -> Settings {
    let mut s = Settings {
        width: 1_000,
        unit: 1_000,
        policy: None,
        duration: None,
    };
    let options = match header.program() {
        "oslat" => getopt::options(&header.argv()[1..], SHORT, LONG).map_err(|e| e.to_string()),
        _ => Err("no oslat command line".to_string()),
    };
    let options = options.unwrap_or_else(|why| {
        p.lack(format!(
            "{why}: bucket width taken as oslat's default (1 µs), no priority"
        ));
        Vec::new()
    });
    for (opt, value) in options {
        let value = value.unwrap_or_default();
        match opt {
            // A width not a multiple of 1000 ns makes oslat count in ns.
            'W' => match atoi(&value) {
                w if w > 0 && w % 1_000 == 0 => s.width = w,
                w if w > 0 => (s.width, s.unit) = (w, 1),
                _ => {}
            },
            'f' => {
                s.policy = Some(SchedSpec::Fifo {
                    priority: atoi(&value) as i32,
                })
            }
            'D' => s.duration = Some(Nanos::from_secs(parse_time_string(&value))),
            _ => {}
        }
    }
    s
}
