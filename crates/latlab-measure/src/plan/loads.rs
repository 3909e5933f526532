//! The loads of each phase: the scenario's for that phase plus every `--load`, checked
//! before anything runs so that a later phase cannot fail to start after earlier ones
//! have measured.

use super::layered::Origin;
use super::{PhasePlan, ResolveError, RunInput};
use crate::load::{self, LoadSpec};
use latlab_model::scenario::PhaseSection;
use std::path::Path;

/// The loads `--load` adds to every phase.
pub fn from_flags(input: &RunInput) -> Result<Vec<LoadSpec>, ResolveError> {
    parse_all(&input.loads, &Origin::flag("--load"))
}

/// A phase's loads: the scenario's for it, then those of the flags.
pub fn of_phase(
    scenario: &str,
    section: &PhaseSection,
    extra: &[LoadSpec],
) -> Result<Vec<LoadSpec>, ResolveError> {
    let origin = Origin::field(scenario, format!("phase {}: loads", section.name));
    let mut loads = parse_all(&section.loads, &origin)?;
    loads.extend(extra.iter().cloned());
    Ok(loads)
}

fn parse_all(texts: &[String], origin: &Origin) -> Result<Vec<LoadSpec>, ResolveError> {
    texts
        .iter()
        .map(|text| LoadSpec::parse(text).map_err(|e| origin.invalid(e)))
        .collect()
}

/// Checks every load of every phase: the directory they keep their files in (`dir`, or
/// the system's temporary directory), their parameters, the free space they need.
pub fn check(phases: &[PhasePlan], dir: Option<&Path>) -> Result<(), ResolveError> {
    if phases.iter().all(|p| p.loads.is_empty()) {
        return Ok(());
    }
    let base = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let origin = Origin::flag(match dir {
        Some(_) => "--load-dir",
        None => "--load",
    });
    load::check_dir(&base).map_err(|e| ResolveError::LoadUnavailable {
        origin,
        why: e.to_string(),
    })?;
    for load in phases.iter().flat_map(|p| &p.loads) {
        load.load()
            .check(&load.params, &base)
            .map_err(|e| ResolveError::LoadUnavailable {
                origin: Origin::flag(format!("--load {}", load.text)),
                why: e.to_string(),
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_loads_follow_the_phases_own() {
        let section = PhaseSection {
            name: "busy".to_string(),
            loads: vec!["cpu".to_string()],
            ..Default::default()
        };
        let extra = from_flags(&RunInput {
            loads: vec!["hackbench".to_string()],
            ..Default::default()
        })
        .unwrap();
        let names: Vec<String> = of_phase("s", &section, &extra)
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, ["cpu", "hackbench"]);
    }

    #[test]
    fn an_unknown_load_names_where_it_was_given() {
        let section = PhaseSection {
            name: "x".to_string(),
            loads: vec!["nosuch".to_string()],
            ..Default::default()
        };
        let e = of_phase("s", &section, &[]).unwrap_err();
        assert!(e.to_string().starts_with("s: phase x: loads: "), "{e}");
        let e = from_flags(&RunInput {
            loads: vec!["nosuch".to_string()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("--load: "), "{e}");
    }
}
