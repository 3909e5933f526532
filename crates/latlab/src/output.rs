//! Where human output goes, and writing that survives a closed pipe.

use crate::error::{exit, CliError};
use std::io::{self, IsTerminal, Write};

/// Treats a closed pipe as done rather than as an error.
pub fn ignore_closed(result: Result<(), CliError>) -> Result<(), CliError> {
    match result {
        Err(e) if e.code == exit::OK => Ok(()),
        other => other,
    }
}

/// The human-facing stream: stdout, or stderr when stdout carries JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Human {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Human {
    /// True when the stream is a terminal.
    pub fn is_terminal(self) -> bool {
        match self {
            Human::Stdout => io::stdout().is_terminal(),
            Human::Stderr => io::stderr().is_terminal(),
        }
    }

    /// Writes text. A closed pipe ends the program quietly with exit code 0, as a
    /// pager or `head` closing the pipe is not an error.
    pub fn write(self, text: &str) -> Result<(), CliError> {
        let result = match self {
            Human::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|_| out.flush())
            }
            Human::Stderr => {
                let mut out = io::stderr().lock();
                out.write_all(text.as_bytes()).and_then(|_| out.flush())
            }
        };
        result.map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                CliError {
                    code: exit::OK,
                    message: String::new(),
                }
            } else {
                CliError::runtime(format!("cannot write output: {e}"))
            }
        })
    }
}
