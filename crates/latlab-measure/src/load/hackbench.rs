//! `hackbench`: groups of senders and receivers passing messages over sockets or
//! pipes, as processes or threads — a reimplementation of the scheduler benchmark the
//! OSADL, Koolwal and ARM studies ran as a load.
//!
//! As in the original: each group has `fds` receivers, each reading one channel, and
//! `fds` senders, each writing a 100-byte message to every receiver of its group in
//! turn; every message written is read. Unlike the benchmark, it never finishes:
//! senders go on until the load is stopped, and every message received counts.

use super::{param_u64, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work};
use latlab_rt::partner::{exit_child, fork_single_threaded, wait_child, Forked};
use std::io::{Read, Write};
use std::time::Duration;

pub(super) struct Hackbench;

const MESSAGE: usize = 100;

/// The hackbench load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "hackbench",
    summary: "groups of senders and receivers over socketpairs or pipes, as processes or threads",
    params: &[
        ParamInfo {
            key: "groups",
            choices: &[],
            default: "4",
            help: "groups of senders and receivers",
        },
        ParamInfo {
            key: "fds",
            choices: &[],
            default: "10",
            help: "senders (and receivers) per group",
        },
        ParamInfo {
            key: "mode",
            choices: &[],
            default: "process",
            help: "process or thread",
        },
        ParamInfo {
            key: "transport",
            choices: &[],
            default: "socket",
            help: "socket or pipe",
        },
    ],
    work: Work {
        unit: "messages",
        rate_unit: "messages/s",
        scale: 1.0,
    },
    load: &Hackbench,
};

impl Load for Hackbench {
    fn check(&self, params: &Params, _dir: &std::path::Path) -> Result<(), LoadError> {
        Plan::of(params).map(|_| ())
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let plan = Plan::of(params)?;
        if plan.processes {
            return run_as_processes(&plan, ctx);
        }
        let mut tasks = Vec::new();
        for _ in 0..plan.groups {
            tasks.extend(plan.group_tasks()?);
        }
        ctx.ready();
        std::thread::scope(|s| {
            for (slot, task) in tasks.into_iter().enumerate() {
                s.spawn(move || task.run(slot, ctx));
            }
        });
        Ok(())
    }
}

struct Plan {
    groups: usize,
    fds: usize,
    processes: bool,
    pipes: bool,
}

impl Plan {
    fn of(params: &Params) -> Result<Plan, LoadError> {
        let groups = param_u64(params, "groups")? as usize;
        let fds = param_u64(params, "fds")? as usize;
        if !(1..=100).contains(&groups) || !(1..=100).contains(&fds) {
            return Err(LoadError::Spec(
                "hackbench: groups and fds from 1 to 100".into(),
            ));
        }
        let processes = match params.get("mode").map(String::as_str) {
            Some("process") => true,
            Some("thread") => false,
            other => {
                return Err(LoadError::Spec(format!(
                    "hackbench mode={}: give process or thread",
                    other.unwrap_or("")
                )))
            }
        };
        let pipes = match params.get("transport").map(String::as_str) {
            Some("socket") => false,
            Some("pipe") => true,
            other => {
                return Err(LoadError::Spec(format!(
                    "hackbench transport={}: give socket or pipe",
                    other.unwrap_or("")
                )))
            }
        };
        Ok(Plan {
            groups,
            fds,
            processes,
            pipes,
        })
    }

    /// One group's receivers and senders, connected.
    fn group_tasks(&self) -> Result<Vec<Task>, LoadError> {
        let failed = |e: std::io::Error| LoadError::Failed(format!("hackbench: {e}"));
        let mut readers = Vec::with_capacity(self.fds);
        let mut writers: Vec<Channel> = Vec::with_capacity(self.fds);
        for _ in 0..self.fds {
            let (reader, writer) = if self.pipes {
                let (r, w) = std::io::pipe().map_err(failed)?;
                (
                    Channel::Pipe(std::os::fd::OwnedFd::from(r).into()),
                    Channel::Pipe(std::os::fd::OwnedFd::from(w).into()),
                )
            } else {
                let (r, w) = std::os::unix::net::UnixStream::pair().map_err(failed)?;
                (Channel::Socket(r), Channel::Socket(w))
            };
            readers.push(reader);
            writers.push(writer);
        }
        let mut tasks: Vec<Task> = readers.into_iter().map(Task::Receive).collect();
        for _ in 0..self.fds {
            let mine = writers
                .iter()
                .map(Channel::try_clone)
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            tasks.push(Task::Send(mine));
        }
        // The originals close here: each receiver sees end-of-file once its group's
        // senders are gone.
        Ok(tasks)
    }
}

/// One end of a message channel.
enum Channel {
    Socket(std::os::unix::net::UnixStream),
    Pipe(std::fs::File),
}

impl Channel {
    fn try_clone(&self) -> std::io::Result<Channel> {
        Ok(match self {
            Channel::Socket(s) => Channel::Socket(s.try_clone()?),
            Channel::Pipe(f) => Channel::Pipe(f.try_clone()?),
        })
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Channel::Socket(s) => s.write_all(buf),
            Channel::Pipe(f) => f.write_all(buf),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Channel::Socket(s) => s.read(buf),
            Channel::Pipe(f) => f.read(buf),
        }
    }
}

enum Task {
    Receive(Channel),
    Send(Vec<Channel>),
}

impl Task {
    fn run(self, slot: usize, ctx: &LoadContext) {
        match self {
            Task::Send(mut receivers) => {
                let message = [0x68u8; MESSAGE];
                while !ctx.stopped() {
                    for r in receivers.iter_mut() {
                        if r.write_all(&message).is_err() {
                            return;
                        }
                    }
                }
            }
            Task::Receive(mut channel) => {
                if let Channel::Socket(s) = &channel {
                    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
                }
                let mut buffer = [0u8; 4 * MESSAGE];
                let mut pending = 0usize;
                while !ctx.stopped() {
                    match channel.read(&mut buffer) {
                        Ok(0) => return,
                        Ok(n) => {
                            pending += n;
                            ctx.count(slot, (pending / MESSAGE) as u64);
                            pending %= MESSAGE;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => return,
                    }
                }
            }
        }
    }
}

/// Forks one process per task, a group at a time and all before any thread exists,
/// then waits. Each child keeps only its own task's channels and the parent none, so
/// a receiver sees end-of-file as soon as its group's senders are gone.
fn run_as_processes(plan: &Plan, ctx: &LoadContext) -> Result<(), LoadError> {
    let mut children = Vec::new();
    let mut slot = 0;
    for _ in 0..plan.groups {
        let mut tasks: Vec<Option<Task>> = plan.group_tasks()?.into_iter().map(Some).collect();
        for i in 0..tasks.len() {
            let forked = fork_single_threaded();
            match forked.map_err(|e| LoadError::Failed(format!("hackbench: {e}")))? {
                Forked::Child => {
                    // Die with the worker even if latlab is killed outright.
                    let _ = latlab_rt::process::die_with_parent(signal_hook::consts::SIGKILL);
                    let mine = tasks[i].take();
                    drop(tasks);
                    if let Some(task) = mine {
                        task.run(slot, ctx);
                    }
                    exit_child(0);
                }
                Forked::Parent(pid) => {
                    children.push(pid);
                    tasks[i] = None; // the parent's copy of the channels closes here
                }
            }
            slot += 1;
        }
    }
    ctx.ready();
    while !ctx.stopped() {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The children got the same stop signal with the process group.
    for pid in children {
        let _ = wait_child(pid);
    }
    Ok(())
}
