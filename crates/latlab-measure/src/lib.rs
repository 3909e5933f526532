//! Measurement on the machine latlab runs on: the plan (a run's options and scenario
//! resolved and checked, [`plan`]), probes, the runner that hosts them,
//! live statistics for the display, warnings, host facts and the readiness audit
//! ([`check`]), and the cost of tracing a run ([`observer`]).
//!
//! Data flows one way: a [`plan::RunInput`] resolves into a [`plan::RunPlan`]; each
//! phase's [`runner::RunRequest`] plus its [`probe::Probe`] go in, a
//! [`runner::RunOutcome`] (streams in the Run format, events, warnings, conditions)
//! comes out. All kernel access goes through `latlab-rt`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod breaktrace;
pub mod check;
pub mod checkpoint;
pub mod cpus;
pub mod explain;
pub mod facts;
pub mod live;
pub mod load;
pub mod notice;
pub mod observer;
pub mod plan;
pub mod probe;
pub mod record;
pub mod runner;
pub mod stall;
pub mod telemetry;
