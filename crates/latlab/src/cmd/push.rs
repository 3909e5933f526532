//! `latlab push`: the runs kept in the local store while their central store could not
//! be reached, sent to it. What the central store holds decides: a run it lacks is
//! saved, one it holds as running is replaced, one it holds as ended is left alone — so
//! pushing twice stores a run once.

use crate::cli::PushArgs;
use crate::error::{exit, CliError};
use crate::store::{outbox_path, pushed_line, StoreLocation};
use latlab_store::SqliteStore;

/// Runs `latlab push`.
pub fn execute(args: &PushArgs) -> Result<u8, CliError> {
    let url = match &args.store {
        None => None,
        Some(StoreLocation::Url(u)) => Some(u.as_str()),
        Some(StoreLocation::Path(p)) => {
            return Err(CliError::usage(
                "--store",
                format!(
                    "{}: runs are pushed to a central store, a postgres:// URL",
                    p.display()
                ),
            ))
        }
    };
    let mut local = SqliteStore::open(&outbox_path())?;
    let alive = |p: &latlab_model::progress::Progress| {
        latlab_rt::process::is_same_process_alive(p.pid, p.pid_start_ticks)
    };
    let boot = latlab_rt::process::boot_id();
    latlab_store::RunStore::recover(&mut local, boot.as_deref(), &alive)?;
    let (pushed, failed) = latlab_store::push(&mut local, url, &alive)?;
    if pushed.is_empty() && failed.is_empty() {
        println!("nothing to push: {} owes no run", local.path().display());
    }
    for p in &pushed {
        println!("{}", pushed_line(p));
    }
    for (id, e) in &failed {
        eprintln!("latlab: error: run {id} not pushed: {e}");
    }
    Ok(match failed.is_empty() {
        true => exit::OK,
        false => exit::RUNTIME,
    })
}
