//! Collection for `--explain`: the kernel's trace events of the measured CPUs, kept
//! while measuring, and every sample above the spike threshold handed over with them.
//!
//! A [`Session`] owns a private tracefs instance (`instances/latlab-<pid>`) recording
//! the measured CPUs with the [`ExplainMode`]'s event set on the `mono` trace clock
//! (`CLOCK_MONOTONIC`, the clock samples are placed on). A reader thread, off the
//! measured CPUs at SCHED_OTHER, drains each CPU's binary buffer about ten times a
//! second into a bounded ring of pages ([`Held`]), so no spike's events are lost to the
//! kernel overwriting its buffer, and nothing is read on a measured CPU while another
//! exists. Each measuring thread's recorder pushes its spikes into a [`SpikeFeed`]
//! (lock-free, never waiting); after each drain the reader pops them, places them on
//! the trace clock and hands those whose events are all read to an [`Explainer`],
//! which attributes them from the held pages.
//!
//! The instance goes with the session on every path: finishing, dropping (an error, a
//! panic unwinding) and so also a stop by SIGINT/SIGTERM/SIGHUP, which `latlab run`
//! turns into an orderly end; after a SIGKILL the next run sweeps it.

mod attribution;
mod clock;
mod events;
mod feed;
mod reader;
mod ring;
mod session;

pub use attribution::{ExplainSoFar, RunExplainer, KEPT_EXPLANATIONS};
pub use feed::{FedSample, Origin, SpikeFeed, FEED_CAPACITY};
pub use latlab_model::explain::ExplainMode;
pub use ring::{Held, HeldPages};
pub use session::{Finished, ReaderSettings, Session};

use latlab_model::Nanos;
use std::path::PathBuf;

/// A spike handed to the [`Explainer`], placed on the trace clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FedSpike {
    /// The phase of its stream.
    pub phase: String,
    /// The stream's thread index.
    pub thread: usize,
    /// The CPU the measuring thread was pinned to (`None`: not pinned).
    pub cpu: Option<usize>,
    /// The measuring thread's kernel id (0: not known).
    pub tid: i32,
    /// When it was due, ns into the measured span (as `Spike::at_ns`).
    pub at_ns: Nanos,
    /// The sample.
    pub latency_ns: Nanos,
    /// When it was due, on CLOCK_MONOTONIC.
    pub due_monotonic_ns: i64,
    /// When it was due, on the trace clock.
    pub due_trace_ns: u64,
    /// When the measuring thread read the clock after waking (due + latency), on the
    /// trace clock.
    pub wake_trace_ns: u64,
}

/// Attributes spikes from the held pages, on the reader thread.
pub trait Explainer: Send {
    /// Called after every drain with the spikes whose events are read up to their
    /// wake-up (plus a millisecond), oldest first (often none). Take those explained out of `spikes`
    /// (e.g. `spikes.drain(..)`); any left are offered again after the next drain.
    /// `last` is the final call: tracing has stopped, every spike is in `spikes`, and
    /// none left will be offered again.
    fn drained(&mut self, held: &Held, spikes: &mut Vec<FedSpike>, last: bool);
}

/// Why a session could not start; each says what to do about it. The run goes on
/// without explanations.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// tracefs refused or lacks something (permission, no tracefs, no CPU buffer).
    #[error("{0}")]
    Trace(#[from] latlab_rt::tracefs::TraceError),
    /// No CPU was given to trace.
    #[error("no CPU to trace: explanations need the measuring threads pinned to CPUs")]
    NoCpus,
    /// A tracefs file could not be read or written.
    #[error("cannot use {path}: {source}; check that tracefs is mounted and latlab runs as root")]
    Read {
        /// The file.
        path: PathBuf,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// A format or header file did not parse.
    #[error("cannot decode {path}: {source}")]
    Description {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: latlab_trace::TraceError,
    },
    /// The trace clock cannot be related to `CLOCK_MONOTONIC`.
    #[error("cannot place trace events on CLOCK_MONOTONIC: {why}")]
    Clock {
        /// What failed.
        why: String,
    },
    /// The reader thread could not be started.
    #[error("cannot start the trace reader thread: {0}")]
    Thread(std::io::Error),
    /// The reader thread failed while the run went on: what it explained is lost.
    #[error("the trace reader failed ({why}): no spike of the run is explained")]
    Reader {
        /// What failed.
        why: String,
    },
}

#[cfg(test)]
pub(crate) mod tests;
