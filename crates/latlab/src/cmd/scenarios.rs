//! `latlab scenarios` and `latlab scenarios show NAME`.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::plan::scenarios::{built_in, BUILT_IN};
use latlab_model::scenario::Scenario;

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
    Human::Stdout.write(&listing()?)?;
    Ok(exit::OK)
}

/// Each built-in scenario with its description.
fn listing() -> Result<String, CliError> {
    let mut out = String::new();
    for (name, text) in BUILT_IN {
        let s = Scenario::parse(text, name).map_err(CliError::runtime)?;
        out.push_str(&format!("{name:<18} {}\n", s.description));
    }
    out.push_str(
        "\nRun one: latlab run NAME (flags override it, e.g. -d 10s per phase). \
         Copy one: latlab scenarios show NAME > mine.toml; latlab run ./mine.toml\n",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_parses_and_is_listed() {
        insta::assert_snapshot!("scenarios", listing().expect("built-in scenarios parse"));
    }
}
