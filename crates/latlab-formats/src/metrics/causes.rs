//! The explanation of a run's spikes as counters: per cause, phase and CPU, the time
//! it took from the explained spikes and how many it contributed to; per outcome, the
//! spikes seen. Absent when the run was not explained, or could not be.

use super::text::{seconds, Family, Kind, Sample};
use super::{join, ExplainOutcomes};
use latlab_model::explain::CauseTotal;
use std::collections::BTreeMap;

/// The families of a `catalogue` of causes and of the `outcomes` of the spikes, with
/// the run's labels `base`.
pub(super) fn families(
    base: &[(&'static str, String)],
    catalogue: &[CauseTotal],
    outcomes: Option<ExplainOutcomes>,
) -> Vec<Family> {
    // Summed by label set: two causes that read alike stay one series.
    let mut seconds_by: BTreeMap<String, i64> = BTreeMap::new();
    let mut spikes_by: BTreeMap<String, u64> = BTreeMap::new();
    for entry in catalogue {
        let mut labels = base.to_vec();
        labels.push(("phase", entry.phase.clone()));
        if let Some(cpu) = entry.cpu {
            labels.push(("cpu", cpu.to_string()));
        }
        labels.push(("cause", entry.cause.label()));
        labels.push(("kind", entry.cause.kind_name().to_string()));
        let labels = join(&labels);
        *seconds_by.entry(labels.clone()).or_default() += entry.total_ns.0;
        *spikes_by.entry(labels).or_default() += entry.spikes;
    }
    let mut families = vec![
        Family {
            name: "latlab_spike_cause_seconds",
            kind: Kind::Counter,
            unit: "seconds",
            help: "Time a cause took from the explained spikes (latlab run --explain), per \
                   phase and CPU; kind=unexplained: time no kernel event explains.",
            samples: seconds_by
                .into_iter()
                .map(|(labels, ns)| Sample {
                    suffix: "_total",
                    labels,
                    value: seconds(ns as f64),
                })
                .collect(),
        },
        Family {
            name: "latlab_spike_cause_spikes",
            kind: Kind::Counter,
            unit: "spikes",
            help: "Explained spikes a cause contributed to, per phase and CPU.",
            samples: spikes_by
                .into_iter()
                .map(|(labels, count)| Sample {
                    suffix: "_total",
                    labels,
                    value: count.to_string(),
                })
                .collect(),
        },
    ];
    families.extend(outcomes.map(|o| outcome_family(o, base)));
    families
}

/// The spikes handed to the explainer, by what became of them.
fn outcome_family(outcomes: ExplainOutcomes, base: &[(&'static str, String)]) -> Family {
    let samples = [
        ("explained", outcomes.explained),
        ("incomplete", outcomes.incomplete),
        ("unexplained", outcomes.unexplained),
    ]
    .into_iter()
    .map(|(outcome, count)| {
        let mut labels = base.to_vec();
        labels.push(("outcome", outcome.to_string()));
        Sample {
            suffix: "_total",
            labels: join(&labels),
            value: count.to_string(),
        }
    })
    .collect();
    Family {
        name: "latlab_explain_spikes",
        kind: Kind::Counter,
        unit: "spikes",
        help: "Spikes handed to the explainer, by outcome: explained, incomplete (events \
               lost in the window), unexplained (no window to read: thread not pinned, \
               events no longer held, or its spike queue full).",
        samples,
    }
}
