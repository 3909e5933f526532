//! Signals that ask a command to stop: a flag the command looks at, never an exit in
//! the middle of its work.

use crate::error::CliError;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What ends a command that makes a Run: Ctrl-C, Ctrl-\, `kill`, and the hang-up of a
/// dropped ssh session. Each only asks to stop: exiting at once would lose the Run and
/// skip the clean-up of loads and partners (processes, files, IPC objects), and
/// stopping takes well under a second. SIGPIPE stays ignored (Rust's default): a
/// display nobody reads is no reason to stop.
pub const ENDING: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// From now on, `stop` is set when one of `signals` arrives: a flag handed out before
/// (to a store whose waits it cuts short) is raised from here on.
pub fn raise_on(stop: &Arc<AtomicBool>, signals: &[i32]) -> Result<(), CliError> {
    for &signal in signals {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| CliError::runtime(format!("cannot handle signals: {e}")))?;
    }
    Ok(())
}
