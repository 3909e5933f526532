//! latlab's data and maths, with no system calls.
//!
//! * [`units`] — integer nanoseconds ([`Nanos`]) and the unit-bearing text users type
//!   (`250us`, `1.5ms`, `2h`).
//! * [`spec`] — the values of command-line and scenario fields: CPU lists, scheduling
//!   policies, probes' methods — parsed and validated, with errors that name the fix.
//! * [`hist`] — the latency histogram (HdrHistogram, 1 ns … 60 s, 3 significant
//!   digits) and its portable encoding (V2 + DEFLATE, base64).
//! * [`run`] — the Run, latlab's one versioned result format (`latlab.run/2`).
//! * [`explain`] — what got in the way of late samples, from kernel trace events
//!   (`--explain`): each spike's parts and the catalogue of causes.
//! * [`progress`] — a run that has not ended (yet): running with its checkpoints, or
//!   died, and why.
//! * [`labels`] — what a user gives a run to tell it apart: name, tags, note.
//! * [`audit`] — the readiness audit: checks of the configuration with verdicts,
//!   evidence and fixes (`latlab check`, and stored in every Run).
//! * [`params`] — `NAME[:key=value,...]`, how probes and loads are named with their
//!   parameters: one parser, with each parameter's default and choices.
//! * [`threshold`] — pass/fail limits and the verdict they give; [`outcome`] — the exit
//!   status a Run stands for, as `latlab run` and every export give it; [`seal`] — the
//!   one rule every Run is sealed by: its warnings' codes, degraded, the verdict.
//! * [`conninfo`] — PostgreSQL's connection strings (URLs and keyword/value pairs), read
//!   as libpq reads them, and their passwords taken out.
//! * [`telemetry`] — interrupts, softirqs, steal, frequency, C-states, throttling and
//!   SMIs per timeline interval, and which of them the spikes coincide with.
//! * [`spike_correlation`] — which telemetry series the spikes coincide with.
//! * [`text`] — text for people: text from files made safe for a terminal, counts;
//!   [`width`] — how wide it may be, and text measured and wrapped to that width.
//!
//! Other tools' files are read into Runs and written from them in `latlab-formats`,
//! above this crate.
//!
//! Everything here is deterministic, so it is tested with plain unit tests.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod audit;
pub mod conninfo;
pub mod explain;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
pub mod hist;
mod judge;
pub mod labels;
pub mod outcome;
pub mod params;
pub mod progress;
pub mod published;
pub mod rate;
pub mod rig;
pub mod run;
mod run_check;
pub mod scenario;
pub mod seal;
pub mod series;
pub mod spec;
pub mod spike_correlation;
pub mod stamp;
pub mod telemetry;
pub mod text;
pub mod threshold;
pub mod units;
pub mod width;

pub use units::Nanos;
