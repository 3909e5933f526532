//! `cyclictest -v` logs: every sample, one line each, `%8d:%8lu:%8ld` (thread index,
//! cycle, value; `print_stat` in rt-tests `src/cyclictest/cyclictest.c`), in µs, or ns
//! with `-N` (the log does not say: [`ImportContext::unit`]). With `--smi` a second
//! number follows the value. Before the samples cyclictest may print `# ...` comments,
//! `Thread N Interval: I` and `Thread N using cpu C.`; after them, with `-h`, the
//! histogram text, and with `-q` each thread's status line (`T: 0 (...) ... C: 300 ...`).
//! The status counts every cycle a thread measured, and the log may hold fewer: the
//! samples are printed from a buffer, and printing stops when cyclictest shuts down (with
//! `-l`, when the first thread has its loops). The Run then carries a warning.
//!
//! Logs reach gigabytes, so this parser works on the bytes in the reader's buffer, with
//! no allocation per line: give it a large buffer (`BufReader::with_capacity(1 << 20, ..)`).
//!
//! What the log cannot tell is not made up:
//!
//! * cyclictest prints `Thread N Interval:` after adding the thread distance (`-d`) for
//!   the next thread, except with `-h`, so the printed value is thread N+1's interval.
//!   With `-h` (shown by the histogram after the samples) the values are the intervals;
//!   with two threads or more the distance and every thread's interval follow; a single
//!   thread's period is ambiguous and taken from [`ImportContext::period`], or left
//!   unknown.
//! * Cycle numbers count wake-ups, not periods: cyclictest skips the deadlines a late
//!   wake passed without counting them, so they leave no gap. A gap in the cycle numbers
//!   means lines are absent from the log (oscilloscope mode `-o`, or lost lines); the
//!   samples are the lines present and the absent cycles are reported.
//! * Sample times (timeline, spikes) are cycle × period, which is exact up to the first
//!   wake later than a period.

use super::build::{self, Exact, Source, StreamSource, Values};
use super::cyclictest_status::{self as status, Status};
use super::provenance::Provenance;
use super::{ImportContext, ImportError, TimeUnit};
use latlab_model::hist::LatencyHistogram;
use latlab_model::run::{ExactSums, Run, Spike, Spikes, Timeline, Warning};
use latlab_model::seal::WarningCode;
use latlab_model::Nanos;
use std::io::BufRead;

/// Most threads a log may name (cyclictest allows one per CPU).
const MAX_THREADS: usize = 4_096;
/// Largest samples kept with their time, per thread.
const TOP_SPIKES: usize = 10;
/// Timeline width before neighbours are merged (as latlab's own runs).
const TIMELINE_INTERVALS: usize = 4_096;
/// Cycles per timeline interval to begin with (1 s at cyclictest's default 1 ms).
const TIMELINE_CYCLES: u64 = 1_000;
/// Longest line accepted.
const MAX_LINE: usize = 1 << 20;

/// True when `line` (without its line ending) is a sample line.
pub(super) fn is_sample_line(line: &[u8]) -> bool {
    matches!(parse_sample(line), Some(Some(_)))
}

/// A sample line's thread, cycle and value; `Some(None)` for a line that is not a sample
/// line but may appear in a log (comments, `Thread N ...`, blank); `None` for anything else.
#[inline]
fn parse_sample(line: &[u8]) -> Option<Option<(usize, u64, i64)>> {
    let mut i = 0;
    let skip_spaces = |i: &mut usize| {
        while *i < line.len() && line[*i] == b' ' {
            *i += 1;
        }
    };
    let number = |i: &mut usize| -> Option<u64> {
        let start = *i;
        let mut v: u64 = 0;
        while *i < line.len() && line[*i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(line[*i] - b'0'))?;
            *i += 1;
        }
        (*i > start).then_some(v)
    };
    skip_spaces(&mut i);
    if i == line.len() || line[i] == b'#' || line[i..].starts_with(b"Thread ") {
        return Some(None);
    }
    let thread = number(&mut i)?;
    if line.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    skip_spaces(&mut i);
    let cycle = number(&mut i)?;
    if line.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    skip_spaces(&mut i);
    let negative = line.get(i) == Some(&b'-');
    if negative {
        i += 1;
    }
    let magnitude = number(&mut i)?;
    let value = if negative {
        0i64.checked_sub_unsigned(magnitude)?
    } else {
        i64::try_from(magnitude).ok()?
    };
    // `--smi`: the SMI count follows (`%8ld%8ld`).
    skip_spaces(&mut i);
    if i < line.len() {
        number(&mut i)?;
        skip_spaces(&mut i);
    }
    if i != line.len() {
        return None;
    }
    Some(Some((usize::try_from(thread).ok()?, cycle, value)))
}

/// What is known of a thread before its samples.
#[derive(Default, Clone, Copy)]
struct Announced {
    printed_interval_us: Option<i64>,
    cpu: Option<usize>,
}

/// One thread's samples as they stream by. Times are kept as cycle numbers until the
/// period is settled at the end (whether `-h` was given shows only after the samples).
struct ThreadState {
    histogram: LatencyHistogram,
    sums: ExactSums,
    first: Option<Nanos>,
    early_wakes: u64,
    next_cycle: u64,
    first_cycle: Option<u64>,
    absent: u64,
    /// The largest samples: (value in ns, cycle), and the smallest of them once full.
    top: Vec<(i64, u64)>,
    top_floor: i64,
    /// Timeline in cycles: per interval of `cycles_per_interval` cycles, count and max.
    cycles_per_interval: u64,
    counts: Vec<u64>,
    maxima: Vec<Option<i64>>,
}

impl ThreadState {
    fn new() -> ThreadState {
        ThreadState {
            histogram: LatencyHistogram::new(),
            sums: ExactSums::default(),
            first: None,
            early_wakes: 0,
            next_cycle: 0,
            first_cycle: None,
            absent: 0,
            top: Vec::with_capacity(TOP_SPIKES),
            top_floor: i64::MIN,
            cycles_per_interval: TIMELINE_CYCLES,
            counts: Vec::new(),
            maxima: Vec::new(),
        }
    }

    /// Adds one sample of cycle `cycle`, `value` in ns.
    #[inline]
    fn add(&mut self, cycle: u64, value: i64) -> Result<(), LogError> {
        match self.first_cycle {
            None => self.first_cycle = Some(cycle),
            Some(_) if cycle < self.next_cycle => {
                return Err(LogError::CycleBack {
                    cycle,
                    previous: self.next_cycle - 1,
                })
            }
            Some(_) => self.absent += cycle - self.next_cycle,
        }
        self.next_cycle = cycle + 1;
        self.sums.add(value);
        self.histogram.record(value);
        if self.first.is_none() {
            self.first = Some(Nanos(value));
        }
        if value < 0 {
            self.early_wakes += 1;
        }
        self.keep_spike(value, cycle);
        self.timeline_add(cycle, value);
        Ok(())
    }

    #[inline]
    fn keep_spike(&mut self, value: i64, cycle: u64) {
        if self.top.len() < TOP_SPIKES {
            self.top.push((value, cycle));
            self.top_floor = self.top.iter().map(|s| s.0).min().unwrap_or(i64::MIN);
            return;
        }
        // Most samples are not among the largest: one comparison settles them.
        if value <= self.top_floor {
            return;
        }
        // Replace the smallest kept one (of equals, the latest goes).
        let (i, smallest) = self
            .top
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| (s.0, std::cmp::Reverse(s.1)))
            .map(|(i, s)| (i, s.0))
            .expect("the list is full");
        if value > smallest {
            self.top[i] = (value, cycle);
            self.top_floor = self.top.iter().map(|s| s.0).min().unwrap_or(i64::MIN);
        }
    }

    #[inline]
    fn timeline_add(&mut self, cycle: u64, value: i64) {
        let mut index = (cycle / self.cycles_per_interval) as usize;
        while index >= TIMELINE_INTERVALS {
            // Merge neighbours and double the width, as latlab's own timeline does.
            let merged = self.counts.len().div_ceil(2);
            for j in 0..merged {
                let (a, b) = (2 * j, 2 * j + 1);
                self.counts[j] = self.counts[a] + self.counts.get(b).copied().unwrap_or(0);
                self.maxima[j] = self.maxima[a].max(self.maxima.get(b).copied().flatten());
            }
            self.counts.truncate(merged);
            self.maxima.truncate(merged);
            self.cycles_per_interval *= 2;
            index = (cycle / self.cycles_per_interval) as usize;
        }
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
            self.maxima.resize(index + 1, None);
        }
        self.counts[index] += 1;
        let slot = &mut self.maxima[index];
        if slot.is_none_or(|m| value > m) {
            *slot = Some(value);
        }
    }
}

/// Imports a cyclictest `-v` log.
pub(super) fn import(input: impl BufRead, ctx: &ImportContext) -> Result<Run, ImportError> {
    let file = ctx.file.as_str();
    let mut p = Provenance::default();
    let unit = super::unit_or_default(ctx, &mut p, "cyclictest");
    let log = read_log(input, unit, file)?;
    if log.threads.iter().all(|t| t.sums.count == 0) {
        return Err(ImportError::whole(
            file,
            "no sample lines (thread:cycle:value): this is not a cyclictest -v log, or \
             cyclictest measured nothing",
        ));
    }
    if log.histogram_follows {
        p.lack(
            "the histogram printed after the samples was not read (the samples hold the same data)",
        );
    }
    let count = log.threads.len().max(log.announced.len());
    let periods =
        periods(&log, count, ctx.period, &mut p).map_err(|e| ImportError::whole(file, e))?;
    let unlogged = unlogged_warning(&log, unit);
    let streams = finish(log, &periods, count, unit, &mut p);
    let source = Source {
        tool: "cyclictest",
        warnings: unlogged.into_iter().collect(),
        ..Source::default()
    };
    let mut run = build::assemble(super::Format::CyclictestVerbose, ctx, source, streams, p)?;
    super::plausible::warn_of_unit(&mut run, unit);
    Ok(run)
}

/// Reads every line from the reader's buffer; a line split between two fills is
/// gathered in a small carry buffer, the only copy made.
fn read_log(mut reader: impl BufRead, unit: TimeUnit, file: &str) -> Result<Log, ImportError> {
    let mut log = Log::default();
    let mut carry: Vec<u8> = Vec::new();
    let mut line_number: u64 = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ImportError::io(file, Some(line_number + 1), e)),
        };
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut start = 0;
        while let Some(offset) = buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            line_number += 1;
            let line: &[u8] = if carry.is_empty() {
                &buf[start..end]
            } else {
                carry.extend_from_slice(&buf[start..end]);
                &carry
            };
            let outcome = log.line(line.strip_suffix(b"\r").unwrap_or(line), unit);
            carry.clear();
            outcome.map_err(|problem| ImportError::at(file, line_number, problem))?;
            start = end + 1;
        }
        if carry.len() + (len - start) > MAX_LINE {
            let problem = "line longer than 1 MiB: this is not a cyclictest -v log";
            return Err(ImportError::at(file, line_number + 1, problem));
        }
        carry.extend_from_slice(&buf[start..]);
        reader.consume(len);
    }
    if !carry.is_empty() {
        return Err(ImportError::at(
            file,
            line_number + 1,
            "the last line has no line ending: the log is truncated (cyclictest was killed, or \
             the copy is cut); take it again, or drop its last line",
        ));
    }
    Ok(log)
}

/// The log read so far.
#[derive(Default)]
struct Log {
    announced: Vec<Announced>,
    threads: Vec<ThreadState>,
    /// The samples have begun.
    sampling: bool,
    /// A `# Histogram` section began after the samples (so cyclictest ran with `-h`).
    histogram_follows: bool,
    /// The status line of each thread printed after the samples (`-q`).
    statuses: Vec<Option<Status>>,
}

impl Log {
    /// Takes one line.
    #[inline]
    fn line(&mut self, line: &[u8], unit: TimeUnit) -> Result<(), LogError> {
        if self.histogram_follows {
            // The histogram text after the samples holds the same data.
            return Ok(());
        }
        match parse_sample(line) {
            Some(Some((thread, cycle, value))) => {
                if thread >= MAX_THREADS {
                    return Err(LogError::TooManyThreads(thread));
                }
                self.sampling = true;
                if thread >= self.threads.len() {
                    self.threads.resize_with(thread + 1, ThreadState::new);
                }
                let ns = value
                    .checked_mul(unit.nanos())
                    .ok_or(LogError::OutOfRange)?;
                self.threads[thread]
                    .add(cycle, ns)
                    .map_err(|e| LogError::Thread(thread, Box::new(e)))
            }
            Some(None) if line.starts_with(b"# Histogram") => {
                self.histogram_follows = true;
                Ok(())
            }
            Some(None) => {
                if !self.sampling {
                    announce(line, &mut self.announced);
                }
                Ok(())
            }
            // Before the samples cyclictest prints lines of its own (`Max CPUs = 2`).
            None if !self.sampling
                && !line
                    .first()
                    .is_some_and(|b| b.is_ascii_digit() || *b == b' ') =>
            {
                Ok(())
            }
            None if self.sampling && line.starts_with(b"T:") => {
                let found = std::str::from_utf8(line)
                    .ok()
                    .and_then(|l| Status::parse(status::without_cursor_moves(l)));
                let s = found.ok_or_else(|| LogError::NotASample(lossy_start(line)))?;
                if self.statuses.len() <= s.thread {
                    self.statuses.resize(s.thread + 1, None);
                }
                self.statuses[s.thread] = Some(s);
                Ok(())
            }
            None => Err(LogError::NotASample(
                String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned(),
            )),
        }
    }
}

/// The start of a line, for a message.
fn lossy_start(line: &[u8]) -> String {
    String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned()
}

/// The warning that cyclictest measured cycles its log does not hold, from the status
/// lines printed after the samples.
fn unlogged_warning(log: &Log, unit: TimeUnit) -> Option<Warning> {
    let mut threads = Vec::new();
    for (t, s) in log.statuses.iter().enumerate() {
        let Some(s) = s else { continue };
        let logged = log.threads.get(t).map_or(0, |state| state.sums.count);
        if s.cycles <= logged {
            continue;
        }
        let mut said = format!("thread {t}: {} cycles, {logged} logged", s.cycles);
        let logged_max = log
            .threads
            .get(t)
            .filter(|_| logged > 0)
            .map(|st| st.sums.max);
        if let Some(max) = s.max.and_then(|m| m.checked_mul(unit.nanos())) {
            if logged_max.is_none_or(|m| max > m) {
                said += &format!(", its maximum {} not among them", Nanos(max));
            }
        }
        threads.push(said);
    }
    (!threads.is_empty()).then(|| {
        Warning::new(
            WarningCode::SamplesNotLogged,
            format!(
                "cyclictest measured more cycles than its -v log holds ({}): it stopped printing \
             samples before its threads stopped; the figures are the logged samples'",
                threads.join("; ")
            ),
        )
    })
}

/// What in a log cyclictest -v would not have written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum LogError {
    #[error("cycle {cycle} comes after cycle {previous}: cycles must ascend (two logs mixed?)")]
    CycleBack { cycle: u64, previous: u64 },
    #[error("thread {0}: more than {MAX_THREADS} threads; this is not a cyclictest -v log")]
    TooManyThreads(usize),
    #[error("value out of range of 64-bit nanoseconds: the log is damaged")]
    OutOfRange,
    #[error("thread {0}: {1}")]
    Thread(usize, Box<LogError>),
    #[error(
        "'{0}' is not a sample line (thread:cycle:value): the log is damaged, or not a \
         cyclictest -v log"
    )]
    NotASample(String),
    #[error("the log gives thread 0 a period of {logged}, not the {given} given: import without the period")]
    Period { logged: Nanos, given: Nanos },
}

/// Reads `Thread N Interval: I` and `Thread N using cpu C.`.
fn announce(line: &[u8], announced: &mut Vec<Announced>) {
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    let Some(rest) = text.trim().strip_prefix("Thread ") else {
        return;
    };
    let mut words = rest.split_whitespace();
    let Some(thread) = words
        .next()
        .and_then(|t| t.parse::<usize>().ok())
        .filter(|&t| t < MAX_THREADS)
    else {
        return;
    };
    if announced.len() <= thread {
        announced.resize(thread + 1, Announced::default());
    }
    match (words.next(), words.next(), words.next()) {
        (Some("Interval:"), Some(i), None) => {
            announced[thread].printed_interval_us = i.parse().ok()
        }
        (Some("using"), Some("cpu"), Some(c)) => {
            announced[thread].cpu = c.trim_end_matches('.').parse().ok()
        }
        _ => {}
    }
}

/// Each thread's period in ns (see the module's notes), or an error when the period given
/// contradicts the log.
fn periods(
    log: &Log,
    count: usize,
    given: Option<Nanos>,
    p: &mut Provenance,
) -> Result<Vec<Option<i64>>, LogError> {
    let printed: Option<Vec<i64>> = (0..count)
        .map(|t| log.announced.get(t).and_then(|a| a.printed_interval_us))
        .collect();
    let derived: Option<Vec<i64>> = match printed.as_deref() {
        // With -h the intervals are printed as they are.
        Some(list) if log.histogram_follows && !list.is_empty() => Some(list.to_vec()),
        Some(list @ [a, b, ..]) => {
            let distance = b - a;
            let regular = list.windows(2).all(|w| w[1] - w[0] == distance);
            (regular && a - distance > 0).then(|| list.iter().map(|i| i - distance).collect())
        }
        _ => None,
    };
    let derived = derived.map(|d| d.into_iter().map(|us| us * 1_000).collect::<Vec<_>>());
    match (given, derived) {
        (Some(given), Some(d)) if d[0] != given.0 => Err(LogError::Period {
            logged: Nanos(d[0]),
            given,
        }),
        (_, Some(d)) => Ok(d.into_iter().map(Some).collect()),
        (Some(given), None) => Ok(vec![Some(given.0); count]),
        (None, None) => {
            p.lack(
                "no period: a single-thread log's 'Thread 0 Interval' line is the interval plus \
                 the thread distance (-d) unless -h was given; import with the period to get \
                 the timeline and spike times",
            );
            Ok(vec![None; count])
        }
    }
}

/// The streams of the threads read.
fn finish(
    log: Log,
    periods: &[Option<i64>],
    count: usize,
    unit: TimeUnit,
    p: &mut Provenance,
) -> Vec<StreamSource> {
    let Log {
        announced,
        mut threads,
        ..
    } = log;
    threads.resize_with(count, ThreadState::new);
    let mut streams = Vec::with_capacity(count);
    for (t, state) in threads.into_iter().enumerate() {
        let period = periods.get(t).copied().flatten();
        if state.absent > 0 {
            p.lack(format!(
                "{} cycles of thread {t} are absent from the log (its cycle numbers skip: made \
                 with -o, or lines lost); samples counts the lines present",
                state.absent
            ));
        }
        if let Some(first) = state.first_cycle.filter(|&c| c > 0) {
            p.lack(format!("thread {t}'s log starts at cycle {first}, not 0"));
        }
        let (spikes, timeline) = match period {
            Some(period) => {
                let late = state.histogram.count_at_least(period.max(0) as u64);
                if late > 0 {
                    p.lack(format!(
                        "about {late} samples of thread {t} exceeded the period: cyclictest skipped \
                         the periods they passed without counting them, so the sample times after \
                         them (cycle × period) are early by the skipped periods"
                    ));
                }
                times(&state, period)
            }
            None => (Spikes::default(), Timeline::default()),
        };
        streams.push(StreamSource {
            probe: "timer",
            method: None,
            thread: t,
            cpu: announced.get(t).and_then(|a| a.cpu),
            policy: None,
            period: period.map(Nanos),
            elapsed: None,
            values: Values::Exact(Box::new(Exact {
                histogram: state.histogram,
                sums: state.sums,
                first: state.first,
                early_wakes: state.early_wakes,
                spikes,
                timeline,
            })),
        });
    }
    if streams.iter().any(|s| s.cpu.is_none()) {
        p.lack("no CPU numbers (cyclictest announces them only with -a and -v)");
    }
    p.lack("missed periods not counted (cyclictest skips them silently)");
    if unit == TimeUnit::Microseconds {
        p.lack("values truncated to whole µs by cyclictest");
    }
    streams
}

/// The largest samples and the timeline, placed in time at cycle × period.
fn times(state: &ThreadState, period: i64) -> (Spikes, Timeline) {
    let mut top: Vec<Spike> = state
        .top
        .iter()
        .map(|&(value, cycle)| Spike {
            value_ns: Nanos(value),
            at_ns: Nanos((cycle as i64).saturating_mul(period)),
        })
        .collect();
    top.sort_by(|a, b| b.value_ns.cmp(&a.value_ns).then(a.at_ns.cmp(&b.at_ns)));
    let spikes = Spikes {
        top,
        ..Spikes::default()
    };
    let timeline = Timeline {
        interval_ns: Nanos((state.cycles_per_interval as i64).saturating_mul(period)),
        max_ns: state.maxima.iter().map(|m| m.map(Nanos)).collect(),
        count: state.counts.clone(),
    };
    (spikes, timeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_lines() {
        assert_eq!(
            parse_sample(b"       0:       5:      12"),
            Some(Some((0, 5, 12)))
        );
        assert_eq!(
            parse_sample(b"       1:     105:      -3"),
            Some(Some((1, 105, -3)))
        );
        assert_eq!(
            parse_sample(b"       0:       5:      12       0"),
            Some(Some((0, 5, 12)))
        );
        assert_eq!(
            parse_sample(b"# /dev/cpu_dma_latency set to 0us"),
            Some(None)
        );
        assert_eq!(parse_sample(b"Thread 0 Interval: 1500"), Some(None));
        assert_eq!(parse_sample(b""), Some(None));
        assert_eq!(parse_sample(b"       0:       5:"), None);
        assert_eq!(parse_sample(b"       0:       5:  12x"), None);
        assert_eq!(parse_sample(b"0:99999999999999999999:1"), None);
    }

    #[test]
    fn timeline_doubles_when_long() {
        let mut t = ThreadState::new();
        t.timeline_add(5, 3);
        t.timeline_add(TIMELINE_CYCLES * TIMELINE_INTERVALS as u64 + 5, 7);
        assert_eq!(t.cycles_per_interval, 2 * TIMELINE_CYCLES);
        assert_eq!(t.counts.iter().sum::<u64>(), 2);
        assert_eq!(t.maxima[0], Some(3));
    }
}
