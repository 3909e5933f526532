//! Series: runs that measured the same thing, so that their figures may share a line.
//!
//! A run contributes to one series per probe it ran: a series is the rig (its stable
//! identity, [`HostFacts::rig`], else its host name), where the figures came from
//! (measured by latlab, or imported from which format), the probe, and the probe's
//! method, period, policy and CPUs, and the load (the scenario, else the loads' specs).
//! A wake-up latency, an OS-noise gap and a clock-read cost never share a series, nor
//! do two rigs, nor an import and a measurement.
//!
//! A run's [`SeriesFigures`] are what a farm's view needs of it per series without
//! reading the whole Run again: the store keeps them beside its index.
//!
//! [`HostFacts::rig`]: crate::run::HostFacts::rig

use crate::rate::{self, SpikeRate};
use crate::run::{Percentile, ProbePlan, Run, Stream};
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// The timer probe's name in its streams.
const PROBE_TIMER: &str = "timer";
use std::collections::BTreeSet;
use std::fmt;

/// What makes runs' figures comparable: one series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    /// The rig: `rig:ID` from its stable identity, `host:NAME` when only the host name
    /// is known, `unknown` when neither is.
    pub rig: String,
    /// `latlab`, or `import:FORMAT` for an imported run.
    pub origin: String,
    /// The probe (`timer`, `noise`, `clock`, ...).
    pub probe: String,
    /// Its method(s), period(s), policy(ies), as its streams say, each list sorted;
    /// a stream that did not say adds `?`.
    pub method: String,
    /// See `method`.
    pub period: String,
    /// See `method`.
    pub policy: String,
    /// The CPUs its streams measured.
    pub cpus: Vec<usize>,
    /// The scenario, else the loads' specs of its phases, else `none`.
    pub load: String,
}

impl SeriesKey {
    /// The series of each probe `run` ran, in the order the probes first appear; a
    /// run without streams (it died before measuring) is in the series of the probes it
    /// planned, so that it is still listed, its figures unknown.
    pub fn of_run(run: &Run) -> Vec<SeriesKey> {
        let named: Vec<&str> = match run.streams.is_empty() {
            false => run.streams.iter().map(|s| s.probe.as_str()).collect(),
            true => run
                .plan
                .probes
                .iter()
                .map(|p| match p {
                    ProbePlan::Timer(_) => PROBE_TIMER,
                    ProbePlan::Primitive(p) => p.name.as_str(),
                })
                .collect(),
        };
        let mut probes: Vec<&str> = Vec::new();
        for probe in named {
            if !probes.contains(&probe) {
                probes.push(probe);
            }
        }
        if probes.is_empty() {
            probes.push("unknown");
        }
        probes
            .into_iter()
            .map(|probe| SeriesKey::of_probe(run, probe))
            .collect()
    }

    /// The series of `run`'s streams of `probe`.
    pub fn of_probe(run: &Run, probe: &str) -> SeriesKey {
        let streams: Vec<&Stream> = run.streams.iter().filter(|s| s.probe == probe).collect();
        let listed = |value: &dyn Fn(&Stream) -> Option<String>| {
            let values: BTreeSet<String> = streams
                .iter()
                .map(|s| value(s).unwrap_or_else(|| "?".to_string()))
                .collect();
            values.into_iter().collect::<Vec<_>>().join("+")
        };
        let rig = match &run.host {
            Some(h) => match &h.rig {
                Some(rig) => format!("rig:{rig}"),
                None if !h.hostname.is_empty() => format!("host:{}", h.hostname),
                None => "unknown".to_string(),
            },
            None => "unknown".to_string(),
        };
        let origin = match &run.import {
            Some(import) => format!("import:{}", import.format),
            None => run.tool.name.clone(),
        };
        let loads: BTreeSet<&str> = run
            .phases
            .iter()
            .flat_map(|p| p.loads.iter().map(|l| l.spec.as_str()))
            .collect();
        let load = match (&run.scenario, loads.is_empty()) {
            (Some(scenario), _) => format!("scenario:{scenario}"),
            (None, false) => loads.into_iter().collect::<Vec<_>>().join("+"),
            (None, true) => "none".to_string(),
        };
        let cpus: BTreeSet<usize> = streams.iter().filter_map(|s| s.cpu).collect();
        SeriesKey {
            rig,
            origin,
            probe: probe.to_string(),
            method: listed(&|s| s.method.clone()),
            period: listed(&|s| s.period_ns.map(|p| p.to_string())),
            policy: listed(&|s| s.policy.map(|p| p.to_string())),
            cpus: cpus.into_iter().collect(),
            load,
        }
    }

    /// A short stable id of the series (for URLs and JSON): 12 hex digits of a hash of
    /// its label, the same on every machine and in every version that labels it alike.
    pub fn id(&self) -> String {
        // FNV-1a, 64 bits: stable (unlike std's hasher) and needs no crate.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in self.to_string().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{:012x}", hash >> 16)
    }
}

/// One run's figures in one of its series: its streams of the series' probe. Unknown
/// is `None`, never 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesFigures {
    /// The series.
    pub key: SeriesKey,
    /// Samples of its streams together.
    pub samples: u64,
    /// The largest sample of its streams; `None` when a stream with samples lacks it.
    pub max_ns: Option<Nanos>,
    /// The worst p99.9 of its streams (a bound when one stream's is); `None` when a
    /// stream with samples lacks it.
    pub p99_9: Option<Percentile>,
    /// Its streams' samples above the run's spike level ([`rate::level_of`]) per hour
    /// of their measured time; `None` when a stream's count or time is not known.
    pub spike_rate: Option<SpikeRate>,
}

impl SeriesFigures {
    /// The figures of each series of `run`, in [`SeriesKey::of_run`]'s order.
    pub fn of_run(run: &Run) -> Vec<SeriesFigures> {
        let level = rate::level_of(run);
        SeriesKey::of_run(run)
            .into_iter()
            .map(|key| {
                let streams: Vec<&Stream> = run
                    .streams
                    .iter()
                    .filter(|s| s.probe == key.probe)
                    .collect();
                let sampled = || streams.iter().filter(|s| s.samples > 0);
                let rates: Option<Vec<SpikeRate>> = streams
                    .iter()
                    .map(|s| SpikeRate::of_stream(s, level, rate::CONFIDENCE))
                    .collect();
                SeriesFigures {
                    samples: streams.iter().map(|s| s.samples).sum(),
                    max_ns: sampled()
                        .map(|s| s.stats.max_ns)
                        .collect::<Option<Vec<Nanos>>>()
                        .and_then(|all| all.into_iter().max()),
                    p99_9: sampled()
                        .map(|s| s.stats.percentile(99.9))
                        .collect::<Option<Vec<Percentile>>>()
                        .and_then(Percentile::worst_of),
                    spike_rate: rates.and_then(|r| SpikeRate::combined(&r)),
                    key,
                }
            })
            .collect()
    }
}

impl fmt::Display for SeriesKey {
    /// `rig:m-0123… · latlab · timer abs 1 ms fifo:95 · cpu 1 · load none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus = match self.cpus.is_empty() {
            true => "cpu ?".to_string(),
            false => format!(
                "cpu {}",
                self.cpus
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        write!(
            f,
            "{} · {} · {} {} {} {} · {cpus} · load {}",
            self.rig, self.origin, self.probe, self.method, self.period, self.policy, self.load
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_run_has_one_series_per_probe_and_names_what_it_measured() {
        let run = fixture::run();
        let series = SeriesKey::of_run(&run);
        assert_eq!(series.len(), 1);
        let s = &series[0];
        assert_eq!(s.probe, run.streams[0].probe);
        assert_eq!(s.origin, "latlab");
        assert!(s.rig.starts_with("host:"), "{}", s.rig);
        assert_eq!(s.id().len(), 12);
        assert_eq!(s.id(), SeriesKey::of_run(&run)[0].id(), "stable");
    }

    #[test]
    fn a_runs_figures_per_series_are_its_worst_streams_and_unknown_stays_unknown() {
        let mut run = fixture::run();
        let figures = SeriesFigures::of_run(&run);
        assert_eq!(figures.len(), 1);
        let one = &figures[0];
        assert_eq!(one.key, SeriesKey::of_run(&run)[0]);
        assert_eq!(
            one.samples,
            run.streams.iter().map(|s| s.samples).sum::<u64>()
        );
        let maxima = run.streams.iter().filter_map(|s| s.stats.max_ns);
        assert_eq!(one.max_ns, maxima.max());
        let p999 = run.streams.iter().filter_map(|s| s.stats.percentile(99.9));
        assert_eq!(one.p99_9, Percentile::worst_of(p999));
        assert!(one.spike_rate.is_some());
        // A stream without a p99.9 or a histogram: unknown, not its sibling's.
        run.streams[0].stats.percentiles_ns.clear();
        run.streams[0].histogram = None;
        let unknown = &SeriesFigures::of_run(&run)[0];
        assert_eq!((unknown.p99_9, unknown.spike_rate), (None, None));
        assert_eq!(unknown.max_ns, one.max_ns);
        // A probe of its own is a series of its own.
        let mut two = fixture::run();
        two.streams[1].probe = "noise".to_string();
        let figures = SeriesFigures::of_run(&two);
        assert_eq!(figures.len(), 2);
        assert_eq!(figures.iter().map(|f| f.samples).sum::<u64>(), one.samples);
        let json = serde_json::to_string(&figures).unwrap();
        let back: Vec<SeriesFigures> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, figures);
    }

    #[test]
    fn a_rig_an_import_a_period_or_a_probe_is_another_series() {
        let run = fixture::run();
        let base = SeriesKey::of_run(&run)[0].clone();
        let mut renamed = run.clone();
        renamed.host.as_mut().unwrap().rig = Some("bench-07".to_string());
        assert_eq!(SeriesKey::of_run(&renamed)[0].rig, "rig:bench-07");
        let mut imported = run.clone();
        imported.import = Some(crate::run::ImportRecord {
            format: "cyclictest-json".to_string(),
            file: "x.json".to_string(),
            imported_at: "2026-11-21T00:10:12Z".to_string(),
            lacks: Vec::new(),
        });
        let mut other_period = run.clone();
        for s in &mut other_period.streams {
            s.period_ns = Some(crate::Nanos(250_000));
        }
        let mut other_probe = run.clone();
        for s in &mut other_probe.streams {
            s.probe = "noise".to_string();
        }
        for other in [renamed, imported, other_period, other_probe] {
            let key = SeriesKey::of_run(&other)[0].clone();
            assert_ne!(key, base);
            assert_ne!(key.id(), base.id());
        }
        // The same configuration on the same rig later: the same series.
        let mut later = run.clone();
        later.id = "20261122T001012Z-3f9a2c".to_string();
        later.started_at = Some("2026-11-22T00:10:12Z".to_string());
        assert_eq!(SeriesKey::of_run(&later)[0], base);
    }
}
