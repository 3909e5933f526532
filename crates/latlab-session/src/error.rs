//! Errors that end a command, each with the exit code it stands for.

use std::fmt;

/// Exit codes (a contract for CI scripts).
pub mod exit {
    /// Ran and passed, or no thresholds were set.
    pub const OK: u8 = 0;
    /// Ran, and a threshold or regression check failed.
    pub const FAILED: u8 = 1;
    /// Usage or configuration error.
    pub const USAGE: u8 = 2;
    /// Could not measure.
    pub const RUNTIME: u8 = 3;
}

/// An error with its exit code.
#[derive(Debug)]
pub struct CliError {
    /// Exit code.
    pub code: u8,
    /// Message (already says what to do).
    pub message: String,
}

impl CliError {
    /// A usage or configuration error naming the flag: exit 2.
    pub fn usage(flag: &str, message: impl fmt::Display) -> CliError {
        CliError {
            code: exit::USAGE,
            message: format!("{flag}: {message}"),
        }
    }

    /// A configuration error without a single flag: exit 2.
    pub fn config(message: impl fmt::Display) -> CliError {
        CliError {
            code: exit::USAGE,
            message: message.to_string(),
        }
    }

    /// A runtime failure: exit 3.
    pub fn runtime(message: impl fmt::Display) -> CliError {
        CliError {
            code: exit::RUNTIME,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<latlab_store::StoreError> for CliError {
    /// What the user must change (a path, a permission, an id) is a configuration
    /// error; what may pass by itself (a full disk, a lock, a failed query, a server
    /// down or not answering) is a runtime one.
    fn from(e: latlab_store::StoreError) -> Self {
        use latlab_store::StoreError;
        match e {
            StoreError::Full { .. } | StoreError::Locked { .. } | StoreError::Sql(_) => {
                CliError::runtime(e)
            }
            e if e.is_unavailable() => CliError::runtime(e),
            _ => CliError::config(e),
        }
    }
}
