//! One module per subcommand.

pub mod loads;
pub mod methods;
pub mod plan;
pub mod run;
pub mod runs;
pub mod scenarios;
