//! The integration tests of latlab-model, one binary: a module per subject, so one
//! link serves them all.

mod import;
mod run_format;
