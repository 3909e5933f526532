//! Scenario files: what to measure, under which loads, in which phases, judged how.
//!
//! A scenario is TOML. Every key is checked: an unknown one is an error naming the key
//! and its line. Values stay text here (`"50ms"`, `"f:95"`) and are validated, with
//! the command line's flags, into one plan by `latlab_measure::plan`.
//!
//! ```toml
//! name = "wilshire-disk"
//! description = "50 ms relative sleeps under dd + sync (Rapid Reaction Tables 1, 5)"
//!
//! [timer]
//! method = "rel"
//! period = "50ms"
//!
//! [[phase]]
//! name = "disk"
//! periods = 1000
//! loads = ["disk"]
//!
//! [thresholds]
//! max = "20ms"
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;

/// Why a scenario could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ScenarioError {
    /// The file or built-in name.
    pub source_name: String,
    /// What is wrong, with the line when known.
    pub message: String,
}

/// A scenario as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// One line on what it measures and where it comes from.
    pub description: String,
    /// CPUs to measure (`all`, `0-3`).
    pub cpus: Option<String>,
    /// CPUs for the loads.
    pub load_cpus: Option<String>,
    /// Default duration of each phase.
    pub duration: Option<String>,
    /// Warm-up discarded at the start of each phase.
    pub warm_up: Option<String>,
    /// Timer probe settings.
    #[serde(default)]
    pub timer: TimerSection,
    /// Phases, in order (at least one).
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseSection>,
    /// Thresholds: metric → limit (`max = "100us"`, `"p99.9" = "80us"`).
    #[serde(default)]
    pub thresholds: BTreeMap<String, String>,
}

/// The `[timer]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerSection {
    /// Sleep method.
    pub method: Option<String>,
    /// Period.
    pub period: Option<String>,
    /// Clock.
    pub clock: Option<String>,
    /// Scheduling policy (`f:95`).
    pub priority: Option<String>,
    /// For hybrid.
    pub hybrid_margin: Option<String>,
    /// Timer slack.
    pub timer_slack: Option<String>,
    /// Keep samples above this.
    pub spike: Option<String>,
    /// Largest samples kept.
    pub top: Option<usize>,
    /// Timeline interval.
    pub interval: Option<String>,
    /// Break-trace limit.
    pub breaktrace: Option<String>,
}

/// One `[[phase]]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSection {
    /// Name (unique within the scenario).
    pub name: String,
    /// How long (default: the scenario's `duration`).
    pub duration: Option<String>,
    /// Or how many periods.
    pub periods: Option<u64>,
    /// This phase's period, overriding `[timer] period` (a period sweep).
    pub period: Option<String>,
    /// This phase's sleep method, overriding `[timer] method`.
    pub method: Option<String>,
    /// Measuring threads, placed round-robin on the CPUs (default one per CPU).
    pub threads: Option<usize>,
    /// A primitive probe instead of the timer probe (`"msg:transport=sysv"`; see
    /// `latlab probes`).
    pub probe: Option<String>,
    /// Loads during the phase (`"hackbench"`, `"memory:size=32M"`).
    #[serde(default)]
    pub loads: Vec<String>,
}

impl Scenario {
    /// Parses a scenario; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            source_name: source_name.to_string(),
            message,
        };
        let scenario: Scenario = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            let message = e.message().to_string();
            err(match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            })
        })?;
        // Results name their scenario: an empty name would be indistinguishable from none.
        if scenario.name.trim().is_empty() {
            return Err(err(
                "name is empty: give the scenario a short name, e.g. name = \"mine\"".to_string(),
            ));
        }
        if scenario.phases.is_empty() {
            return Err(err(
                "no [[phase]]: a scenario needs at least one, e.g. [[phase]] name = \"main\""
                    .to_string(),
            ));
        }
        let mut names: Vec<&str> = scenario.phases.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(err(format!(
                "two phases are named '{}': name them apart",
                w[0]
            )));
        }
        for phase in &scenario.phases {
            if phase.name.trim().is_empty() {
                return Err(err("a phase has an empty name".to_string()));
            }
            if phase.duration.is_some() && phase.periods.is_some() {
                return Err(err(format!(
                    "phase '{}' gives both duration and periods: keep one",
                    phase.name
                )));
            }
        }
        Ok(scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
description = "test"
duration = "2s"

[timer]
method = "rel"
period = "50ms"

[[phase]]
name = "idle"

[[phase]]
name = "load"
periods = 10
loads = ["hackbench", "disk:size=16M"]

[thresholds]
max = "20ms"
"p99.9" = "10ms"
"#;

    #[test]
    fn parses_phases_loads_and_thresholds() {
        let s = Scenario::parse(GOOD, "t.toml").unwrap();
        assert_eq!(s.phases.len(), 2);
        assert_eq!(s.phases[1].loads, vec!["hackbench", "disk:size=16M"]);
        assert_eq!(s.timer.method.as_deref(), Some("rel"));
        assert_eq!(s.thresholds["p99.9"], "10ms");
    }

    #[test]
    fn unknown_keys_are_named_with_their_line() {
        let text = GOOD.replace("periods = 10", "periodz = 10");
        let e = Scenario::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml: line 15:"), "{e}");
        assert!(e.contains("periodz"), "{e}");
        let text = GOOD.replace("[timer]", "[timer]\ncolour = \"red\"");
        let e = Scenario::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("colour") && e.contains("line 7:"), "{e}");
    }

    #[test]
    fn structural_mistakes_are_refused() {
        let e = Scenario::parse("name = \"x\"\ndescription = \"y\"\n", "x").unwrap_err();
        assert!(e.message.contains("at least one"));
        let dup = format!("{GOOD}\n[[phase]]\nname = \"idle\"\n");
        assert!(Scenario::parse(&dup, "x")
            .unwrap_err()
            .message
            .contains("two phases"));
        let both = GOOD.replace("periods = 10", "periods = 10\nduration = \"1s\"");
        assert!(Scenario::parse(&both, "x")
            .unwrap_err()
            .message
            .contains("keep one"));
        for name in ["", "  "] {
            let unnamed = GOOD.replace("name = \"t\"", &format!("name = \"{name}\""));
            let e = Scenario::parse(&unnamed, "x").unwrap_err().message;
            assert!(e.starts_with("name is empty"), "{e}");
        }
        assert!(Scenario::parse("name = ", "x")
            .unwrap_err()
            .message
            .starts_with("line 1"));
    }
}
