//! `rtla timerlat hist` text, as `timerlat_print_stats` in the kernel's
//! `tools/tracing/rtla/src/timerlat_hist.c` prints it:
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)          (or "nanoseconds (ns)" with -n)
//! # Duration:   0 00:10:00                  ("%3d %02d:%02d:%02d", days h:m:s)
//! Index   IRQ-000   Thr-000   Usr-000 ...   (per CPU with samples; Usr with -u/-U)
//! 0        276489         0 ...             ("%-6d" bucket × bucket size, "%9d " each;
//!                                            rows all zero left out unless --with-zeros)
//! over:         0 ...                       (samples beyond the last bucket)
//! count:   600002 ...
//! min:          0 ...                       ("-" for a column without samples)
//! avg:          0 ...                       (sum / count, truncated)
//! max:         16 ...
//! ALL:        IRQ       Thr ...             (newer rtla: totals over all CPUs)
//! ```
//!
//! then, when the trace buffer dropped events, `N (x%) events missed, results might not
//! be accurate`, and after a stop threshold `rtla timerlat hit stop tracing` and the
//! auto-analysis. Latencies are the tracer's nanoseconds divided by 1000 (truncated)
//! unless `-n`. `--no-header` and `--no-index` output cannot be read (the columns and
//! buckets are not named); `--no-summary` output can, without minimum, mean and maximum.

use super::binned::{self, Binned, Figure};
use super::build::{self, Source, StreamSource, Values};
use super::lines::Lines;
use super::provenance::Provenance;
use super::{ImportContext, ImportError, TimeUnit};
use latlab_model::run::Run;
use latlab_model::Nanos;
use std::collections::BTreeMap;
use std::io::BufRead;

/// The summary lines, in the order rtla prints them.
const LABELS: [&str; 5] = ["over:", "count:", "min:", "avg:", "max:"];
const OVER: usize = 0;
const COUNT: usize = 1;
const MIN: usize = 2;
const AVG: usize = 3;
const MAX: usize = 4;

/// One histogram column: its context (probe) and CPU.
struct Column {
    probe: &'static str,
    cpu: usize,
}

/// What the lines before the histogram say.
struct Header {
    unit: TimeUnit,
    elapsed: Option<Nanos>,
    columns: Vec<Column>,
}

/// A summary line: its number and one value per column (`None` for `-`).
type SummaryLine = (u64, Vec<Option<i64>>);

/// The histogram and its summary.
struct Table {
    /// (bucket index × bucket size, counts) of each row printed.
    rows: Vec<(i64, Vec<u64>)>,
    /// The summary lines read, indexed as [`LABELS`].
    summary: [Option<SummaryLine>; 5],
    /// rtla said it stopped at its threshold.
    stopped: bool,
}

/// Imports `rtla timerlat hist` output.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let file = ctx.file.as_str();
    let mut lines = Lines::new(input, file);
    let mut p = Provenance::default();
    let header = read_header(&mut lines, ctx)?;
    let table = read_table(&mut lines, header.columns.len(), file, &mut p)?;
    let u = header.unit.nanos();
    let bucket = bucket_width(&table, u, &mut p);
    let contiguous = table.rows.first().is_some_and(|r| r.0 == 0)
        && table.rows.windows(2).all(|w| w[1].0 - w[0].0 == bucket);
    if !contiguous {
        p.lack(
            "rows without samples left out: the histogram's range (-E) is not known; \
             samples over it are placed after the last row with samples",
        );
    }
    let mut streams = Vec::with_capacity(header.columns.len());
    let mut per_probe = BTreeMap::<&str, usize>::new();
    for (c, column) in header.columns.iter().enumerate() {
        let mut b = column_binned(&table, c, bucket, u, file)?;
        match &table.summary[COUNT] {
            Some(_) => add_summary(&mut b, &table, c, u, file, &mut p)?,
            None => p.lack("no summary (--no-summary): no minimum, mean or maximum"),
        }
        // Every sample is at least the column's minimum, the overflowed ones too (a
        // timer's latency is never negative): the tighter of the two floors.
        if let Some(min) = b.min {
            b.overflow_from = b.overflow_from.max(min);
        }
        let thread = per_probe.entry(column.probe).or_insert(0);
        streams.push(StreamSource {
            probe: column.probe,
            method: Some("timerlat"),
            thread: *thread,
            cpu: Some(column.cpu),
            policy: None,
            period: None,
            elapsed: header.elapsed,
            values: Values::Binned(b),
        });
        *thread += 1;
    }
    if header.unit == TimeUnit::Microseconds {
        p.lack(
            "values truncated to whole µs by rtla: buckets are recorded at their lower \
             edge, so percentiles are to the bucket width, lower edge",
        );
    }
    if header.elapsed.is_some() {
        p.lack(
            "the duration to the whole second only (rtla prints D HH:MM:SS): the span, and \
             what is per second, are known to ±1 s",
        );
    }
    let source = Source {
        tool: "rtla",
        elapsed: header.elapsed,
        interrupted: table.stopped,
        ..Source::default()
    };
    build::assemble(super::Format::RtlaTimerlatHist, ctx, source, streams, p)
}

/// Reads up to the `Index` line.
fn read_header<R: BufRead>(
    lines: &mut Lines<'_, R>,
    ctx: &ImportContext,
) -> Result<Header, ImportError> {
    let file = ctx.file.as_str();
    let (mut unit, mut elapsed) = (None, None);
    loop {
        let Some((n, line)) = lines.next_line()? else {
            return Err(ImportError::at(
                file,
                lines.number().max(1),
                "no 'Index' header line: not rtla timerlat hist output (or made with \
                 --no-header or --no-index, which cannot be read: run rtla without them)",
            ));
        };
        if let Some(rest) = line.strip_prefix("# Time unit is ") {
            unit = Some(match rest.trim() {
                "microseconds (us)" => TimeUnit::Microseconds,
                "nanoseconds (ns)" => TimeUnit::Nanoseconds,
                other => {
                    return Err(ImportError::at(
                        file,
                        n,
                        format!("unknown time unit '{other}'"),
                    ))
                }
            });
        } else if let Some(rest) = line.strip_prefix("# Duration:") {
            let d = duration(rest).ok_or_else(|| {
                ImportError::at(
                    file,
                    n,
                    "the duration is not 'D HH:MM:SS': the file is damaged",
                )
            })?;
            elapsed = Some(d);
        } else if line.starts_with("Index") {
            let columns = columns(line).map_err(|e| ImportError::at(file, n, e))?;
            let unit = match (unit, ctx.unit) {
                (Some(u), Some(given)) if u != given => {
                    let problem = format!(
                        "the file says its unit is {}: import it without a unit",
                        u.name()
                    );
                    return Err(ImportError::whole(file, problem));
                }
                (Some(u), _) => u,
                (None, _) => {
                    let problem =
                        "no '# Time unit is ...' line before the header: the file is damaged";
                    return Err(ImportError::at(file, n, problem));
                }
            };
            return Ok(Header {
                unit,
                elapsed,
                columns,
            });
        }
    }
}

/// Reads the rows, the summary lines in their order, and what follows them.
fn read_table<R: BufRead>(
    lines: &mut Lines<'_, R>,
    width: usize,
    file: &str,
    p: &mut Provenance,
) -> Result<Table, ImportError> {
    let mut table = Table {
        rows: Vec::new(),
        summary: Default::default(),
        stopped: false,
    };
    let mut next = OVER; // the summary line expected next
    while let Some((n, line)) = lines.next_line()? {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if next == LABELS.len() || (next > OVER && !LABELS.contains(&first)) {
            // After the summary: the all-CPU totals, missed events, auto-analysis.
            table.stopped |= note_trailer(line, p);
            while let Some((_, line)) = lines.next_line()? {
                table.stopped |= note_trailer(line, p);
            }
            break;
        }
        let values: Vec<&str> = fields.collect();
        if values.len() != width {
            let problem = format!(
                "{} values where the header names {width} columns: the file is damaged",
                values.len()
            );
            return Err(ImportError::at(file, n, problem));
        }
        if let Some(k) = LABELS.iter().position(|l| *l == first) {
            if k != next {
                let problem = format!(
                    "'{first}' out of place (expected '{}'): the file is damaged",
                    LABELS[next]
                );
                return Err(ImportError::at(file, n, problem));
            }
            let parsed = values
                .iter()
                .map(|v| {
                    if *v == "-" {
                        Ok(None)
                    } else {
                        v.parse::<i64>().map(Some)
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    ImportError::at(
                        file,
                        n,
                        format!(
                            "'{first}' holds something other than numbers: the file is damaged"
                        ),
                    )
                })?;
            table.summary[k] = Some((n, parsed));
            next += 1;
            continue;
        }
        let index: i64 = first.parse().map_err(|_| {
            ImportError::at(
                file,
                n,
                format!("'{first}' is not a bucket index: the file is damaged"),
            )
        })?;
        let counts = values
            .iter()
            .map(|v| v.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                ImportError::at(file, n, "a count is not a number: the file is damaged")
            })?;
        if table.rows.last().is_some_and(|r| r.0 >= index) {
            return Err(ImportError::at(
                file,
                n,
                "bucket indices must ascend: the file is damaged",
            ));
        }
        table.rows.push((index, counts));
    }
    lines.check_complete()?;
    if next == OVER {
        let problem =
            "the file ends before the 'over:' line: it is truncated; take it again from rtla";
        return Err(ImportError::at(file, lines.number().max(1), problem));
    }
    if next > COUNT && next < LABELS.len() {
        let problem = "the summary (count, min, avg, max) is incomplete: the file is truncated";
        return Err(ImportError::at(file, lines.number(), problem));
    }
    Ok(table)
}

/// Column `c`'s buckets and overflows.
fn column_binned(
    table: &Table,
    c: usize,
    bucket: i64,
    u: i64,
    file: &str,
) -> Result<Binned, ImportError> {
    let buckets: Vec<(Nanos, u64)> = table
        .rows
        .iter()
        .filter(|r| r.1[c] > 0)
        .map(|r| (Nanos(r.0 * u), r.1[c]))
        .collect();
    let (over_line, over) = table.summary[OVER]
        .as_ref()
        .expect("read_table requires it");
    let overflow = over[c]
        .and_then(|o| u64::try_from(o).ok())
        .ok_or_else(|| ImportError::at(file, *over_line, "an 'over:' value is not a count"))?;
    // Every column shares the histogram's range, which ends past the last row printed
    // for any of them (a row is left out only when every column's count there is 0),
    // and holds a bucket at least.
    let range_end = table.rows.last().map_or(bucket, |r| r.0 + bucket);
    Ok(Binned {
        histogram: true,
        buckets,
        width: Nanos(bucket * u),
        overflow,
        overflow_from: Nanos(range_end * u),
        min: None,
        max: None,
        mean: None,
    })
}

/// Adds column `c`'s count, minimum, mean and maximum, checked against its buckets.
fn add_summary(
    b: &mut Binned,
    table: &Table,
    c: usize,
    u: i64,
    file: &str,
    p: &mut Provenance,
) -> Result<(), ImportError> {
    let get = |k: usize| {
        table.summary[k]
            .as_ref()
            .map(|s| (s.0, s.1[c]))
            .expect("read_table checks the summary is whole")
    };
    let (count_line, count) = get(COUNT);
    let count = count
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| ImportError::at(file, count_line, "a 'count:' value is not a count"))?;
    if count != b.samples() {
        let problem = format!(
            "column {c} counts {count} samples but its rows and 'over:' hold {}: the file is damaged",
            b.samples()
        );
        return Err(ImportError::at(file, count_line, problem));
    }
    if count == 0 {
        return Ok(());
    }
    let figure = |k: usize| -> Result<i64, ImportError> {
        let (line, v) = get(k);
        v.ok_or_else(|| {
            ImportError::at(
                file,
                line,
                format!("column {c} has samples but no '{}'", LABELS[k]),
            )
        })
    };
    let (min, avg, max) = (figure(MIN)?, figure(AVG)?, figure(MAX)?);
    b.min = Some(Nanos(min * u));
    b.max = Some(Nanos(max * u));
    b.mean = Some(binned::truncated_mean(b, avg, u, p));
    b.check().map_err(|d| {
        let line = get(match d.figure() {
            Figure::Min => MIN,
            Figure::Max => MAX,
            Figure::Mean => AVG,
        })
        .0;
        ImportError::at(
            file,
            line,
            format!("column {c}: {d}: the file is inconsistent"),
        )
    })?;
    Ok(())
}

/// Notes what rtla says after the histogram that bears on the results; true when it
/// says it stopped at its threshold (`rtla timerlat hit stop tracing`).
fn note_trailer(line: &str, p: &mut Provenance) -> bool {
    if line.contains("events missed") {
        p.lack(format!("rtla reported: {}", line.trim()));
    }
    line.contains("hit stop tracing")
}

/// An `Index` line rtla would not have printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum HeaderError {
    #[error("'{0}' is not a column name (IRQ-000, Thr-000, Usr-000)")]
    NotAColumn(String),
    #[error("'{0}' does not end in a CPU number")]
    NoCpu(String),
    #[error("the header names no column: rtla measured nothing")]
    NoColumn,
}

/// The columns named by the `Index` line.
fn columns(line: &str) -> Result<Vec<Column>, HeaderError> {
    let columns = line
        .split_whitespace()
        .skip(1)
        .map(|name| {
            let not_a_column = || HeaderError::NotAColumn(name.to_string());
            let (kind, cpu) = name.split_once('-').ok_or_else(not_a_column)?;
            let probe = match kind {
                "IRQ" => "timerlat-irq",
                "Thr" => "timerlat-thread",
                "Usr" => "timerlat-user",
                _ => return Err(not_a_column()),
            };
            let cpu = cpu
                .parse()
                .map_err(|_| HeaderError::NoCpu(name.to_string()))?;
            Ok(Column { probe, cpu })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if columns.is_empty() {
        return Err(HeaderError::NoColumn);
    }
    Ok(columns)
}

/// `  0 00:10:00` (days, then h:m:s).
fn duration(text: &str) -> Option<Nanos> {
    let mut parts = text.split_whitespace();
    let days: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|f| f.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    (parts.next().is_none() && hms.next().is_none())
        .then(|| Nanos::from_secs(((days * 24 + h) * 60 + m) * 60 + s))
}

/// The bucket width in units (rtla prints bucket × bucket size, not the size): 1, its
/// default, unless the rows' indices share a larger divisor and some minimum or maximum
/// lies off its row, which only wider buckets allow.
fn bucket_width(table: &Table, u: i64, p: &mut Provenance) -> i64 {
    fn gcd(a: i64, b: i64) -> i64 {
        if b == 0 {
            a.abs()
        } else {
            gcd(b, a % b)
        }
    }
    let divisor = table.rows.iter().fold(0, |g, r| gcd(g, r.0));
    if divisor <= 1 {
        return 1;
    }
    let off_row = |c: usize, k: usize, row: Option<&(i64, Vec<u64>)>| {
        let figure = table.summary[k]
            .as_ref()
            .and_then(|s| s.1.get(c).copied().flatten());
        matches!((figure, row), (Some(v), Some(r)) if v != r.0)
    };
    let columns = table.rows.first().map_or(0, |r| r.1.len());
    let wider = (0..columns).any(|c| {
        let lowest = table.rows.iter().find(|r| r.1[c] > 0);
        let highest = table.rows.iter().rev().find(|r| r.1[c] > 0);
        let overflowed = table.summary[OVER]
            .as_ref()
            .and_then(|s| s.1[c])
            .is_some_and(|o| o > 0);
        off_row(c, MIN, lowest) || (!overflowed && off_row(c, MAX, highest))
    });
    if wider {
        p.lack(format!(
            "bucket width read as {} from the row indices (rtla does not print it)",
            Nanos(divisor * u)
        ));
        divisor
    } else {
        p.lack(format!(
            "bucket width taken as {}, rtla's default: the row indices are multiples of {}, \
             but every minimum and maximum lies on its row",
            Nanos(u),
            Nanos(divisor * u)
        ));
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("   0 00:10:00"), Some(Nanos::from_secs(600)));
        assert_eq!(duration(" 1 01:00:01"), Some(Nanos::from_secs(90_001)));
        assert_eq!(duration("ten"), None);
    }

    #[test]
    fn bucket_widths() {
        let table = |rows: Vec<(i64, Vec<u64>)>, min: i64, max: i64| Table {
            rows,
            summary: [
                Some((0, vec![Some(0)])),
                None,
                Some((0, vec![Some(min)])),
                None,
                Some((0, vec![Some(max)])),
            ],
            stopped: false,
        };
        let mut p = Provenance::default();
        assert_eq!(
            bucket_width(&table(vec![(0, vec![1]), (1, vec![1])], 0, 1), 1, &mut p),
            1
        );
        assert_eq!(
            bucket_width(
                &table(vec![(10, vec![1]), (30, vec![1])], 10, 30),
                1,
                &mut p
            ),
            1
        );
        assert_eq!(
            bucket_width(
                &table(vec![(10, vec![1]), (30, vec![1])], 12, 30),
                1,
                &mut p
            ),
            10
        );
        assert_eq!(bucket_width(&table(vec![(5, vec![2])], 5, 5), 1, &mut p), 1);
    }
}
