//! The only part of latlab that talks to the kernel.
//!
//! Everything a latency measurement changes on the system (scheduling policy, CPU
//! affinity, locked memory, `/dev/cpu_dma_latency`, timer slack, tracefs) is reached
//! through this crate, and every change that outlives a call is held by a guard that
//! restores the original value when dropped — on success, on error and on unwinding.
//!
//! The sleep methods of the timer probe live in [`wake`]: each is a [`wake::WakeSource`]
//! that blocks until an absolute deadline and reports when it woke, so one measuring
//! loop serves them all and can be driven by a simulated clock in tests.

#![deny(missing_docs)]

pub mod affinity;
pub mod clock;
pub mod cpuid;
pub mod delivery;
pub mod dma;
mod error;
pub mod handover;
pub mod icmp;
pub mod ipc;
pub mod memory;
pub mod partner;
pub mod periodic;
pub mod process;
pub mod pthread;
pub mod sched;
pub mod shared;
pub mod signal;
pub mod sigwait;
pub mod slack;
pub mod trace;
pub mod tracefs;
pub mod wake;

pub use error::RtError;
/// The periodic task for applications (see [`periodic`]).
pub use periodic::Periodic;
