//! `latlab loads`.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::load::{describe_params, REGISTRY};
use latlab_model::width::Width;

/// Lists every load with its description and parameters.
pub fn execute() -> Result<u8, CliError> {
    Human::Stdout.write(&listing(crate::terminal::width(Human::Stdout)))?;
    Ok(exit::OK)
}

/// The listing, made from the registry of loads, laid out for `width`.
fn listing(width: Width) -> String {
    let mut text = String::new();
    let indent = " ".repeat(11);
    for load in REGISTRY {
        let rate = format!(
            "rate in {}; parameters: {}",
            load.work.rate_unit,
            describe_params(load)
        );
        let name = format!("{:<10} ", load.name);
        text.push_str(&width.wrap(load.summary, &name, &indent));
        text.push('\n');
        text.push_str(&width.wrap(&rate, &indent, &indent));
        text.push('\n');
    }
    let how = "Use: latlab run --load NAME[:key=value,...] (repeatable), --load-cpus LIST.";
    text.push_str(&format!("\n{}\n", width.wrap(how, "", "")));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_is_the_registry() {
        insta::assert_snapshot!("loads", listing(Width::Unlimited));
        let at_80 = listing(Width::Columns(80));
        assert!(Width::Columns(80).fits(&at_80));
        insta::assert_snapshot!("loads_at_80", at_80);
    }
}
