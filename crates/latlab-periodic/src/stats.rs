//! A task's statistics as C reads them: counters, extremes, means, and percentiles
//! taken from the histogram counts the loop recorded.

use latlab_rt::periodic::{hdr, shm::Snapshot, Summary};

/// What a figure is when the run has none (no cycle ran, or the method has no
/// margin): never a stand-in 0.
pub const LATLAB_UNKNOWN: i64 = i64::MIN;

/// A task's statistics at the end of its run. Times are in nanoseconds; a time the
/// run did not measure is `LATLAB_UNKNOWN`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct latlab_stats {
    /// Cycles run (each a call of the step).
    pub cycles: u64,
    /// Periods that passed without a cycle (skipped after overruns): cycles + missed
    /// is the number of periods from the first deadline to the last.
    pub missed: u64,
    /// Overruns: steps that ended after the next deadline.
    pub overruns: u64,
    /// Cycles run late, at once, to catch up after overruns.
    pub caught_up: u64,
    /// Wake-up latency (the system's part): least.
    pub wake_min_ns: i64,
    /// Wake-up latency: largest.
    pub wake_max_ns: i64,
    /// Wake-up latency: mean, rounded down.
    pub wake_mean_ns: i64,
    /// Wake-up latency: median (from the histogram: the highest value of its bucket,
    /// 3 significant digits).
    pub wake_p50_ns: i64,
    /// Wake-up latency: 99th percentile.
    pub wake_p99_ns: i64,
    /// Wake-up latency: 99.9th percentile.
    pub wake_p999_ns: i64,
    /// Compute time, wake-up to the end of the step (the application's part): least.
    pub compute_min_ns: i64,
    /// Compute time: largest.
    pub compute_max_ns: i64,
    /// Compute time: mean, rounded down.
    pub compute_mean_ns: i64,
    /// Compute time: median.
    pub compute_p50_ns: i64,
    /// Compute time: 99th percentile.
    pub compute_p99_ns: i64,
    /// Compute time: 99.9th percentile.
    pub compute_p999_ns: i64,
    /// The hybrid method's spin margin at the end (given or learned);
    /// `LATLAB_UNKNOWN` for the other methods, and for a margin to be learned that the
    /// run was too short to learn (under a second: it slept to each deadline).
    pub hybrid_margin_ns: i64,
}

impl latlab_stats {
    /// The statistics of a run of [`latlab_rt::periodic`], as C sees them.
    pub fn from_summary(summary: &Summary) -> latlab_stats {
        latlab_stats::of(&summary.snapshot)
    }

    /// The statistics of a task's page.
    pub(crate) fn of(snapshot: &Snapshot) -> latlab_stats {
        let c = &snapshot.counters;
        let known = |v: Option<i64>| v.unwrap_or(LATLAB_UNKNOWN);
        let mean = |sum: i64| match c.cycles {
            0 => LATLAB_UNKNOWN,
            n => sum.div_euclid(n as i64),
        };
        let wake = |q| known(hdr::quantile(&snapshot.wake_counts, q));
        let compute = |q| known(hdr::quantile(&snapshot.compute_counts, q));
        latlab_stats {
            cycles: c.cycles,
            missed: c.missed,
            overruns: c.overruns,
            caught_up: c.caught_up,
            wake_min_ns: known(c.wake_min_ns),
            wake_max_ns: known(c.wake_max_ns),
            wake_mean_ns: mean(c.wake_sum_ns),
            wake_p50_ns: wake(0.5),
            wake_p99_ns: wake(0.99),
            wake_p999_ns: wake(0.999),
            compute_min_ns: known(c.compute_min_ns),
            compute_max_ns: known(c.compute_max_ns),
            compute_mean_ns: mean(c.compute_sum_ns),
            compute_p50_ns: compute(0.5),
            compute_p99_ns: compute(0.99),
            compute_p999_ns: compute(0.999),
            hybrid_margin_ns: known(c.margin_ns),
        }
    }
}
