use std::io;

/// A kernel call that failed, with what was being attempted.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct RtError {
    /// What latlab was trying to do, in words a user understands.
    pub what: String,
    /// The error the kernel returned.
    #[source]
    pub source: io::Error,
}

impl RtError {
    /// Wraps the current `errno` with a description of the attempted operation.
    pub fn last(what: impl Into<String>) -> Self {
        RtError {
            what: what.into(),
            source: io::Error::last_os_error(),
        }
    }

    /// Wraps a given error.
    pub fn new(what: impl Into<String>, source: io::Error) -> Self {
        RtError {
            what: what.into(),
            source,
        }
    }

    /// True when the kernel refused for lack of privilege (EPERM / EACCES).
    pub fn is_permission(&self) -> bool {
        matches!(
            self.source.raw_os_error(),
            Some(libc::EPERM) | Some(libc::EACCES)
        )
    }

    /// The raw `errno`, if any.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }
}
