//! `oslat` text output (rt-tests `src/oslat/oslat.c`): `oslat V x.yz`, the settings
//! (`dump_globals`, left out with `-q`), then `write_summary`, one column per CPU, each
//! line `"%12s:\t"` and `" %value"` per thread (the tab shown as two spaces):
//!
//! ```text
//! oslat V 2.40
//! ...
//!         Core:   1
//! Counter Freq:   2597 (Mhz)
//!     001 (us):   84486805
//!     002 (us):   5
//!     ...                                    (with -z: buckets all zero left out)
//!     032 (us):   274 (including overflows)
//!      Minimum:   1 (us)
//!      Average:   1.001 (us)
//!      Maximum:   2702 (us)
//!      Max-Min:   2701 (us)
//!     Duration:   2.001 (sec)
//! ```
//!
//! Each sample is the gap between two reads of the cycle counter in a busy loop. In
//! rt-tests 2.4 (`insert_bucket`) bucket j holds the gaps of `bias + j` whole µs and is
//! labelled `bias + j + 1`, the value oslat reports for them (minimum and maximum
//! included); later versions round up to their unit (`lat = ceil(cycles / MHz)`, µs, or ns
//! with a `-W` not a multiple of 1000), put `bias + j·w ≤ lat < bias + (j+1)·w` in bucket j
//! and label it `bias + (j+1)·w`. Either way the last bucket also holds every sample above
//! the range, without a separate count, and `Average` is computed from the labels plus the
//! overflows' excess.

use super::binned::{self, Binned, Disagreement, Figure};
use super::build::{self, Source, StreamSource, Values};
use super::lines::Lines;
use super::provenance::Provenance;
use super::{ImportContext, ImportError};
use latlab_model::run::{MemoryLockPlan, Run};
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::io::BufRead;

/// One CPU's column as oslat prints it, values in ns.
#[derive(Default, Clone)]
pub(super) struct OslatColumn {
    pub(super) cpu: Option<usize>,
    /// (label, count) of each bucket printed, the last one holding the overflows.
    pub(super) labels: Vec<(i64, u64)>,
    pub(super) min: Option<i64>,
    pub(super) avg: Option<f64>,
    pub(super) max: Option<i64>,
    pub(super) duration: Option<Nanos>,
}

/// The settings oslat prints before its summary (`dump_globals`, `record_bias`).
#[derive(Default)]
struct Settings {
    version: Option<String>,
    policy: Option<SchedSpec>,
    runtime: Option<Nanos>,
    /// `Global bias set to`, in ns.
    bias: i64,
}

/// The summary as read so far.
#[derive(Default)]
struct Summary {
    columns: Vec<OslatColumn>,
    /// The smallest step between bucket labels printed one after the other.
    adjacent_gap: Option<i64>,
    previous_label: Option<i64>,
    /// The last bucket (`(including overflows)`) was read.
    complete: bool,
    min_line: u64,
    max_line: u64,
    avg_line: u64,
}

/// Imports oslat text output.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let file = ctx.file.as_str();
    let mut lines = Lines::new(input, file);
    let mut settings = Settings::default();
    let mut summary: Option<Summary> = None;
    while let Some((n, line)) = lines.next_line()? {
        let err = |what: LineError| ImportError::at(file, n, what);
        let Some(summary) = &mut summary else {
            match line.split_once(":\t") {
                Some((label, values)) if label.trim() == "Core" => {
                    summary = Some(Summary::begin(values).map_err(err)?);
                }
                _ => settings.read(line).map_err(err)?,
            }
            continue;
        };
        match line.split_once(":\t") {
            Some((label, _)) if label.trim() == "Core" => {
                return Err(ImportError::at(
                    file,
                    n,
                    "a second summary: import one oslat run per file",
                ));
            }
            Some((label, values)) => summary.read(label.trim(), values, n).map_err(err)?,
            None if line.trim() == "..." => summary.previous_label = None,
            None if line.trim().is_empty() => {}
            None => {
                let problem = format!(
                    "unexpected line '{}' in the summary: the file is damaged",
                    line.trim()
                );
                return Err(ImportError::at(file, n, problem));
            }
        }
    }
    lines.check_complete()?;
    let summary = summary.filter(|s| {
        s.complete
            && s.columns
                .iter()
                .all(|c| c.min.is_some() && c.max.is_some() && c.avg.is_some())
    });
    let Some(summary) = summary else {
        let problem = "the file ends before oslat's summary is complete: it is truncated; take it again from oslat";
        return Err(ImportError::at(file, lines.number().max(1), problem));
    };
    let mut p = Provenance::default();
    let width = summary.adjacent_gap.unwrap_or_else(|| {
        p.lack("bucket width inferred from the labels' common divisor (no two adjacent buckets printed)");
        summary.columns[0].labels.iter().fold(0, |g, l| gcd(g, l.0 - settings.bias)).max(1)
    });
    let line_of = |_: usize, figure: Figure| match figure {
        Figure::Min => summary.min_line,
        Figure::Max => summary.max_line,
        Figure::Mean => summary.avg_line,
    };
    let streams = streams(
        &summary.columns,
        width,
        settings.policy,
        &mut p,
        file,
        &line_of,
    )?;
    let source = Source {
        tool: "oslat",
        version: settings.version,
        memory_lock: Some(MemoryLockPlan::All),
        duration: settings.runtime,
        elapsed: summary.columns.iter().filter_map(|c| c.duration).max(),
        ..Source::default()
    };
    build::assemble(super::Format::Oslat, ctx, source, streams, p)
}

/// A line of oslat's text that it would not have printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum LineError {
    #[error("unknown thread priority '{0}'")]
    Priority(String),
    #[error("the bias is not a number")]
    Bias,
    #[error("a core is not a CPU number")]
    Core,
    #[error("the summary names no core")]
    NoCore,
    #[error("{given} values where there are {cores} cores: the file is damaged")]
    Values { given: usize, cores: usize },
    #[error("'{0}' is not a latency in µs")]
    Latency(String),
    #[error("'{0}' is not an average in µs")]
    Average(String),
    #[error("'{0}' is not a duration in seconds")]
    Duration(String),
    #[error("unknown summary line '{0}'")]
    Label(String),
    #[error("a bucket after the one including overflows: the file is damaged")]
    AfterOverflows,
    #[error("bucket labels must ascend: the file is damaged")]
    Descending,
    #[error("'{0}' is not a count")]
    Count(String),
}

impl Settings {
    /// Reads a line before the summary; the lines it does not know are not needed.
    fn read(&mut self, line: &str) -> Result<(), LineError> {
        if let Some(v) = line.strip_prefix("oslat V ") {
            self.version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Thread priority:") {
            // "default" means the policy oslat inherited, which it does not say.
            self.policy = match v.trim() {
                "default" => None,
                fifo => {
                    let priority = fifo
                        .strip_prefix("SCHED_FIFO:")
                        .and_then(|p| p.parse().ok());
                    Some(SchedSpec::Fifo {
                        priority: priority.ok_or_else(|| LineError::Priority(fifo.to_string()))?,
                    })
                }
            };
        } else if let Some(v) = line.strip_prefix("Total runtime:") {
            self.runtime = v
                .split_whitespace()
                .next()
                .and_then(|s| s.parse::<i64>().ok())
                .map(Nanos::from_secs);
        } else if let Some(v) = line.strip_prefix("Global bias set to ") {
            self.bias = v
                .split_whitespace()
                .next()
                .and_then(decimal_us)
                .ok_or(LineError::Bias)?;
        }
        Ok(())
    }
}

impl Summary {
    /// The summary's first line, `Core:` and the CPUs.
    fn begin(values: &str) -> Result<Summary, LineError> {
        let columns = values
            .split_whitespace()
            .map(|c| {
                c.parse().map(|c| OslatColumn {
                    cpu: Some(c),
                    ..OslatColumn::default()
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| LineError::Core)?;
        if columns.is_empty() {
            return Err(LineError::NoCore);
        }
        Ok(Summary {
            columns,
            ..Summary::default()
        })
    }

    /// One `label:\t values` line of the summary (line `n`).
    fn read(&mut self, label: &str, values: &str, n: u64) -> Result<(), LineError> {
        let (values, suffix) = split_suffix(values);
        let fields: Vec<&str> = values.split_whitespace().collect();
        if fields.len() != self.columns.len() {
            return Err(LineError::Values {
                given: fields.len(),
                cores: self.columns.len(),
            });
        }
        let columns = self.columns.iter_mut().zip(&fields);
        match label {
            "Counter Freq" | "Max-Min" => {}
            "Minimum" => {
                self.min_line = n;
                for (c, f) in columns {
                    c.min = Some(decimal_us(f).ok_or_else(|| LineError::Latency(f.to_string()))?);
                }
            }
            "Maximum" => {
                self.max_line = n;
                for (c, f) in columns {
                    c.max = Some(decimal_us(f).ok_or_else(|| LineError::Latency(f.to_string()))?);
                }
            }
            "Average" => {
                self.avg_line = n;
                for (c, f) in columns {
                    c.avg = Some(
                        decimal_us(f).ok_or_else(|| LineError::Average(f.to_string()))? as f64,
                    );
                }
            }
            "Duration" => {
                for (c, f) in columns {
                    let secs = f.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
                    let secs = secs.ok_or_else(|| LineError::Duration(f.to_string()))?;
                    c.duration = Some(Nanos((secs * 1e9).round() as i64));
                }
            }
            bucket => {
                let label = bucket
                    .strip_suffix(" (us)")
                    .and_then(decimal_us)
                    .ok_or_else(|| LineError::Label(bucket.to_string()))?;
                if self.complete {
                    return Err(LineError::AfterOverflows);
                }
                if let Some(previous) = self.previous_label {
                    if label <= previous {
                        return Err(LineError::Descending);
                    }
                    let gap = label - previous;
                    self.adjacent_gap = Some(self.adjacent_gap.map_or(gap, |g| g.min(gap)));
                }
                self.previous_label = Some(label);
                self.complete = suffix.contains("including overflows");
                for (c, f) in columns {
                    c.labels.push((
                        label,
                        f.parse().map_err(|_| LineError::Count(f.to_string()))?,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The streams of oslat's columns; `width` is the bucket width in ns, `line_of` the line
/// holding a thread's minimum or maximum.
pub(super) fn streams(
    columns: &[OslatColumn],
    width: i64,
    policy: Option<SchedSpec>,
    p: &mut Provenance,
    file: &str,
    line_of: &dyn Fn(usize, Figure) -> u64,
) -> Result<Vec<StreamSource>, ImportError> {
    let mut streams = Vec::with_capacity(columns.len());
    for (t, c) in columns.iter().enumerate() {
        let b = binned(c, width).map_err(|d| {
            let core = c.cpu.unwrap_or(t);
            ImportError::at(
                file,
                line_of(t, d.figure()),
                format!("core {core}: {d}: the file is inconsistent"),
            )
        })?;
        if b.overflow > 0 {
            p.lack(
                "oslat counts samples above its range in its last bucket, without a separate \
                 count: that bucket is taken as overflows when the maximum lies beyond it",
            );
            if t > 0 {
                p.lack(
                    "with overflows, oslat adds the first core's overflow excess to every core's \
                     average (calculate() in oslat.c): the other cores' means are off by it",
                );
            }
        }
        streams.push(StreamSource {
            probe: "noise",
            method: Some("busy-loop"),
            thread: t,
            cpu: c.cpu,
            policy,
            period: None,
            elapsed: c.duration,
            values: Values::Binned(b),
        });
    }
    p.lack("no period: oslat measures the gaps in a busy loop, not periodic wake-ups");
    p.lack(
        "oslat reports a gap as the upper end of its bucket (rt-tests 2.4: whole µs + 1; later: \
         rounded up): its minimum, mean and maximum are kept as it printed them, and the \
         percentiles are read the same way, so each figure may exceed the gap it stands for \
         by up to the bucket width",
    );
    Ok(streams)
}

/// One column as a histogram in oslat's own convention, which its minimum, mean and
/// maximum follow: a sample is printed at its bucket's upper end, in rt-tests 2.4
/// `floor(µs) + 1`, the bucket's label (`insert_bucket`, `us = index + 1`); in later
/// versions `ceil` in its unit, one unit to a bucket width below the label. Which one a
/// file holds shows where its minimum lies.
fn binned(c: &OslatColumn, width: i64) -> Result<Binned, Disagreement> {
    let samples = binned::sum_counts(c.labels.iter().map(|l| l.1))?;
    let (Some(min), Some(max)) = (c.min, c.max) else {
        return Err(Disagreement::NoMinOrMax);
    };
    let empty = Binned {
        histogram: true,
        buckets: Vec::new(),
        width: Nanos(width),
        overflow: 0,
        overflow_from: Nanos::ZERO,
        min: None,
        max: None,
        mean: None,
    };
    let Some(&(lowest, _)) = c.labels.iter().find(|l| l.1 > 0) else {
        return Ok(empty);
    };
    // Where oslat's buckets begin in its own convention (a sample printed as its
    // bucket's upper end): rt-tests 2.4 prints every sample of a bucket as the label;
    // later versions print the samples of a bucket one unit to a bucket width below it.
    let offset = lowest - min;
    let shift = if offset == 0 {
        0
    } else if offset > 0 && offset <= width {
        width
    } else {
        return Err(Disagreement::MinOutsideLowest {
            min: Nanos(min),
            lowest: Nanos(lowest),
        });
    };
    let mut buckets: Vec<(Nanos, u64)> = c
        .labels
        .iter()
        .filter(|l| l.1 > 0)
        .map(|&(label, n)| (Nanos(label - shift), n))
        .collect();
    let last = c.labels.last().map_or(0, |l| l.0) - shift;
    let mut overflow = 0;
    if max >= last + width && c.labels.last().is_some_and(|l| l.1 > 0) {
        overflow = buckets.pop().map_or(0, |b| b.1);
    }
    // Minimum, mean and maximum exactly as oslat printed them.
    let b = Binned {
        buckets,
        overflow,
        overflow_from: Nanos(last),
        min: Some(Nanos(min)),
        max: Some(Nanos(max)),
        mean: c.avg,
        ..empty
    };
    debug_assert_eq!(b.samples(), samples);
    b.check()?;
    Ok(b)
}

/// `1.045` µs (as oslat prints, 0 or 3 decimals) in ns.
pub(super) fn decimal_us(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || fraction.len() > 3
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let frac: i64 = format!("{fraction:0<3}").parse().ok()?;
    whole
        .parse::<i64>()
        .ok()?
        .checked_mul(1_000)?
        .checked_add(frac)
}

/// The values of a summary line and its suffix (`(us)`, `(Mhz)`, `(including overflows)`).
fn split_suffix(values: &str) -> (&str, &str) {
    match values.find('(') {
        Some(i) => (&values[..i], &values[i..]),
        None => (values, ""),
    }
}

pub(super) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        assert_eq!(decimal_us("001"), Some(1_000));
        assert_eq!(decimal_us("1.045"), Some(1_045));
        assert_eq!(decimal_us("0.5"), Some(500));
        assert_eq!(decimal_us("1.0451"), None);
        assert_eq!(decimal_us("-1"), None);
        assert_eq!(decimal_us(""), None);
    }
}
