//! `latlab probes`: every probe of the registry, with its definition and parameters.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::probe::catalogue::{self, CATALOGUE};
use latlab_measure::probe::info::ProbeInfo;
use latlab_model::width::{wrap, Width};
use std::fmt::Write as _;

/// Lists the probes: one line each, or (`long`) what a sample spans and the parameters.
pub fn execute(long: bool) -> Result<u8, CliError> {
    Human::Stdout.write(&listing(long, crate::terminal::width(Human::Stdout)))?;
    Ok(exit::OK)
}

/// The listing, made from the registry, laid out for `width`: a definition wraps at 80
/// columns after its indent, or the width if narrower; other lines only to fit.
fn listing(long: bool, width: Width) -> String {
    let mut text = String::new();
    // Names in one column, as wide as the longest.
    let names = CATALOGUE.iter().map(|p| p.name.len()).fold(8, usize::max);
    let indent = " ".repeat(names + 1);
    let line = |text: &mut String, first: &str, line: &str| {
        let _ = writeln!(text, "{}", width.wrap(line, first, &indent));
    };
    for info in CATALOGUE {
        line(&mut text, &format!("{:<names$} ", info.name), info.summary);
        if !long {
            continue;
        }
        let prose = width.or(usize::MAX).min(80 + indent.len());
        let definition = wrap(info.definition, prose, &indent, &indent);
        let _ = writeln!(text, "{}", width.fold(&definition));
        for p in info.params {
            let values = if p.choices.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.choices.join("|"))
            };
            let param = format!("{}={}{values}: {}", p.key, p.default, p.help);
            line(&mut text, &indent, &param);
        }
        if !info.honours.is_empty() {
            let flags: Vec<&str> = info.honours.iter().map(|s| s.flag()).collect();
            line(
                &mut text,
                &indent,
                &format!("also uses {}", flags.join(", ")),
            );
        }
        for policy in policies(info) {
            line(&mut text, &indent, &policy);
        }
        text.push('\n');
    }
    if !long {
        let how = "latlab run --probe NAME[:key=value,...]; latlab probes --long for definitions";
        let _ = writeln!(text, "\n{}", width.wrap(how, "", ""));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_is_the_registry() {
        insta::assert_snapshot!("probes", listing(false, Width::Unlimited));
        insta::assert_snapshot!("probes_long", listing(true, Width::Unlimited));
    }

    #[test]
    fn at_80_columns_the_listing_wraps_under_its_names() {
        let listing = listing(true, Width::Columns(80));
        assert!(Width::Columns(80).fits(&listing));
        insta::assert_snapshot!("probes_long_at_80", listing);
    }
}
