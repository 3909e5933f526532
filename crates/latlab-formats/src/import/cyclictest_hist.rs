//! `cyclictest -h N` (and `-H N`, `--histfile`) histogram text, `print_hist` in rt-tests
//! `src/cyclictest/cyclictest.c`, in both of its layouts:
//!
//! * classic (rt-tests 2.4, the version installed where the fixtures were made, and
//!   before): `# Histogram`, then a row for every bucket `0..N-1`, zero rows included
//!   (`%06d ` then one `%06lu` per thread, tab-separated, plus a sum column with `-H`),
//!   then `# Total: %09llu...`;
//! * newer (rt-tests with `src/lib/histogram.c`): `hset_print_bucket` leaves out the rows
//!   whose threads are all zero, and there is no `# Total`.
//!
//! Both end with `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:` (`%05lu`
//! each; `-H` adds the maximum of all), `# Histogram Overflows:` (`-H` adds the sum),
//! `# Histogram Overflow at cycle number:` with one `# Thread N:` line each, and
//! `# SMIs:` with `--smi`. Before the histogram cyclictest may print its status (without
//! `-q`): the `policy: ...` line and a `T: 0 ( 123) P:95 I:1000 C: 500 Min: ...` line per
//! thread (`print_stat`), redrawn in place with cursor escapes (`ESC [ 4 A`) as the run
//! goes, which give each thread's priority, interval and cycle count. The display thread
//! prints its last status without waiting for the measuring threads, so the last `C:`
//! may lag the histogram by a few cycles; the histogram is the count then, and the Run
//! says so in a warning.
//!
//! A bucket k holds the samples of k units (cyclictest truncates to whole µs, or ns with
//! `-N`). Only the status lines tell which: `print_stat` prints `Act:%5ld Avg:%5ld` in
//! µs and `Act:%8ld Avg:%8ld` with `-N`. Without them (`-q`) [`ImportContext::unit`] does.

use super::binned::{self, Binned, Figure};
use super::build::{self, Source, StreamSource, Values};
use super::cyclictest_status::{self as status, Status};
use super::lines::Lines;
use super::provenance::Provenance;
use super::{ImportContext, ImportError, TimeUnit};
use latlab_model::run::{Run, Warning};
use latlab_model::seal::WarningCode;
use latlab_model::spec::SchedSpec;
use latlab_model::Nanos;
use std::io::BufRead;

/// What the status lines tell of the values' unit.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct UnitEvidence {
    /// The line of the first status line in µs, and in ns.
    microseconds: Option<u64>,
    nanoseconds: Option<u64>,
}

impl UnitEvidence {
    fn note(&mut self, line: u64, unit: Option<TimeUnit>) {
        match unit {
            Some(TimeUnit::Microseconds) => {
                self.microseconds.get_or_insert(line);
            }
            Some(TimeUnit::Nanoseconds) => {
                self.nanoseconds.get_or_insert(line);
            }
            None => {}
        }
    }

    /// The unit every telling status line agrees on, with the line of the first.
    fn unit(self) -> Option<(TimeUnit, u64)> {
        match (self.microseconds, self.nanoseconds) {
            (Some(line), None) => Some((TimeUnit::Microseconds, line)),
            (None, Some(line)) => Some((TimeUnit::Nanoseconds, line)),
            _ => None,
        }
    }
}

/// One histogram row: its line, bucket and per-column counts.
struct Row {
    line: u64,
    bucket: u64,
    counts: Vec<u64>,
}

/// One footer line's values (as `%lu` prints a `long`: negative ones wrap) and its line.
struct Figures {
    line: u64,
    values: Vec<i64>,
}

/// The footer, as printed.
#[derive(Default)]
struct Footer {
    total: Option<Figures>,
    min: Option<Figures>,
    avg: Option<Figures>,
    max: Option<Figures>,
    overflows: Option<Figures>,
}

/// The footer's figures, one per thread (without `-H`'s all-threads column).
struct PerThread {
    total: Option<Figures>,
    min: Figures,
    avg: Figures,
    max: Figures,
    overflows: Figures,
}

impl Footer {
    /// The per-thread figures, as many threads as `# Min Latencies` has values. With
    /// `-H` (and more than one thread) Total, Max and Overflows have one more value, for
    /// all threads together.
    fn per_thread(self, file: &str, last_line: u64) -> Result<PerThread, ImportError> {
        let (Some(min), Some(avg), Some(max), Some(overflows)) =
            (self.min, self.avg, self.max, self.overflows)
        else {
            return Err(truncated(file, last_line));
        };
        let threads = min.values.len();
        if threads == 0 {
            return Err(ImportError::at(
                file,
                min.line,
                "'# Min Latencies' lists no thread: the file is damaged",
            ));
        }
        let take = |f: Figures, all_column: bool| -> Result<Figures, ImportError> {
            let n = f.values.len();
            if n == threads || (all_column && threads > 1 && n == threads + 1) {
                return Ok(Figures {
                    line: f.line,
                    values: f.values[..threads].to_vec(),
                });
            }
            let problem =
                format!("{n} values where there are {threads} threads: the file is damaged");
            Err(ImportError::at(file, f.line, problem))
        };
        Ok(PerThread {
            total: self.total.map(|t| take(t, true)).transpose()?,
            min,
            avg: take(avg, false)?,
            max: take(max, true)?,
            overflows: take(overflows, true)?,
        })
    }
}

/// Everything read from the file.
struct Histogram {
    rows: Vec<Row>,
    footer: PerThread,
    threads: usize,
    statuses: Vec<Option<Status>>,
    policy_name: Option<String>,
}

/// A thread whose last status line counted fewer cycles than its histogram holds.
struct StatusBehind {
    thread: usize,
    status_cycles: u64,
    samples: u64,
}

/// Imports cyclictest histogram text.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let file = ctx.file.as_str();
    let mut lines = Lines::new(input, file);
    let mut statuses = Vec::new();
    let mut policy_name = None;
    let mut evidence = UnitEvidence::default();
    // The status output before `# Histogram`.
    loop {
        let Some((n, line)) = lines.next_line()? else {
            let problem = if statuses.is_empty() {
                "no '# Histogram' line: this is not cyclictest -h output, or its start is cut off"
            } else {
                "cyclictest's live status only, no '# Histogram': it holds no samples to \
                 import; run cyclictest with -h N (best with -q) or --json=FILE"
            };
            return Err(ImportError::at(file, lines.number().max(1), problem));
        };
        if line == "# Histogram" {
            break;
        }
        if let Some(unit) = read_status_line(line, &mut policy_name, &mut statuses) {
            evidence.note(n, unit);
        }
    }
    let (rows, first_footer) = read_rows(&mut lines, file)?;
    let footer = read_footer(&mut lines, first_footer, file)?;
    let threads = footer.min.values.len();
    let histogram = Histogram {
        rows,
        footer,
        threads,
        statuses,
        policy_name,
    };
    let mut p = Provenance::default();
    let unit = unit(evidence, ctx, &mut p)?;
    let mut behind = Vec::new();
    let streams = histogram.streams(unit, file, &mut p, &mut behind)?;
    if histogram.statuses.len() > threads {
        p.lack("status lines of threads without a histogram column were ignored");
    }
    p.lack("no CPU numbers");
    let source = Source {
        tool: "cyclictest",
        warnings: status_behind_warning(&behind).into_iter().collect(),
        ..Source::default()
    };
    let mut run = build::assemble(super::Format::CyclictestHist, ctx, source, streams, p)?;
    super::plausible::warn_of_unit(&mut run, unit);
    Ok(run)
}

/// The values' unit: the status lines' if they show it (a unit given must agree), else
/// the unit given, else µs, noted as assumed.
fn unit(
    evidence: UnitEvidence,
    ctx: &ImportContext,
    p: &mut Provenance,
) -> Result<TimeUnit, ImportError> {
    let Some((unit, line)) = evidence.unit() else {
        return Ok(super::unit_or_default(ctx, p, "cyclictest"));
    };
    if ctx.unit.is_some_and(|given| given != unit) {
        let problem = format!(
            "the status lines show the values are in {} (cyclictest prints Act and Avg {} \
             wide{}): import it without a unit",
            unit.name(),
            if unit == TimeUnit::Nanoseconds { 8 } else { 5 },
            if unit == TimeUnit::Nanoseconds {
                " with -N"
            } else {
                " without -N"
            },
        );
        return Err(ImportError::at(&ctx.file, line, problem));
    }
    Ok(unit)
}

/// The warning that the histogram, not the last status line, gave the sample counts.
fn status_behind_warning(behind: &[StatusBehind]) -> Option<Warning> {
    if behind.is_empty() {
        return None;
    }
    let threads = behind
        .iter()
        .map(|b| {
            format!(
                "thread {} C:{} against {} samples",
                b.thread, b.status_cycles, b.samples
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(Warning::new(
        WarningCode::StatusBehindHistogram,
        format!(
            "cyclictest printed its last status line before its last cycles ({threads}): the \
             histogram is taken as the count; the status lines gave only the priority and \
             interval (save cyclictest's output with -q to leave them out)"
        ),
    ))
}

/// Reads the rows up to the footer's first line, which it returns.
fn read_rows<R: BufRead>(
    lines: &mut Lines<'_, R>,
    file: &str,
) -> Result<(Vec<Row>, (u64, String)), ImportError> {
    let mut rows: Vec<Row> = Vec::new();
    loop {
        let Some((n, line)) = lines.next_line()? else {
            return Err(truncated(file, lines.number()));
        };
        if line.starts_with('#') {
            return Ok((rows, (n, line.to_string())));
        }
        let mut fields = line.split([' ', '\t']).filter(|f| !f.is_empty());
        let bad_row = || {
            ImportError::at(
                file,
                n,
                format!(
                    "'{}' is not a histogram row (a bucket number, then one count per thread): \
                     the file is damaged",
                    shorten(line)
                ),
            )
        };
        let bucket: u64 = fields
            .next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(bad_row)?;
        let counts: Vec<u64> = fields
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad_row())?;
        if let Some(previous) = rows.last() {
            if counts.len() != previous.counts.len() {
                return Err(ImportError::at(
                    file,
                    n,
                    format!(
                        "row has {} counts where the rows before have {}: the file is damaged",
                        counts.len(),
                        previous.counts.len()
                    ),
                ));
            }
            if bucket <= previous.bucket {
                return Err(ImportError::at(
                    file,
                    n,
                    format!(
                        "bucket {bucket} comes after bucket {}: rows must ascend",
                        previous.bucket
                    ),
                ));
            }
        }
        if counts.is_empty() {
            return Err(bad_row());
        }
        rows.push(Row {
            line: n,
            bucket,
            counts,
        });
    }
}

/// Reads the footer from its first line to the end of the file.
fn read_footer<R: BufRead>(
    lines: &mut Lines<'_, R>,
    first: (u64, String),
    file: &str,
) -> Result<PerThread, ImportError> {
    let mut footer = Footer::default();
    let mut next = Some(first);
    while let Some((n, text)) = next.take() {
        if text == "# Histogram" {
            return Err(ImportError::at(
                file,
                n,
                "a second '# Histogram': import one cyclictest run per file",
            ));
        }
        let labels: [(&str, &mut Option<Figures>); 5] = [
            ("# Total:", &mut footer.total),
            ("# Min Latencies:", &mut footer.min),
            ("# Avg Latencies:", &mut footer.avg),
            ("# Max Latencies:", &mut footer.max),
            ("# Histogram Overflows:", &mut footer.overflows),
        ];
        let mut known = false;
        for (label, slot) in labels {
            if let Some(rest) = text.strip_prefix(label) {
                let values = rest
                    .split_whitespace()
                    .map(|v| v.parse::<u64>().map(|x| x as i64))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| {
                        ImportError::at(
                            file,
                            n,
                            format!(
                                "'{label}' holds something other than numbers: the file is damaged"
                            ),
                        )
                    })?;
                *slot = Some(Figures { line: n, values });
                known = true;
            }
        }
        // After the overflow counts come their cycle numbers, `# SMIs:` and status lines,
        // none of which is needed; before them, nothing else belongs.
        if !known && footer.overflows.is_none() && !text.is_empty() {
            return Err(ImportError::at(
                file,
                n,
                format!(
                    "unexpected line '{}' in the histogram's footer: the file is damaged",
                    shorten(&text)
                ),
            ));
        }
        next = lines.next_line()?.map(|(n, l)| (n, l.to_string()));
    }
    lines.check_complete()?;
    footer.per_thread(file, lines.number())
}

impl Histogram {
    /// One stream per thread, figures checked against the rows and each other.
    fn streams(
        &self,
        unit: TimeUnit,
        file: &str,
        p: &mut Provenance,
        behind: &mut Vec<StatusBehind>,
    ) -> Result<Vec<StreamSource>, ImportError> {
        self.check_rows(self.threads, file)?;
        if self.classic_range().is_none() {
            p.lack(
                "zero rows left out (newer cyclictest): the histogram's range (-h) is not known; \
                 overflowed samples are placed after the last row with samples",
            );
        }
        if unit == TimeUnit::Microseconds {
            p.lack(
                "values truncated to whole µs by cyclictest: buckets are recorded at their \
                 lower edge, so percentiles are to the 1 µs bucket width, lower edge",
            );
        }
        let mut out = Vec::with_capacity(self.threads);
        for t in 0..self.threads {
            let status = self.statuses.get(t).copied().flatten();
            let binned = self.thread_binned(t, unit.nanos(), file, p)?;
            if let Some(s) = status.filter(|s| s.cycles < binned.samples()) {
                behind.push(StatusBehind {
                    thread: t,
                    status_cycles: s.cycles,
                    samples: binned.samples(),
                });
            }
            out.push(StreamSource {
                probe: "timer",
                method: None,
                thread: t,
                cpu: None,
                policy: status.and_then(|s| policy(self.policy_name.as_deref(), s.priority)),
                period: status.map(|s| Nanos(s.interval_us * 1_000)),
                elapsed: None,
                values: Values::Binned(binned),
            });
        }
        Ok(out)
    }

    /// Thread `t`'s rows, overflows and figures (in units of `u` ns), checked.
    fn thread_binned(
        &self,
        t: usize,
        u: i64,
        file: &str,
        p: &mut Provenance,
    ) -> Result<Binned, ImportError> {
        let footer = &self.footer;
        let range = self.classic_range();
        let status = self.statuses.get(t).copied().flatten();
        let buckets: Vec<(Nanos, u64)> = self
            .rows
            .iter()
            .filter(|r| r.counts[t] > 0)
            .map(|r| (Nanos(r.bucket as i64 * u), r.counts[t]))
            .collect();
        let mut in_rows = 0u64;
        for row in self.rows.iter().filter(|r| r.counts[t] > 0) {
            in_rows = binned::sum_counts([in_rows, row.counts[t]])
                .map_err(|e| ImportError::at(file, row.line, format!("thread {t}: {e}")))?;
        }
        if let Some(total) = footer
            .total
            .as_ref()
            .filter(|total| total.values[t] as u64 != in_rows)
        {
            let problem = format!(
                "# Total says {} for thread {t} but its rows add up to {in_rows}: the file is damaged",
                total.values[t]
            );
            return Err(ImportError::at(file, total.line, problem));
        }
        let highest = buckets.last().map_or(0, |b| b.0 .0 + u);
        let mut b = Binned {
            histogram: true,
            buckets,
            width: Nanos(u),
            overflow: footer.overflows.values[t] as u64,
            overflow_from: range.map_or(Nanos(highest), |r| Nanos(r as i64 * u)),
            min: None,
            max: None,
            mean: None,
        };
        let samples = b.samples();
        // The last status line may lag (see the module's notes), never lead.
        if let Some(s) = status.filter(|s| s.cycles > samples) {
            let problem = format!(
                "thread {t}: the status line says C:{} but the histogram and overflows hold \
                 only {samples} samples: the file mixes two runs or is damaged",
                s.cycles
            );
            return Err(ImportError::at(file, footer.overflows.line, problem));
        }
        if samples == 0 {
            return Ok(b);
        }
        b.min = Some(Nanos(footer.min.values[t].saturating_mul(u)));
        b.max = Some(Nanos(footer.max.values[t].saturating_mul(u)));
        b.mean = Some(binned::truncated_mean(&b, footer.avg.values[t], u, p));
        b.check().map_err(|d| {
            let line = match d.figure() {
                Figure::Min => footer.min.line,
                Figure::Max => footer.max.line,
                Figure::Mean => footer.avg.line,
            };
            ImportError::at(
                file,
                line,
                format!("thread {t}: {d}: the file is inconsistent"),
            )
        })?;
        Ok(b)
    }

    /// The rows have one count per thread, plus a correct sum column with `-H`.
    fn check_rows(&self, threads: usize, file: &str) -> Result<(), ImportError> {
        let Some(first) = self.rows.first() else {
            return Ok(());
        };
        let columns = first.counts.len();
        if columns != threads && !(columns == threads + 1 && threads > 1) {
            return Err(ImportError::at(
                file,
                first.line,
                format!("rows have {columns} counts but the footer has {threads} threads: the file is damaged"),
            ));
        }
        if columns == threads + 1 {
            if let Some(row) = self.rows.iter().find(|r| {
                binned::sum_counts(r.counts[..threads].iter().copied()).ok()
                    != Some(r.counts[threads])
            }) {
                return Err(ImportError::at(
                    file,
                    row.line,
                    format!("the sum column ({}) is not the sum of the threads' counts: the file is damaged", row.counts[threads]),
                ));
            }
        }
        Ok(())
    }

    /// The range of a classic-layout histogram (every row from 0 printed); `None` when
    /// rows are left out.
    fn classic_range(&self) -> Option<u64> {
        let contiguous = self
            .rows
            .iter()
            .enumerate()
            .all(|(i, r)| r.bucket == i as u64);
        (contiguous && !self.rows.is_empty()).then_some(self.rows.len() as u64)
    }
}

/// The policy of a status line's priority, with the `policy:` line's name.
fn policy(name: Option<&str>, priority: i32) -> Option<SchedSpec> {
    match (name?, priority) {
        ("fifo", p) if p > 0 => Some(SchedSpec::Fifo { priority: p }),
        ("rr", p) if p > 0 => Some(SchedSpec::Rr { priority: p }),
        ("other", _) => Some(SchedSpec::Other { nice: 0 }),
        ("batch", _) => Some(SchedSpec::Batch { nice: 0 }),
        ("idle", _) => Some(SchedSpec::Idle),
        _ => None,
    }
}

/// Reads the status output cyclictest prints before the histogram: `policy: fifo: ...`
/// and `T: 0 ( 1234) P:95 I:1000 C:    500 Min: ...`; the last one of each thread counts.
/// Returns, for a thread's status line, the unit its field widths show (if they do).
fn read_status_line(
    line: &str,
    policy_name: &mut Option<String>,
    statuses: &mut Vec<Option<Status>>,
) -> Option<Option<TimeUnit>> {
    let line = status::without_cursor_moves(line);
    if let Some(rest) = line.strip_prefix("policy: ") {
        *policy_name = rest.split(':').next().map(|s| s.trim().to_string());
        return None;
    }
    let s = Status::parse(line)?;
    if statuses.len() <= s.thread {
        statuses.resize(s.thread + 1, None);
    }
    statuses[s.thread] = Some(s);
    Some(s.unit)
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

fn truncated(file: &str, line: u64) -> ImportError {
    ImportError::at(
        file,
        line.max(1),
        "the file ends before the histogram's '# Min/Avg/Max Latencies' and '# Histogram \
         Overflows' lines: it is truncated; take it again from cyclictest",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let (mut name, mut statuses) = (None, Vec::new());
        read_status_line(
            "\x1b[4Apolicy: fifo: loadavg: 0.43 0.30",
            &mut name,
            &mut statuses,
        );
        read_status_line(
            "T: 1 (24315) P:95 I:1500 C:    300 Min:      2 Act:    6",
            &mut name,
            &mut statuses,
        );
        assert_eq!(name.as_deref(), Some("fifo"));
        assert_eq!(
            statuses,
            [
                None,
                Some(Status {
                    thread: 1,
                    priority: 95,
                    interval_us: 1_500,
                    cycles: 300,
                    max: None,
                    unit: None,
                })
            ]
        );
    }
}
