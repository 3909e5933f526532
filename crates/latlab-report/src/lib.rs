//! Views of Runs that need nothing but Runs: for now, comparison with a statistical
//! regression verdict ([`compare`]).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod compare;
