//! Built-in scenarios (shipped inside latlab) and scenario files: the first step of a
//! plan, when the run names one.

use super::ResolveError;
use latlab_model::scenario::{PhaseSection, Scenario};
use std::path::Path;

/// Every built-in scenario: name and TOML text.
pub const BUILT_IN: [(&str, &str); 8] = [
    (
        "wilshire-disk",
        include_str!("../../scenarios/wilshire-disk.toml"),
    ),
    (
        "wilshire-ping",
        include_str!("../../scenarios/wilshire-ping.toml"),
    ),
    (
        "period-sweep",
        include_str!("../../scenarios/period-sweep.toml"),
    ),
    ("realfeel", include_str!("../../scenarios/realfeel.toml")),
    ("osadl", include_str!("../../scenarios/osadl.toml")),
    (
        "parallel-sleepers",
        include_str!("../../scenarios/parallel-sleepers.toml"),
    ),
    ("koolwal", include_str!("../../scenarios/koolwal.toml")),
    (
        "rhealstone",
        include_str!("../../scenarios/rhealstone.toml"),
    ),
];

/// The TOML text of a built-in scenario.
pub fn built_in(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Largest scenario file read: a scenario is a few KiB, and anything this large is the
/// wrong file (reading `/dev/zero` would otherwise take all the memory there is).
pub const MAX_SCENARIO_BYTES: u64 = 64 << 10;

/// Loads a built-in scenario by name, or a scenario file by path.
pub fn load(name_or_path: &str) -> Result<Scenario, ResolveError> {
    if let Some(text) = built_in(name_or_path) {
        return Ok(Scenario::parse(text, name_or_path)?);
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        return Err(ResolveError::UnknownScenario(name_or_path.to_string()));
    }
    let text = read_scenario_file(path)?;
    Ok(Scenario::parse(&text, name_or_path)?)
}

/// What a run without a scenario measures: one phase, every value from flags or
/// defaults.
pub fn none() -> Scenario {
    Scenario {
        name: String::new(),
        description: String::new(),
        cpus: None,
        load_cpus: None,
        duration: None,
        warm_up: None,
        timer: Default::default(),
        phases: vec![PhaseSection {
            name: "main".to_string(),
            ..Default::default()
        }],
        thresholds: Default::default(),
    }
}

/// Reads a scenario file: a regular file of at most [`MAX_SCENARIO_BYTES`], in UTF-8.
fn read_scenario_file(path: &Path) -> Result<String, ResolveError> {
    use std::io::Read;
    let cannot = |source| ResolveError::ScenarioUnreadable {
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: opening a FIFO would wait for a writer.
    let kind = std::fs::metadata(path).map_err(cannot)?.file_type();
    if !kind.is_file() {
        return Err(ResolveError::ScenarioNotAFile {
            path: path.to_path_buf(),
            kind: describe(kind),
        });
    }
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(ResolveError::ScenarioTooLarge {
            path: path.to_path_buf(),
            max_kib: MAX_SCENARIO_BYTES >> 10,
        });
    }
    String::from_utf8(bytes).map_err(|source| ResolveError::ScenarioNotText {
        path: path.to_path_buf(),
        source,
    })
}

fn describe(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_parses_and_is_named_after_its_file() {
        for (name, text) in BUILT_IN {
            let s = Scenario::parse(text, name).unwrap();
            assert_eq!(s.name, name);
            assert!(!s.description.is_empty());
        }
    }

    #[test]
    fn a_directory_is_refused_as_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = load(dir.path().to_str().unwrap()).unwrap_err();
        assert!(matches!(
            e,
            ResolveError::ScenarioNotAFile {
                kind: "a directory",
                ..
            }
        ));
    }

    #[test]
    fn a_name_that_is_neither_built_in_nor_a_file_is_unknown() {
        let e = load("no-such-scenario-here").unwrap_err();
        assert!(e.to_string().contains("latlab scenarios lists them"), "{e}");
    }
}
