//! `latlab methods`: the timer probe's sleep methods, the choices of its `method`
//! parameter in the registry.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::probe::timer;
use latlab_model::spec::TimerMethod;

/// Prints each method with one line on what it does.
pub fn execute() -> Result<u8, CliError> {
    let mut text = String::new();
    let methods = timer::INFO.params.iter().filter(|p| p.key == "method");
    for name in methods.flat_map(|p| p.choices) {
        let describe = TimerMethod::parse(name).map_or("", |m| m.describe());
        text.push_str(&format!("{name:<12} {describe}\n"));
    }
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}
