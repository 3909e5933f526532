//! `cyclictest`: the histogram text `cyclictest -h` prints, so OSADL's and rteval's
//! scripts work on latlab runs.
//!
//! One row per microsecond, one column per stream (`%06d` bin, `%06lu` counts
//! separated by tabs), then `# Total`, `# Min/Avg/Max Latencies` in whole µs
//! (truncated, as cyclictest computes them) and `# Histogram Overflows`. Rows go up to
//! the largest sample, at most 100 000 µs; later samples count as overflows. Samples
//! are binned as the `cyclictest-json` export bins them: each HdrHistogram bucket (within
//! 0.1 %) in the microsecond of its highest value, the smallest and largest samples in
//! the microseconds of the exact minimum and maximum, so the rows agree with the
//! Min/Max lines.
//!
//! Its readers take column i as CPU i's wake-up latency, so it holds one phase of one
//! probe that measures wake-ups ([`narrow`](super::narrow) chooses; others are refused).

use super::series::wake_up_series;
use super::{microsecond_bins, ExportError, Exporter};
use latlab_model::run::Run;
use std::fmt::Write as _;

pub(super) struct Cyclictest;

/// Most rows written (cyclictest's `-h` limit is the user's choice; 100 ms covers any
/// real-time system).
const MAX_ROWS: usize = 100_000;

impl Exporter for Cyclictest {
    fn name(&self) -> &'static str {
        "cyclictest"
    }

    fn describe(&self) -> &'static str {
        "cyclictest -h histogram text (1 µs rows), read by OSADL's and rteval's scripts"
    }

    fn holds_one_series(&self) -> bool {
        true
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let streams = wake_up_series(run, self.name())?;
        if let Some(s) = run
            .streams
            .iter()
            .find(|s| s.samples > 0 && s.stats.mean_ns.is_none())
        {
            return Err(ExportError(format!(
                "{} [{}]: its mean is unknown (its source did not have it), and a cyclictest \
                 histogram must state one; use --format csv or json",
                s.label(),
                s.phase
            )));
        }
        let mut binned = Vec::with_capacity(streams.len());
        for stream in streams {
            binned.push(microsecond_bins(stream)?.ok_or_else(|| {
                ExportError(format!(
                    "{} [{}] has no histogram (its source kept only minimum, mean and \
                     maximum): a cyclictest histogram cannot be written; use --format csv \
                     or json",
                    stream.label(),
                    stream.phase
                ))
            })?);
        }
        let max_us = run
            .streams
            .iter()
            .filter_map(|s| s.stats.max_ns)
            .map(|m| m.0.max(0) as usize / 1_000)
            .max()
            .unwrap_or(0);
        // A source's range stays the range: what lay beyond it stays an overflow.
        let range = binned
            .iter()
            .filter_map(|b| b.overflow_from_us)
            .min()
            .map_or(max_us + 1, |from| from.max(0) as usize);
        let rows = range.min(MAX_ROWS);
        let mut columns = Vec::with_capacity(streams.len());
        let mut overflows = Vec::with_capacity(streams.len());
        for b in binned {
            let mut bins = vec![0u64; rows];
            let mut over = b.overflowed;
            for (us, count) in b.bins {
                match bins.get_mut(us.max(0) as usize) {
                    Some(bin) => *bin += count,
                    None => over += count,
                }
            }
            columns.push(bins);
            overflows.push(over);
        }
        let mut out = String::from("# Histogram\n");
        for row in 0..rows {
            let counts: Vec<String> = columns.iter().map(|c| format!("{:06}", c[row])).collect();
            let _ = writeln!(out, "{row:06} {}", counts.join("\t"));
        }
        let line = |label: &str, values: Vec<String>| format!("# {label}: {}\n", values.join(" "));
        out.push_str(&line(
            "Total",
            columns
                .iter()
                .map(|c| format!("{:09}", c.iter().sum::<u64>()))
                .collect(),
        ));
        let us = |v: Option<latlab_model::Nanos>| v.map_or(0, |n| n.0.max(0) / 1_000);
        // Without samples cyclictest prints its initial minimum, 1000000.
        out.push_str(&line(
            "Min Latencies",
            streams
                .iter()
                .map(|s| {
                    format!(
                        "{:05}",
                        s.stats.min_ns.map_or(1_000_000, |m| m.0.max(0) / 1_000)
                    )
                })
                .collect(),
        ));
        out.push_str(&line(
            "Avg Latencies",
            streams
                .iter()
                // Without samples (the only case without a mean, checked above) cyclictest
                // prints 0.
                .map(|s| format!("{:05}", s.stats.mean_ns.map_or(0, |m| (m / 1_000.0) as i64)))
                .collect(),
        ));
        out.push_str(&line(
            "Max Latencies",
            streams
                .iter()
                .map(|s| format!("{:05}", us(s.stats.max_ns)))
                .collect(),
        ));
        out.push_str(&line(
            "Histogram Overflows",
            overflows.iter().map(|o| format!("{o:05}")).collect(),
        ));
        out.push_str("# Histogram Overflow at cycle number:\n");
        for i in 0..streams.len() {
            let _ = writeln!(out, "# Thread {i}:");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    #[test]
    fn looks_like_cyclictest() {
        insta::assert_snapshot!(Cyclictest.export(&fixture::run()).unwrap());
    }

    #[test]
    fn the_bins_add_up_to_the_samples() {
        let run = fixture::run();
        let text = Cyclictest.export(&run).unwrap();
        let total: u64 = text
            .lines()
            .take_while(|l| !l.starts_with("# Total"))
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                l.split([' ', '\t'])
                    .skip(1)
                    .map(|c| c.parse::<u64>().unwrap())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(total, run.streams.iter().map(|s| s.samples).sum::<u64>());
    }
}
