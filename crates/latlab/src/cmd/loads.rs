//! `latlab loads`.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::load::{describe_params, REGISTRY};

/// Lists every load with its description and parameters.
pub fn execute() -> Result<u8, CliError> {
    Human::Stdout.write(&listing())?;
    Ok(exit::OK)
}

/// The listing, made from the registry of loads.
fn listing() -> String {
    let mut text = String::new();
    for load in REGISTRY {
        text.push_str(&format!(
            "{:<10} {}\n{:<10} rate in {}; parameters: {}\n",
            load.name,
            load.summary,
            "",
            load.work.rate_unit,
            describe_params(load)
        ));
    }
    text.push_str(
        "\nUse: latlab run --load NAME[:key=value,...] (repeatable), --load-cpus LIST.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_is_the_registry() {
        insta::assert_snapshot!("loads", listing());
    }
}
