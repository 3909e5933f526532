//! `latlab completions SHELL`: the shell's completion script, generated from the
//! command line's definition, so it knows every subcommand, flag and export format.

use crate::cli::CompletionsArgs;
use crate::error::{exit, CliError};
use crate::output::Human;

/// Prints the completion script for the chosen shell.
pub fn execute(args: &CompletionsArgs) -> Result<u8, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut crate::cli::command(),
        "latlab",
        &mut script,
    );
    Human::Stdout.write_bytes(&script)?;
    Ok(exit::OK)
}
