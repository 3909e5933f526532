//! Run references as users write them: `last`, `last~N`, a full id, a run's name, the
//! random suffix of its id, or a unique prefix of its id.

use crate::{RunSummary, StoreError};

/// How many candidates an ambiguous reference's error lists.
const CANDIDATES_SHOWN: usize = 10;

/// Picks the id a reference means among `runs` (newest added first).
///
/// `last` is the run added most recently and `last~N` the one N before it. Otherwise a
/// full id means that run; else every run whose name is the reference, whose id's
/// random suffix is it (`1be77d` of `20261123T090534Z-1be77d`) or whose id starts with
/// it is a candidate, and more than one is [`StoreError::Ambiguous`].
pub fn resolve_reference(reference: &str, runs: &[RunSummary]) -> Result<String, StoreError> {
    let not_found = |reason: String| StoreError::NotFound {
        reference: reference.to_string(),
        reason,
    };
    let r = reference.trim();
    if let Some(back) = r.strip_prefix("last") {
        let n: usize = match back.strip_prefix('~') {
            None if back.is_empty() => 0,
            Some(n) => n
                .parse()
                .map_err(|_| not_found("write last, last~1, last~2, ...".to_string()))?,
            None => return Err(not_found("write last, last~1, last~2, ...".to_string())),
        };
        return runs
            .get(n)
            .map(|run| run.id.clone())
            .ok_or_else(|| not_found(format!("the store holds {} run(s)", runs.len())));
    }
    if r.is_empty() {
        return Err(not_found(
            "give a run id, a prefix of one, a run's name, or last".to_string(),
        ));
    }
    if let Some(run) = runs.iter().find(|run| run.id == r) {
        return Ok(run.id.clone());
    }
    let suffix = |id: &str| id.rsplit_once('-').map(|(_, s)| s.to_string());
    let candidates: Vec<&RunSummary> = runs
        .iter()
        .filter(|run| {
            run.name.as_deref() == Some(r)
                || suffix(&run.id).as_deref() == Some(r)
                || run.id.starts_with(r)
        })
        .collect();
    match candidates.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(not_found(
            "no run has that name or id (latlab runs lists them)".to_string(),
        )),
        many => Err(StoreError::Ambiguous {
            reference: r.to_string(),
            candidates: many
                .iter()
                .take(CANDIDATES_SHOWN)
                .map(|run| describe(run))
                .collect(),
            more: many.len().saturating_sub(CANDIDATES_SHOWN),
        }),
    }
}

/// A candidate as an ambiguous reference's error lists it: its id, with its name and
/// when it started where known.
fn describe(run: &RunSummary) -> String {
    let details: Vec<String> = [
        run.name.as_ref().map(|n| format!("named {n}")),
        run.started_at.as_ref().map(|t| format!("started {t}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    match details.is_empty() {
        true => run.id.clone(),
        false => format!("{} ({})", run.id, details.join(", ")),
    }
}
