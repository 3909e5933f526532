//! `latlab probes`: every probe of the registry, with its definition and parameters.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::probe::catalogue::{self, CATALOGUE};
use latlab_measure::probe::info::ProbeInfo;
use std::fmt::Write as _;

/// Lists the probes: one line each, or (`long`) what a sample spans and the parameters.
pub fn execute(long: bool) -> Result<u8, CliError> {
    Human::Stdout.write(&listing(long))?;
    Ok(exit::OK)
}

/// The listing, made from the registry.
fn listing(long: bool) -> String {
    let mut text = String::new();
    // Names in one column, as wide as the longest.
    let width = CATALOGUE.iter().map(|p| p.name.len()).fold(8, usize::max);
    let indent = " ".repeat(width + 1);
    for info in CATALOGUE {
        let _ = writeln!(text, "{:<width$} {}", info.name, info.summary);
        if !long {
            continue;
        }
        for line in wrap(info.definition, 80) {
            let _ = writeln!(text, "{indent}{line}");
        }
        for p in info.params {
            let values = if p.choices.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.choices.join("|"))
            };
            let _ = writeln!(text, "{indent}{}={}{values}: {}", p.key, p.default, p.help);
        }
        if !info.honours.is_empty() {
            let flags: Vec<&str> = info.honours.iter().map(|s| s.flag()).collect();
            let _ = writeln!(text, "{indent}also uses {}", flags.join(", "));
        }
        for line in policies(info) {
            let _ = writeln!(text, "{indent}{line}");
        }
        text.push('\n');
    }
    if !long {
        text.push_str(
            "\nlatlab run --probe NAME[:key=value,...]; latlab probes --long for definitions\n",
        );
    }
    text
}

/// The policies a probe runs at with its defaults, then with each parameter value that
/// changes them.
fn policies(info: &ProbeInfo) -> Vec<String> {
    let defaults = match catalogue::parse(info.name) {
        Ok(spec) => spec.params,
        Err(_) => return Vec::new(),
    };
    let at_defaults = (info.policies)(&defaults);
    let mut lines = vec![format!("-P: {at_defaults}")];
    for p in info.params {
        for choice in p.choices {
            let mut params = defaults.clone();
            params.insert(p.key.to_string(), choice.to_string());
            let with = (info.policies)(&params);
            if with != at_defaults {
                lines.push(format!("-P with {}={choice}: {with}", p.key));
            }
        }
    }
    lines
}

/// Splits `text` into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("never empty");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_is_the_registry() {
        insta::assert_snapshot!("probes", listing(false));
        insta::assert_snapshot!("probes_long", listing(true));
    }
}
