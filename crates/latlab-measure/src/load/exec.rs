//! `exec:COMMAND`: any external command as a load (a kernel build, stress-ng, ...),
//! run by `sh -c` in the load's process group. Whatever the command starts is ended
//! with the worker's other descendants when the load stops, even outside the group.

use super::{Load, LoadContext, LoadError, LoadInfo, Params, Work};
use std::process::{Command, Stdio};
use std::time::Duration;

pub(super) struct Exec;

/// The exec load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "exec",
    summary:
        "any command, e.g. exec:make -j4 -C ~/linux; its rate is the CPU time it used per second",
    params: &[],
    work: Work {
        unit: "CPU ns",
        rate_unit: "CPU s/s",
        scale: 1e-9,
    },
    load: &Exec,
};

impl Load for Exec {
    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let command = params.get("command").map(String::as_str).unwrap_or("");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&ctx.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LoadError::Failed(format!("cannot run sh -c {command:?}: {e}")))?;
        // A command that ends at once (mistyped, not found) did not start.
        std::thread::sleep(Duration::from_millis(200));
        if let Some(status) = child
            .try_wait()
            .map_err(|e| LoadError::Failed(format!("waiting for {command:?}: {e}")))?
        {
            return Err(LoadError::Failed(format!(
                "{command:?} ended at once ({status}): check the command"
            )));
        }
        ctx.ready();
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| LoadError::Failed(format!("waiting for {command:?}: {e}")))?
            {
                break Some(status);
            }
            if ctx.stopped() {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Stopping: latlab sends the whole process group SIGTERM; a worker whose latlab
        // died (SIGKILL) is stopping on its own, so the command is told here too. One
        // that outlives the grace is killed with the rest of the worker's descendants.
        let status = match status {
            Some(s) => Some(s),
            None => {
                let _ = latlab_rt::process::signal_child(&mut child, libc::SIGTERM);
                let until = std::time::Instant::now() + super::worker::CHILDREN_GRACE;
                loop {
                    let done = child
                        .try_wait()
                        .map_err(|e| LoadError::Failed(format!("waiting for {command:?}: {e}")))?;
                    if done.is_some() || std::time::Instant::now() >= until {
                        break done;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        };
        ctx.count(0, latlab_rt::shared::children_cpu_ns());
        // A command that ends on its own with status 0 finished (the run reports that
        // it ended early); any other status is a failure.
        if !ctx.stopped() && !status.is_some_and(|s| s.success()) {
            let status = status.map_or_else(|| "?".to_string(), |s| s.to_string());
            return Err(LoadError::Failed(format!(
                "{command:?} ended on its own ({status})"
            )));
        }
        Ok(())
    }
}
