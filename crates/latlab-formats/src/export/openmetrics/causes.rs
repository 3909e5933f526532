//! The explanation of a Run's spikes as counters: per cause, phase and CPU, the time
//! it took from the explained spikes and how many it contributed to; per outcome, the
//! spikes seen. Absent when the run was not explained, or could not be.

use super::{escape_label, seconds, Family, Kind, Sample};
use latlab_model::explain::Explain;
use latlab_model::run::Run;
use std::collections::BTreeMap;

/// The explanation's families (none when the Run holds no explanation or tracing was
/// unavailable: nothing was counted, so nothing is written, not a 0).
pub(super) fn families(run: &Run) -> Vec<Family> {
    let Some(explain) = run.explain.as_ref().filter(|e| e.unavailable.is_none()) else {
        return Vec::new();
    };
    let base = run_labels(run);
    // Summed by label set: two causes that read alike stay one series.
    let mut seconds_by: BTreeMap<String, i64> = BTreeMap::new();
    let mut spikes_by: BTreeMap<String, u64> = BTreeMap::new();
    for entry in &explain.catalogue {
        let mut labels = base.clone();
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
    vec![
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
        outcomes(explain, &base),
    ]
}

/// The spikes handed to the explainer, by what became of them: `explained`,
/// `incomplete` (explained with events lost), `unexplained`; they add up to the spikes
/// seen.
fn outcomes(explain: &Explain, base: &[(&'static str, String)]) -> Family {
    let samples = [
        ("explained", explain.spikes_explained),
        ("incomplete", explain.spikes_incomplete),
        ("unexplained", explain.spikes_unexplained),
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

/// The run's own labels: `run`, and `host` when known.
fn run_labels(run: &Run) -> Vec<(&'static str, String)> {
    let mut labels = vec![("run", run.id.clone())];
    if let Some(host) = &run.host {
        labels.push(("host", host.hostname.clone()));
    }
    labels
}

/// Labels as `name="value",...`, empty values left out (an absent label to
/// Prometheus).
fn join(labels: &[(&'static str, String)]) -> String {
    labels
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| format!("{name}=\"{}\"", escape_label(value)))
        .collect::<Vec<_>>()
        .join(",")
}
