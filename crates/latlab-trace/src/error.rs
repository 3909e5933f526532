//! The one error type of the decoder.

/// What went wrong while decoding a tracefs description or a ring-buffer page.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    /// A `format` or `header_page` file lacks a line or value the decoder needs.
    #[error("{file}: {problem}; pass the file exactly as tracefs prints it")]
    Description {
        /// Which description: `format of <event>` or `header_page`.
        file: String,
        /// What is missing or malformed.
        problem: String,
    },
    /// A page is shorter than its header says, or a record runs past its end.
    #[error("ring-buffer page: {0}; pass whole pages as read from trace_pipe_raw")]
    Page(String),
    /// A record names an event id whose `format` was not given.
    #[error("event id {0} has no format; add events/<sys>/<name>/format of that id")]
    UnknownEvent(u16),
}
