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

/// Largest scenario file read: a scenario is a few KiB, and anything this large is the
/// wrong file (reading `/dev/zero` would otherwise take all the memory there is).
pub const MAX_SCENARIO_BYTES: u64 = 64 << 10;

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
    let text = read_scenario_file(path)?;
    Scenario::parse(&text, name_or_path).map_err(CliError::config)
}

/// Reads a scenario file: a regular file of at most [`MAX_SCENARIO_BYTES`], in UTF-8.
fn read_scenario_file(path: &std::path::Path) -> Result<String, CliError> {
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| CliError::config(format!("cannot read {shown}: {e}"));
    // Checked before opening: opening a FIFO would wait for a writer.
    let kind = std::fs::metadata(path).map_err(cannot)?.file_type();
    if !kind.is_file() {
        return Err(CliError::config(format!(
            "{shown} is not a regular file ({}): give a scenario file (TOML) or a built-in \
             name (latlab scenarios lists them)",
            describe(kind)
        )));
    }
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(CliError::config(format!(
            "{shown} is larger than {} KiB, the most a scenario file may be (scenarios \
             are a few KiB): is it the right file?",
            MAX_SCENARIO_BYTES >> 10
        )));
    }
    String::from_utf8(bytes)
        .map_err(|e| CliError::config(format!("{shown} is not UTF-8 text: {e}")))
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
}
