//! One module per subcommand.

pub mod methods;
pub mod run;
pub mod runs;
