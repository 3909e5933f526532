//! Telemetry on the timeline: what trace events cannot show, counted per timeline
//! interval on the measured CPUs — interrupts by IRQ, softirqs by kind, steal time,
//! the CPU's frequency, C-state residency, thermal throttling, SMIs — and which of
//! those series the run's spikes coincide with.
//!
//! A source this machine lacks is [`SourceState::Unknown`] with the reason, and its
//! series are absent: never a series of zeros. An interval a source could not be read
//! in is `null` in its series.

use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// Series kept per phase at most; the rest are counted in
/// [`PhaseTelemetry::series_left_out`] (the busiest are kept).
pub const MAX_SERIES: usize = 64;

/// What was sampled beside the run's timeline, and what it coincided with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// The CPU the sampler ran on (`null`: no CPU but the measured ones was allowed,
    /// so it ran there at SCHED_OTHER; [`Telemetry::notes`] says so).
    pub sampler_cpu: Option<usize>,
    /// Every source, measured or unknown with the reason.
    pub sources: Vec<Source>,
    /// One entry per measured phase.
    pub phases: Vec<PhaseTelemetry>,
    /// Series whose bursts the spikes coincide with beyond chance (none: no series
    /// did, or there were no spikes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub correlations: Vec<Correlation>,
    /// What the sampling could not do as intended, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One source of telemetry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// What it measures: `interrupts`, `softirqs`, `steal`, `frequency`, `cstates`,
    /// `thermal-throttle`, `smi`.
    pub name: String,
    /// Where it was read (`/proc/interrupts`, `/dev/cpu/N/msr` ...).
    pub origin: String,
    /// Read, or unknown.
    pub state: SourceState,
    /// Why it is unknown (`null` when measured).
    pub reason: Option<String>,
}

/// Whether a source was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceState {
    /// Read at every interval boundary.
    Measured,
    /// Not available on this machine: its series are absent, never zero.
    Unknown,
}

impl Source {
    /// A source that was read.
    pub fn measured(name: &str, origin: &str) -> Source {
        Source {
            name: name.to_string(),
            origin: origin.to_string(),
            state: SourceState::Measured,
            reason: None,
        }
    }

    /// A source this machine lacks, and why.
    pub fn unknown(name: &str, origin: &str, reason: impl Into<String>) -> Source {
        Source {
            name: name.to_string(),
            origin: origin.to_string(),
            state: SourceState::Unknown,
            reason: Some(reason.into()),
        }
    }
}

/// One phase's series, interval by interval, on the same intervals as its streams'
/// timelines: interval `i` covers `(i·interval, (i+1)·interval]` of the measured span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTelemetry {
    /// The phase.
    pub phase: String,
    /// The measured CPUs the series are of.
    pub cpus: Vec<usize>,
    /// Interval width (doubles with the timeline's when a long run outgrows it).
    pub interval_ns: Nanos,
    /// Series that changed on a measured CPU during the phase.
    pub series: Vec<Series>,
    /// Series that changed but were left out to keep the Run small.
    #[serde(default)]
    pub series_left_out: u64,
}

/// One quantity on one CPU, per interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The CPU.
    pub cpu: usize,
    /// What it counts.
    pub kind: SeriesKind,
    /// Its name within the kind: the IRQ as `/proc/interrupts` names it (`36`,
    /// `LOC`, `NMI`), the softirq (`NET_RX`), the C-state (`POLL`), `core`/`package`
    /// for throttling; empty for steal, frequency and SMI.
    pub name: String,
    /// What the kernel says it is (`/proc/interrupts`' description column:
    /// `virtio1-req.0`, `Local timer interrupts`; `null` where it has none).
    #[serde(default)]
    pub description: Option<String>,
    /// The unit of each value: `count` (per interval), `ns` (per interval), `kHz`.
    pub unit: String,
    /// One value per interval: the change over it (a count, a time), or the
    /// frequency at its end; `null` where the source could not be read.
    pub values: Vec<Option<u64>>,
}

/// What a series counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesKind {
    /// Interrupts of one IRQ (`/proc/interrupts`).
    Irq,
    /// Softirqs of one kind (`/proc/softirqs`).
    Softirq,
    /// Time stolen by the hypervisor (`/proc/stat`), ns.
    Steal,
    /// The CPU's frequency, kHz (`scaling_cur_freq` or APERF/MPERF).
    Frequency,
    /// Time in one idle state (`cpuidle`), ns.
    Cstate,
    /// Thermal throttling events (`thermal_throttle`).
    Throttle,
    /// System management interrupts (MSR 0x34).
    Smi,
}

impl SeriesKind {
    /// Whether a value is a level (the frequency), not a change over the interval.
    pub fn is_level(self) -> bool {
        self == SeriesKind::Frequency
    }
}

impl Series {
    /// How people name it: `IRQ 36 (virtio1-req.0)`, `softirq NET_RX`, `steal`.
    pub fn title(&self) -> String {
        let base = match self.kind {
            SeriesKind::Irq => format!("IRQ {}", self.name),
            SeriesKind::Softirq => format!("softirq {}", self.name),
            SeriesKind::Steal => "steal".to_string(),
            SeriesKind::Frequency => "frequency".to_string(),
            SeriesKind::Cstate => format!("C-state {}", self.name),
            SeriesKind::Throttle => format!("{} throttle", self.name),
            SeriesKind::Smi => "SMI".to_string(),
        };
        match &self.description {
            Some(d) if !d.is_empty() => format!("{base} ({d})"),
            _ => base,
        }
    }

    /// The sum of its known values (for a level, of nothing: 0).
    pub fn total(&self) -> u64 {
        match self.kind.is_level() {
            true => 0,
            false => self.values.iter().flatten().sum(),
        }
    }

    /// Merges neighbouring intervals pairwise: changes add up, a level keeps the
    /// later one; unknown stays unknown.
    pub fn coarsen(&mut self) {
        let level = self.kind.is_level();
        self.values = self
            .values
            .chunks(2)
            .map(|pair| match (pair[0], pair.get(1).copied().flatten()) {
                (Some(a), Some(b)) => Some(if level { b } else { a + b }),
                (a, None) if pair.len() == 1 => a,
                _ => None,
            })
            .collect();
    }
}

impl PhaseTelemetry {
    /// Merges neighbouring intervals pairwise and doubles the interval, as the
    /// timeline does when a long run outgrows it.
    pub fn coarsen(&mut self) {
        self.series.iter_mut().for_each(Series::coarsen);
        self.interval_ns = Nanos(self.interval_ns.0 * 2);
    }

    /// Keeps the [`MAX_SERIES`] busiest series (by total, levels first), counting the
    /// others in [`PhaseTelemetry::series_left_out`].
    pub fn keep_busiest(&mut self) {
        if self.series.len() <= MAX_SERIES {
            return;
        }
        self.series.sort_by_key(|s| {
            (
                std::cmp::Reverse(s.kind.is_level()),
                std::cmp::Reverse(s.total()),
            )
        });
        self.series_left_out += (self.series.len() - MAX_SERIES) as u64;
        self.series.truncate(MAX_SERIES);
        self.series.sort_by_key(|s| (s.cpu, s.kind));
    }
}

/// What counts as one spike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpikeCount {
    /// Each sample above the stream's spike threshold (all of them were kept).
    Samples,
    /// Each interval whose largest sample is above the level (no threshold was set,
    /// or the samples above it did not all fit).
    Intervals,
}

/// Spikes that coincide with a series' bursts beyond chance (found by
/// `spike_correlation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    /// The phase.
    pub phase: String,
    /// The CPU (its stream's and the series').
    pub cpu: usize,
    /// The series' kind.
    pub kind: SeriesKind,
    /// The series' name (see [`Series::name`]).
    pub name: String,
    /// The series as people name it (`IRQ 36 (virtio1-req.0)`).
    pub title: String,
    /// Spikes in burst intervals.
    pub spikes_in_bursts: u64,
    /// Spikes in every interval compared.
    pub spikes: u64,
    /// What a spike is: each sample above the level, or each interval whose largest
    /// sample is above it.
    pub spikes_counted: SpikeCount,
    /// The spike level: the stream's spike threshold, or its p99.9 without one.
    pub spike_level_ns: Nanos,
    /// Intervals where the series burst.
    pub burst_intervals: u64,
    /// Intervals compared (those where the series was known).
    pub intervals: u64,
    /// Interval width.
    pub interval_ns: Nanos,
    /// Spikes per second in burst intervals.
    pub rate_in_bursts_per_s: f64,
    /// Spikes per second in the other intervals.
    pub rate_elsewhere_per_s: f64,
    /// One-sided Fisher exact test on the intervals (burst or not × with a spike or
    /// not), before the correction for the series tested on the CPU.
    pub p_value: f64,
    /// Series tested on the CPU (the Bonferroni factor).
    pub series_tested: u64,
}

impl Correlation {
    /// The line users read, e.g. `spikes coincide with IRQ 36 (virtio1-req.0)
    /// bursts on cpu 1: 14 of 16 spikes in 6 of 60 intervals of 1 s (2.3/s vs
    /// 0.04/s, p = 0.0001)`.
    pub fn sentence(&self) -> String {
        let what = match self.kind {
            SeriesKind::Frequency => "drops",
            _ => "bursts",
        };
        let spikes = match self.spikes_counted {
            SpikeCount::Samples => "spikes",
            SpikeCount::Intervals => "intervals with a spike",
        };
        format!(
            "spikes coincide with {} {what} on cpu {} ({}): {} of {} {spikes} \
             (above {}) in {} of {} intervals of {} ({:.3}/s vs {:.3}/s, p = {:.2e}, \
             {} series tested)",
            self.title,
            self.cpu,
            self.phase,
            self.spikes_in_bursts,
            self.spikes,
            self.spike_level_ns,
            self.burst_intervals,
            self.intervals,
            self.interval_ns,
            self.rate_in_bursts_per_s,
            self.rate_elsewhere_per_s,
            self.p_value,
            self.series_tested,
        )
    }
}

impl Telemetry {
    /// The line of each unknown source: `msr: unknown (no /dev/cpu/0/msr: ...)`.
    pub fn unknown_lines(&self) -> Vec<String> {
        self.sources
            .iter()
            .filter(|s| s.state == SourceState::Unknown)
            .map(|s| {
                format!(
                    "{}: unknown ({})",
                    s.name,
                    s.reason.as_deref().unwrap_or("no reason given")
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(kind: SeriesKind, values: Vec<Option<u64>>) -> Series {
        Series {
            cpu: 0,
            kind,
            name: "x".to_string(),
            description: None,
            unit: "count".to_string(),
            values,
        }
    }

    #[test]
    fn coarsening_adds_changes_keeps_the_later_level_and_unknown_stays_unknown() {
        let mut irq = series(
            SeriesKind::Irq,
            vec![Some(1), Some(2), None, Some(4), Some(5)],
        );
        irq.coarsen();
        assert_eq!(irq.values, vec![Some(3), None, Some(5)]);
        let mut freq = series(SeriesKind::Frequency, vec![Some(10), Some(20)]);
        freq.coarsen();
        assert_eq!(freq.values, vec![Some(20)]);
    }

    #[test]
    fn keeping_the_busiest_counts_what_was_left_out() {
        let mut phase = PhaseTelemetry {
            phase: "main".to_string(),
            cpus: vec![0],
            interval_ns: Nanos(1_000_000_000),
            series: (0..MAX_SERIES as u64 + 3)
                .map(|n| series(SeriesKind::Irq, vec![Some(n)]))
                .collect(),
            series_left_out: 0,
        };
        phase.keep_busiest();
        assert_eq!(phase.series.len(), MAX_SERIES);
        assert_eq!(phase.series_left_out, 3);
        assert!(phase.series.iter().all(|s| s.total() >= 3));
    }
}
