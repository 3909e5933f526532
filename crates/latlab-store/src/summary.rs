//! What the store's listing shows of a run, and how listings are filtered: everything
//! `latlab runs` needs to tell runs apart without reading their whole JSON.

use latlab_model::progress::Progress;
use latlab_model::run::{Percentile, ProbePlan, Run};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// One row of the store's listing. Unknown is `None`, never a stand-in.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// The user's name for it.
    pub name: Option<String>,
    /// The user's tags.
    pub tags: BTreeMap<String, String>,
    /// The user's note.
    pub note: Option<String>,
    /// When it entered this store (RFC 3339 UTC); runs are listed newest added first.
    pub added_at: Option<String>,
    /// Measured start (RFC 3339 UTC).
    pub started_at: Option<String>,
    /// Host name.
    pub host: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Scenario name.
    pub scenario: Option<String>,
    /// Each probe with its method (`timer abs`, `msg sysv`), in phase order, once each.
    pub probes: Option<Vec<String>>,
    /// The periods of its streams, in phase order, once each.
    pub periods_ns: Option<Vec<i64>>,
    /// The CPUs measured.
    pub cpus: Option<Vec<usize>>,
    /// The measured span, all phases together.
    pub duration_ns: Option<i64>,
    /// The background loads as given (`hackbench`, `memory:size=32M`), once each; empty
    /// when none ran, `None` for an import whose source does not say.
    pub loads: Option<Vec<String>>,
    /// Worst p99.9 over the run's streams (a bound when one stream's is).
    pub p99_9: Option<Percentile>,
    /// Worst maximum over the run's streams, ns.
    pub max_ns: Option<i64>,
    /// `pass`, `fail`, `undecided` or `none`.
    pub verdict: String,
    /// The run is degraded.
    pub degraded: bool,
    /// A run that has not ended normally: running (with its checkpoints) or died.
    /// `None` for a run that ended.
    pub progress: Option<Progress>,
}

/// What a run's listing shows beyond the store's first index columns, taken from the
/// Run itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Listing {
    pub name: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub note: Option<String>,
    pub probes: Option<Vec<String>>,
    pub periods_ns: Option<Vec<i64>>,
    pub cpus: Option<Vec<usize>>,
    pub duration_ns: Option<i64>,
    pub loads: Option<Vec<String>>,
}

/// `items` without repeats, in first-seen order; `None` when there are none.
fn once_each<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Option<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    (!out.is_empty()).then_some(out)
}

impl Listing {
    pub(crate) fn of(run: &Run) -> Listing {
        let probes = once_each(run.streams.iter().map(|s| match &s.method {
            Some(method) => format!("{} {method}", s.probe),
            None => s.probe.clone(),
        }));
        let planned_periods = run.plan.probes.iter().map(|p| match p {
            ProbePlan::Timer(t) => t.period_ns.0,
            ProbePlan::Primitive(p) => p.period_ns.0,
        });
        let periods_ns = once_each(run.streams.iter().filter_map(|s| s.period_ns.map(|p| p.0)))
            .or_else(|| once_each(planned_periods));
        let mut cpus: Vec<usize> = run
            .plan
            .cpus
            .iter()
            .chain(run.plan.phases.iter().flat_map(|p| &p.cpus))
            .copied()
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let duration_ns = match run.phases.is_empty() {
            true => None,
            false => run
                .phases
                .iter()
                .map(|p| p.elapsed_ns.map(|n| n.0))
                .sum::<Option<i64>>(),
        };
        // An imported file does not say what ran beside the measurement.
        let loads = match run.import {
            Some(_) => None,
            None => Some(
                once_each(
                    run.phases
                        .iter()
                        .flat_map(|p| &p.loads)
                        .map(|l| l.spec.clone()),
                )
                .unwrap_or_default(),
            ),
        };
        Listing {
            name: run.name.clone(),
            tags: run.tags.clone(),
            note: run.note.clone(),
            probes,
            periods_ns,
            cpus: (!cpus.is_empty()).then_some(cpus),
            duration_ns,
            loads,
        }
    }
}

/// When a run stored before the store kept added times entered it: an import's time
/// of import, else the end of the run, which latlab stores as it ends.
pub(crate) fn added_before_it_was_kept(run: &Run) -> Option<String> {
    run.import
        .as_ref()
        .map(|i| i.imported_at.clone())
        .or_else(|| run.ended_at.clone())
        .or_else(|| run.started_at.clone())
}

/// Which runs a listing holds: every condition given must hold.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Host name: exact, or a pattern with `*`.
    pub host: Option<String>,
    /// Kernel release: exact, or a pattern with `*`.
    pub kernel: Option<String>,
    /// Scenario name: exact, or a pattern with `*`.
    pub scenario: Option<String>,
    /// Tags the run must have: a key with its value, or (`None`) with any value.
    pub tags: Vec<(String, Option<String>)>,
    /// Added at or after this instant.
    pub added_since: Option<SystemTime>,
    /// Added before this instant.
    pub added_before: Option<SystemTime>,
}

impl RunFilter {
    /// Whether `run` passes. A run whose added time is unknown passes no time bound.
    pub fn matches(&self, run: &RunSummary) -> bool {
        let text = |pattern: &Option<String>, value: &Option<String>| match pattern {
            None => true,
            Some(p) => value.as_deref().is_some_and(|v| glob(p, v)),
        };
        let added = run
            .added_at
            .as_deref()
            .and_then(latlab_model::stamp::parse_rfc3339);
        let since = self
            .added_since
            .is_none_or(|bound| added.is_some_and(|a| a >= bound));
        let before = self
            .added_before
            .is_none_or(|bound| added.is_some_and(|a| a < bound));
        text(&self.host, &run.host)
            && text(&self.kernel, &run.kernel)
            && text(&self.scenario, &run.scenario)
            && self.tags.iter().all(|(key, value)| {
                run.tags
                    .get(key)
                    .is_some_and(|v| value.as_ref().is_none_or(|want| want == v))
            })
            && since
            && before
    }
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters and
/// everything else for itself.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    if !text.ends_with(last) {
        return false;
    }
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exactly_or_with_stars() {
        assert!(glob("6.18.0-rt", "6.18.0-rt"));
        assert!(!glob("6.18", "6.18.0-rt"));
        assert!(glob("6.18*", "6.18.0-rt"));
        assert!(glob("*-rt", "6.18.0-rt"));
        assert!(glob("*18*rt", "6.18.0-rt"));
        assert!(glob("*", ""));
        assert!(!glob("a*a", "a"));
        assert!(!glob("*rt*x", "6.18.0-rt"));
    }
}
