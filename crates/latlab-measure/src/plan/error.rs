//! Why flags and a scenario do not make a plan. Every error starts with where the value
//! came from (`--period`, `osadl: timer.period`) and says what to do; all are the
//! user's to fix (the binary exits 2).

use super::layered::Origin;
use crate::probe::info::{PlanError, Setting};
use latlab_model::scenario::ScenarioError;
use std::path::PathBuf;

/// Why a run cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A value that does not parse.
    #[error("{origin}: {why}")]
    Invalid {
        /// Where it came from.
        origin: Origin,
        /// What is wrong, and what is accepted.
        why: String,
    },
    /// A value that parses but is out of range, or does not fit another setting.
    #[error("{origin}: {why}")]
    OutOfRange {
        /// Where it came from.
        origin: Origin,
        /// What is wrong, and what to give.
        why: String,
    },
    /// A setting the phase's probe does not use: it would be silently ignored.
    #[error(
        "{origin}: probe {probe} does not use {}: {}, or measure with a probe that does \
         (latlab probes --long); it uses {uses}",
        .setting.flag(),
        leave_out(.origin)
    )]
    Unhonoured {
        /// Where the setting was given.
        origin: Origin,
        /// The phase's probe.
        probe: &'static str,
        /// The setting.
        setting: Setting,
        /// The settings only some probes use that this one does.
        uses: String,
    },
    /// A probe that cannot run with these settings or on this system.
    #[error("{origin}: {source}")]
    Probe {
        /// The setting at fault, or where the probe was named.
        origin: Origin,
        /// Why (boxed: it is the largest of these errors, and the rarest).
        source: Box<PlanError>,
    },
    /// One metric limited twice in one place.
    #[error("{origin}: {first} already limits {metric}: keep one of the two")]
    LimitedTwice {
        /// The second limit.
        origin: Origin,
        /// The first.
        first: Origin,
        /// The metric.
        metric: String,
    },
    /// A load that cannot run here (its directory, its free space).
    #[error("{origin}: {why}")]
    LoadUnavailable {
        /// The load, or the flag naming its directory.
        origin: Origin,
        /// What is wrong and what to do.
        why: String,
    },
    /// Neither a built-in scenario nor a file.
    #[error(
        "unknown scenario '{0}': no built-in has that name (latlab scenarios lists them) \
         and there is no such file"
    )]
    UnknownScenario(String),
    /// A scenario file that cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    ScenarioUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A scenario path that is not a regular file.
    #[error(
        "{} is not a regular file ({kind}): give a scenario file (TOML) or a built-in \
         name (latlab scenarios lists them)",
        .path.display()
    )]
    ScenarioNotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead (`a directory`).
        kind: &'static str,
    },
    /// A scenario file too large to be one.
    #[error(
        "{} is larger than {max_kib} KiB, the most a scenario file may be (scenarios \
         are a few KiB): is it the right file?",
        .path.display()
    )]
    ScenarioTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        max_kib: u64,
    },
    /// A scenario file that is not text.
    #[error("{} is not UTF-8 text: {source}", .path.display())]
    ScenarioNotText {
        /// The file.
        path: PathBuf,
        /// Where the first bad byte is.
        source: std::string::FromUtf8Error,
    },
    /// A scenario that does not parse, or does not make sense.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// How to leave a setting out, depending on where it was given.
fn leave_out(origin: &Origin) -> &'static str {
    match origin {
        Origin::Scenario { .. } => "remove it from the scenario",
        Origin::Flag(_) | Origin::Default(_) => "leave it out",
    }
}
