//! `latlab scenarios` and `latlab scenarios show NAME`.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::plan::scenarios::{built_in, BUILT_IN};
use latlab_model::scenario::Scenario;
use latlab_model::width::Width;

/// Lists the built-in scenarios, or prints one so it can be copied and edited.
pub fn execute(show: Option<&str>) -> Result<u8, CliError> {
    if let Some(name) = show {
        let text = built_in(name).ok_or_else(|| {
            CliError::usage(
                "scenarios show",
                format!("no built-in scenario '{name}' (latlab scenarios lists them)"),
            )
        })?;
        Human::Stdout.write(text)?;
        return Ok(exit::OK);
    }
    Human::Stdout.write(&listing(crate::terminal::width(Human::Stdout))?)?;
    Ok(exit::OK)
}

/// Each built-in scenario with its description, laid out for `width`.
fn listing(width: Width) -> Result<String, CliError> {
    let mut out = String::new();
    for (name, text) in BUILT_IN {
        let s = Scenario::parse(text, name).map_err(CliError::runtime)?;
        out.push_str(&width.wrap(&s.description, &format!("{name:<18} "), &" ".repeat(19)));
        out.push('\n');
    }
    let how = "Run one: latlab run NAME (flags override it, e.g. -d 10s per phase). Copy one: \
               latlab scenarios show NAME > mine.toml; latlab run ./mine.toml";
    out.push_str(&format!("\n{}\n", width.wrap(how, "", "")));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_parses_and_is_listed() {
        let listing = |width| listing(width).expect("built-in scenarios parse");
        insta::assert_snapshot!("scenarios", listing(Width::Unlimited));
        let at_80 = listing(Width::Columns(80));
        assert!(Width::Columns(80).fits(&at_80));
        insta::assert_snapshot!("scenarios_at_80", at_80);
    }
}
