//! Views of Runs that need nothing but Runs:
//!
//! * [`report`] — a report of one or several runs as a self-contained HTML page,
//!   Markdown, terminal text, or one plot as SVG ([`report::render`]);
//! * [`compare`] — runs side by side with a regression verdict that accounts for
//!   sampling noise;
//! * [`table`] — tables for a terminal, fitted to its width.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod compare;
pub mod report;
pub mod table;
