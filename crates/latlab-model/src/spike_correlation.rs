//! Whether a run's spikes coincide with a telemetry series' bursts: the one place
//! the Run's streams and its telemetry meet.
//!
//! Per phase and measured CPU, the CPU's stream gives the spikes per timeline
//! interval; each series on that CPU splits the intervals into bursts and the rest
//! ([`BurstRule`]). The test is on intervals, not spikes (one bad interval full of
//! spikes is one observation, not many): a one-sided Fisher exact test on the 2×2
//! table (burst or not × with a spike or not), at [`ALPHA`] after a Bonferroni
//! correction for the series tested on the CPU. A series is named only when the
//! corrected p-value is below it and spikes are more frequent in its bursts.

use crate::run::Stream;
use crate::telemetry::{Correlation, PhaseTelemetry, Series, SeriesKind, SpikeCount, Telemetry};
use crate::units::Nanos;
use statrs::function::factorial::ln_binomial;

/// The significance level, over all series tested on a CPU.
pub const ALPHA: f64 = 0.05;

/// When an interval is a burst of a series.
///
/// Counts and times: at least twice the series' quiet level (its lower quartile)
/// plus one — so any SMI or steal at all is a burst where there is usually none.
/// Frequency: a drop to 90 % or less of its usual level (its upper quartile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurstRule;

impl BurstRule {
    /// Each known interval's verdict (`None`: the series was unknown there).
    pub fn bursts(series: &Series) -> Vec<Option<bool>> {
        let mut known: Vec<u64> = series.values.iter().flatten().copied().collect();
        if known.is_empty() {
            return vec![None; series.values.len()];
        }
        known.sort_unstable();
        let quartile = |q: usize| known[(known.len() - 1) * q / 4];
        let is_burst: Box<dyn Fn(u64) -> bool> = match series.kind {
            SeriesKind::Frequency => {
                let usual = quartile(3);
                Box::new(move |v| v * 10 <= usual * 9)
            }
            _ => {
                let quiet = quartile(1);
                Box::new(move |v| v > quiet.saturating_mul(2))
            }
        };
        series.values.iter().map(|v| v.map(&is_burst)).collect()
    }
}

/// The spikes of `stream` per timeline interval, what a spike is, and the level.
fn spikes_per_interval(stream: &Stream) -> Option<(Vec<u64>, SpikeCount, Nanos)> {
    let timeline = &stream.timeline;
    let interval = timeline.interval_ns.0;
    if interval <= 0 || timeline.count.is_empty() {
        return None;
    }
    let spikes = &stream.spikes;
    match spikes.threshold_ns {
        Some(level) if spikes.above_threshold_dropped == 0 => {
            let mut per = vec![0u64; timeline.count.len()];
            for spike in &spikes.above_threshold {
                let slot = (spike.at_ns.0.saturating_sub(1).max(0) / interval) as usize;
                if let Some(n) = per.get_mut(slot) {
                    *n += 1;
                }
            }
            Some((per, SpikeCount::Samples, level))
        }
        threshold => {
            let level = threshold.or_else(|| stream.stats.percentile(99.9).map(|p| p.value()))?;
            let per = timeline
                .max_ns
                .iter()
                .map(|max| u64::from(max.is_some_and(|m| m > level)))
                .collect();
            Some((per, SpikeCount::Intervals, level))
        }
    }
}

/// P(X ≥ `hits`) for X hypergeometric: `draws` intervals drawn from `population`, of
/// which `successes` have a spike — the one-sided Fisher exact test.
fn fisher_at_least(population: u64, successes: u64, draws: u64, hits: u64) -> f64 {
    let top = successes.min(draws);
    let total = ln_binomial(population, draws);
    let p: f64 = (hits..=top)
        .filter(|&k| draws - k <= population - successes)
        .map(|k| {
            (ln_binomial(successes, k) + ln_binomial(population - successes, draws - k) - total)
                .exp()
        })
        .sum();
    p.min(1.0)
}

/// One series against one CPU's spikes: its correlation, whatever the p-value (the
/// caller decides), or `None` when there is nothing to compare (no bursts, only
/// bursts, no spikes).
fn test_series(
    series: &Series,
    spikes: &[u64],
    counted: SpikeCount,
    level: Nanos,
    phase: &PhaseTelemetry,
) -> Option<Correlation> {
    let bursts = BurstRule::bursts(series);
    let (mut burst_n, mut quiet_n, mut spikes_burst, mut spikes_quiet) = (0u64, 0u64, 0u64, 0u64);
    let (mut spiky_burst, mut spiky_total) = (0u64, 0u64);
    for (burst, &n) in bursts.iter().zip(spikes) {
        let Some(burst) = *burst else { continue };
        spiky_total += u64::from(n > 0);
        if burst {
            burst_n += 1;
            spikes_burst += n;
            spiky_burst += u64::from(n > 0);
        } else {
            quiet_n += 1;
            spikes_quiet += n;
        }
    }
    if burst_n == 0 || quiet_n == 0 || spiky_total == 0 {
        return None;
    }
    let seconds = phase.interval_ns.0 as f64 / 1e9;
    let rate_in = spikes_burst as f64 / (burst_n as f64 * seconds);
    let rate_out = spikes_quiet as f64 / (quiet_n as f64 * seconds);
    let p_value = fisher_at_least(burst_n + quiet_n, spiky_total, burst_n, spiky_burst);
    Some(Correlation {
        phase: phase.phase.clone(),
        cpu: series.cpu,
        kind: series.kind,
        name: series.name.clone(),
        title: series.title(),
        spikes_in_bursts: spikes_burst,
        spikes: spikes_burst + spikes_quiet,
        spikes_counted: counted,
        spike_level_ns: level,
        burst_intervals: burst_n,
        intervals: burst_n + quiet_n,
        interval_ns: phase.interval_ns,
        rate_in_bursts_per_s: rate_in,
        rate_elsewhere_per_s: rate_out,
        p_value,
        series_tested: 0,
    })
}

/// The series of `phase` whose bursts `streams`' spikes coincide with beyond chance,
/// strongest first. A stream is compared with the series of its CPU when both have
/// the same interval (the telemetry is coarsened to the timeline's when it is finer).
pub fn correlate(phase: &PhaseTelemetry, streams: &[Stream]) -> Vec<Correlation> {
    let mut found = Vec::new();
    for &cpu in &phase.cpus {
        let Some(stream) = streams
            .iter()
            .find(|s| s.phase == phase.phase && s.cpu == Some(cpu) && s.samples > 0)
        else {
            continue;
        };
        let mut phase = phase.clone();
        phase.series.retain(|s| s.cpu == cpu);
        while phase.interval_ns.0 < stream.timeline.interval_ns.0 {
            phase.coarsen();
        }
        if phase.interval_ns != stream.timeline.interval_ns {
            continue;
        }
        let Some((spikes, counted, level)) = spikes_per_interval(stream) else {
            continue;
        };
        let tested: Vec<Correlation> = phase
            .series
            .iter()
            .filter_map(|s| test_series(s, &spikes, counted, level, &phase))
            .collect();
        let factor = tested.len() as u64;
        found.extend(tested.into_iter().filter_map(|mut c| {
            c.series_tested = factor;
            let significant = c.p_value * factor as f64 <= ALPHA;
            (significant && c.rate_in_bursts_per_s > c.rate_elsewhere_per_s).then_some(c)
        }));
    }
    found.sort_by(|a, b| a.p_value.total_cmp(&b.p_value));
    found
}

/// Finds again which series `streams`' spikes coincide with, over every phase of
/// `telemetry`, strongest first.
pub fn find(telemetry: &mut Telemetry, streams: &[Stream]) {
    telemetry.correlations = telemetry
        .phases
        .iter()
        .flat_map(|phase| correlate(phase, streams))
        .collect();
    telemetry
        .correlations
        .sort_by(|a, b| a.p_value.total_cmp(&b.p_value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Spike, Spikes, Timeline};
    use crate::telemetry::{PhaseTelemetry, Series, SeriesKind};

    const SECOND: i64 = 1_000_000_000;

    fn stream_with_spikes(intervals: usize, spike_intervals: &[usize]) -> Stream {
        let mut stream = crate::fixture::run().streams[0].clone();
        stream.cpu = Some(0);
        stream.phase = "main".to_string();
        stream.timeline = Timeline {
            interval_ns: Nanos(SECOND),
            max_ns: vec![Some(Nanos(10_000)); intervals],
            count: vec![1000; intervals],
        };
        stream.spikes = Spikes {
            top: Vec::new(),
            threshold_ns: Some(Nanos(50_000)),
            above_threshold: spike_intervals
                .iter()
                .map(|&i| Spike {
                    value_ns: Nanos(80_000),
                    at_ns: Nanos(i as i64 * SECOND + SECOND / 2),
                })
                .collect(),
            above_threshold_dropped: 0,
        };
        stream
    }

    fn phase_with(values: Vec<Option<u64>>, kind: SeriesKind) -> PhaseTelemetry {
        PhaseTelemetry {
            phase: "main".to_string(),
            cpus: vec![0],
            interval_ns: Nanos(SECOND),
            series: vec![Series {
                cpu: 0,
                kind,
                name: "36".to_string(),
                description: Some("virtio1-req.0".to_string()),
                unit: "count".to_string(),
                values,
            }],
            series_left_out: 0,
        }
    }

    /// A pseudo-random count around 100 (a fixed LCG: the test is deterministic).
    fn noise(i: usize) -> u64 {
        90 + (i as u64 * 2_654_435_761 % 21)
    }

    #[test]
    fn bursts_aligned_with_spikes_are_named_with_their_rates() {
        let burst_at = [5, 12, 20, 33, 41, 52];
        let values = (0..60)
            .map(|i| {
                Some(if burst_at.contains(&i) {
                    5_000
                } else {
                    noise(i)
                })
            })
            .collect();
        // Two spikes in each burst interval, one in each of two quiet ones: 8 of 60
        // intervals have a spike and the 6 bursts hold 6 of them, p = C(8,6)/C(60,6).
        let spikes: Vec<usize> = burst_at
            .iter()
            .flat_map(|&i| [i, i])
            .chain([2, 30])
            .collect();
        let found = correlate(
            &phase_with(values, SeriesKind::Irq),
            &[stream_with_spikes(60, &spikes)],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        let c = &found[0];
        assert_eq!((c.spikes_in_bursts, c.spikes), (12, 14));
        assert_eq!((c.burst_intervals, c.intervals), (6, 60));
        assert!((c.rate_in_bursts_per_s - 2.0).abs() < 1e-9);
        assert!((c.rate_elsewhere_per_s - 2.0 / 54.0).abs() < 1e-9);
        assert_eq!(
            c.sentence(),
            "spikes coincide with IRQ 36 (virtio1-req.0) bursts on cpu 0 (main): 12 of 14 \
             spikes (above 50 µs) in 6 of 60 intervals of 1 s (2.000/s vs 0.037/s, \
             p = 5.59e-7, 1 series tested)"
        );
    }

    #[test]
    fn bursts_independent_of_the_spikes_are_not_named() {
        let values = (0..60)
            .map(|i| Some(if i % 10 == 3 { 5_000 } else { noise(i) }))
            .collect();
        // Spikes spread evenly, one of them in a burst interval (as chance puts them).
        let spikes = [1, 8, 13, 19, 27, 35, 44, 50, 57];
        let found = correlate(
            &phase_with(values, SeriesKind::Irq),
            &[stream_with_spikes(60, &spikes)],
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_frequency_drop_is_its_burst_and_unknown_intervals_are_left_out() {
        let values: Vec<Option<u64>> = (0..40)
            .map(|i| match i {
                0 | 1 => None,
                30..=35 => Some(1_200_000),
                _ => Some(2_400_000),
            })
            .collect();
        let found = correlate(
            &phase_with(values, SeriesKind::Frequency),
            &[stream_with_spikes(40, &[30, 31, 32, 33, 34, 35, 0, 1])],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].burst_intervals, found[0].intervals), (6, 38));
        assert_eq!(
            found[0].spikes, 6,
            "spikes of unknown intervals are not compared"
        );
        assert!(found[0].sentence().contains(") drops on cpu 0"));
    }

    #[test]
    fn fisher_matches_a_hand_computed_table() {
        // 10 intervals, 3 with a spike, 3 bursts holding all 3: 1/C(10,3) = 1/120.
        assert!((fisher_at_least(10, 3, 3, 3) - 1.0 / 120.0).abs() < 1e-12);
        // At least zero hits is certain.
        assert!((fisher_at_least(10, 3, 3, 0) - 1.0).abs() < 1e-9);
    }
}
