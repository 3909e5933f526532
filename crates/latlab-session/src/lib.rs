//! latlab's runs from plan to kept Run, between the measuring library and the binary.
//!
//! A [`session::Session`] measures a plan's phases with [sinks](sink::Sink) watching
//! (the live display, [`--listen`](listen), the [checkpoint writer](journal)); what the
//! phases measure is gathered once, in its [`ledger::Ledger`], from which both the
//! checkpoints and the final Run are made and [sealed](latlab_model::seal). `latlab
//! attach` builds its Run in [`attach`], the importers theirs in the model, and all are
//! sealed by the same rule. [`keep`] then puts the Run where it was asked to go, and
//! somewhere else when that fails: a measurement is never thrown away.
//!
//! The binary parses the command line, wires the sinks, prints and maps exit codes.

pub mod attach;
pub mod cyclictest;
pub mod error;
pub mod explaining;
pub mod http;
pub mod import;
pub mod journal;
pub mod keep;
pub mod labels;
pub mod ledger;
pub mod listen;
pub mod listing;
pub mod live_view;
pub mod output;
pub mod session;
pub mod sink;
pub mod store;
