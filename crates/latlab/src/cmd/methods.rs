//! `latlab methods`: the timer probe's sleep methods.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_model::spec::TimerMethod;

/// Prints each method with one line on what it does.
pub fn execute() -> Result<u8, CliError> {
    let mut text = String::new();
    for m in TimerMethod::ALL {
        text.push_str(&format!("{:<12} {}\n", m.name(), m.describe()));
    }
    Human::Stdout.write(&text)?;
    Ok(exit::OK)
}
