//! Built-in scenarios (shipped inside the binary) and scenario files.

use crate::error::CliError;
use latlab_model::scenario::Scenario;

/// Every built-in scenario: name and TOML text.
pub const BUILT_IN: [(&str, &str); 8] = [
    (
        "wilshire-disk",
        include_str!("../scenarios/wilshire-disk.toml"),
    ),
    (
        "wilshire-ping",
        include_str!("../scenarios/wilshire-ping.toml"),
    ),
    (
        "period-sweep",
        include_str!("../scenarios/period-sweep.toml"),
    ),
    ("realfeel", include_str!("../scenarios/realfeel.toml")),
    ("osadl", include_str!("../scenarios/osadl.toml")),
    (
        "parallel-sleepers",
        include_str!("../scenarios/parallel-sleepers.toml"),
    ),
    ("koolwal", include_str!("../scenarios/koolwal.toml")),
    ("rhealstone", include_str!("../scenarios/rhealstone.toml")),
];

/// The TOML text of a built-in scenario.
pub fn built_in(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Loads a built-in scenario by name, or a scenario file by path.
pub fn load(name_or_path: &str) -> Result<Scenario, CliError> {
    if let Some(text) = built_in(name_or_path) {
        return Scenario::parse(text, name_or_path).map_err(CliError::config);
    }
    let path = std::path::Path::new(name_or_path);
    if !path.exists() {
        return Err(CliError::config(format!(
            "unknown scenario '{name_or_path}': no built-in has that name (latlab scenarios \
             lists them) and there is no such file"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::config(format!("cannot read {name_or_path}: {e}")))?;
    Scenario::parse(&text, name_or_path).map_err(CliError::config)
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
}
