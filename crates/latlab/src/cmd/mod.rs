//! One module per subcommand.

pub mod attach;
pub mod check;
pub mod compare;
pub mod completions;
pub mod explain;
pub mod export;
pub mod import;
pub mod loads;
pub mod man;
pub mod methods;
pub mod probes;
pub mod push;
mod references;
pub mod report;
pub mod rm;
pub mod run;
pub mod runs;
pub mod scenarios;
pub mod serve;
pub mod show;
pub mod trend;
