//! One module per subcommand.

pub mod loads;
pub mod methods;
pub mod run;
pub mod runs;
