//! The load worker: what runs inside `latlab __load`, one process group per load.
//!
//! Both ends of the worker's contract live here: [`WorkerArgs`] is the command line
//! [`super::running`] starts it with and the one [`main_if_worker`] reads back, so the
//! two cannot drift apart. It speaks a line protocol on standard output, read by
//! [`super::running`]: `ready` once set up, `count WORK ELAPSED_NS` every 200 ms,
//! `note TEXT` when it has something to say, and finally `cpu USER_NS SYSTEM_NS` (the
//! CPU time of the load's processes) and `end ok` or `end failed MESSAGE`.

use super::{LoadContext, LoadSpec};
use crate::facts::parse_kernel_cpu_list;
use latlab_model::spec::format_cpu_list;
use latlab_rt::shared::SharedCounters;
use latlab_rt::{affinity, process};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How often the worker reports its count.
pub const REPORT_EVERY: Duration = Duration::from_millis(200);

/// How long the load's own processes get to end after SIGTERM before SIGKILL: well
/// within the grace latlab gives the whole load.
pub(super) const CHILDREN_GRACE: Duration = Duration::from_millis(300);

/// The first argument that makes latlab's executable a load worker (it also names
/// the worker in `ps`, where the load's directory follows it).
pub const WORKER_ARG: &str = "__load";

/// A load worker's command line: what it runs, where, and on which CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerArgs {
    /// The load's specification (`NAME[:key=value,...]`), parsed by the worker.
    pub spec: String,
    /// The load's private directory.
    pub dir: PathBuf,
    /// The CPUs the load runs on (empty: wherever it is started).
    pub cpus: Vec<usize>,
}

/// A worker's command line that [`WorkerArgs::parse`] cannot read: it was not written
/// by [`WorkerArgs::to_args`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerArgsError {
    /// A flag is missing, or has no value.
    #[error(
        "`latlab {WORKER_ARG}` needs {0} with a value: it is started by `latlab run --load`, \
         use that instead"
    )]
    Missing(&'static str),
    /// An argument the worker does not take.
    #[error(
        "`latlab {WORKER_ARG}` does not take {0:?} (only --spec, --dir and --cpus): it is \
         started by `latlab run --load`, use that instead"
    )]
    Unexpected(String),
    /// A value that is not UTF-8 where text is needed.
    #[error("`latlab {WORKER_ARG}` {0}: the value is not UTF-8 text; give it in UTF-8")]
    NotText(&'static str),
}

impl WorkerArgs {
    /// The arguments (after the executable) that start this worker.
    pub fn to_args(&self) -> Vec<OsString> {
        vec![
            WORKER_ARG.into(),
            "--spec".into(),
            self.spec.clone().into(),
            "--dir".into(),
            self.dir.clone().into(),
            "--cpus".into(),
            format_cpu_list(&self.cpus).into(),
        ]
    }

    /// Reads the arguments after [`WORKER_ARG`], as [`to_args`](Self::to_args) wrote them.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<WorkerArgs, WorkerArgsError> {
        let (mut spec, mut dir, mut cpus) = (None, None, None);
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let (name, slot) = match flag.to_str() {
                Some("--spec") => ("--spec", &mut spec),
                Some("--dir") => ("--dir", &mut dir),
                Some("--cpus") => ("--cpus", &mut cpus),
                _ => {
                    return Err(WorkerArgsError::Unexpected(
                        flag.to_string_lossy().into_owned(),
                    ))
                }
            };
            *slot = Some(args.next().ok_or(WorkerArgsError::Missing(name))?);
        }
        let text = |value: Option<OsString>, flag| {
            value
                .ok_or(WorkerArgsError::Missing(flag))?
                .into_string()
                .map_err(|_| WorkerArgsError::NotText(flag))
        };
        Ok(WorkerArgs {
            spec: text(spec, "--spec")?,
            dir: dir.ok_or(WorkerArgsError::Missing("--dir"))?.into(),
            cpus: parse_kernel_cpu_list(&text(cpus, "--cpus")?),
        })
    }
}

/// Runs the load worker when `args` (the process's, executable first) start one:
/// `Some(exit code)` then, `None` for any other command line. The binary calls it
/// before parsing its own arguments.
pub fn main_if_worker(args: &[OsString]) -> Option<u8> {
    if args.get(1).is_none_or(|a| a != WORKER_ARG) {
        return None;
    }
    Some(match WorkerArgs::parse(args[2..].iter().cloned()) {
        Ok(worker) => worker_main(&worker.spec, &worker.dir, &worker.cpus) as u8,
        Err(e) => {
            // A person typed it: `latlab run --load` writes only what parses.
            eprintln!("latlab: error: {e}");
            2
        }
    })
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // latlab gone: nobody to tell, and the parent-death signal ends us anyway.
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

/// What a load's worker is called in `ps` (its first argument, and its name, which the
/// kernel cuts to 15 bytes) and in explanations: `latlab-load:disk`, not `exe`.
pub fn worker_name(load: &str) -> String {
    format!("{WORKER_NAME_PREFIX}{load}")
}

/// The start of every load worker's name.
pub const WORKER_NAME_PREFIX: &str = "latlab-load:";

/// Runs the load `spec` until told to stop; returns the process exit code.
pub fn worker_main(spec: &str, dir: &Path, cpus: &[usize]) -> i32 {
    let name = spec.split(':').next().unwrap_or(spec);
    let _ = process::set_name(&worker_name(name));
    // latlab gone (even SIGKILLed): the worker stops as when told, ending everything
    // its load started (an exec load's whole tree). A SIGKILL here would leave the
    // load's processes to init. (No watchdog thread: a load that forks needs the
    // worker single-threaded.)
    let _ = process::die_with_parent(signal_hook::consts::SIGTERM);
    // Every process the load starts stays a descendant of this worker, even one that
    // leaves the process group or the session (a daemon, `setsid cmd &` in an exec
    // load): orphans come back to it, and it ends them all before it exits.
    let _ = process::become_subreaper();
    if !cpus.is_empty() {
        let _ = affinity::set_current_thread(cpus);
    }
    // Loads are background work: never at latlab's own policy, whatever it was.
    let _ = latlab_rt::sched::set_current_thread(latlab_rt::sched::Policy::Other { nice: 0 });
    process::raise_open_files_limit();
    // Raised by SIGTERM (latlab stopping the load, or gone) or SIGINT.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(signal, stop.clone()) {
            say(&format!("end failed cannot handle signals: {e}"));
            return 1;
        }
    }

    let spec = match LoadSpec::parse(spec) {
        Ok(s) => s,
        Err(e) => {
            say(&format!("end failed {e}"));
            return 1;
        }
    };
    let counters = match SharedCounters::new(64 * 8) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            say(&format!("end failed {e}"));
            return 1;
        }
    };
    // Rates are over the time the load ran, from `ready` on (not its set-up).
    let started: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let (reporter_counters, reporter_stop) = (counters.clone(), stop.clone());
    let ready_started = started.clone();
    let ready = Box::new(move || {
        let started = *ready_started.get_or_init(Instant::now);
        say("ready");
        let (counters, stop) = (reporter_counters.clone(), reporter_stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                say(&format!(
                    "count {} {}",
                    counters.total(),
                    started.elapsed().as_nanos()
                ));
                std::thread::sleep(REPORT_EVERY);
            }
        });
    });
    let note = Box::new(|text: &str| say(&format!("note {}", text.replace('\n', " "))));
    let ctx = LoadContext::new(
        dir.to_path_buf(),
        cpus.to_vec(),
        stop,
        counters.clone(),
        ready,
        note,
    );
    let result = spec.load().run(&spec.params, &ctx);
    process::end_children(CHILDREN_GRACE);
    // Every process of the load is waited for now: its CPU time is all counted.
    if let Some(t) = latlab_rt::shared::own_and_children_cpu_times() {
        say(&format!("cpu {} {}", t.user_ns, t.system_ns));
    }
    say(&format!(
        "count {} {}",
        counters.total(),
        started.get().map_or(0, |s| s.elapsed().as_nanos())
    ));
    match result {
        Ok(()) => {
            say("end ok");
            0
        }
        Err(e) => {
            say(&format!("end failed {e}"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_reads_back_the_command_line_it_is_started_with() {
        let worker = WorkerArgs {
            spec: "net:mode=udp,rate=5k".to_string(),
            dir: PathBuf::from("/tmp/latlab-load-1 with space"),
            cpus: vec![0, 1, 2, 5],
        };
        let args = worker.to_args();
        assert_eq!(args[0], WORKER_ARG);
        assert_eq!(WorkerArgs::parse(args[1..].to_vec()), Ok(worker.clone()));
        let anywhere = WorkerArgs {
            cpus: Vec::new(),
            ..worker
        };
        let args = anywhere.to_args();
        assert_eq!(WorkerArgs::parse(args[1..].to_vec()), Ok(anywhere));
    }

    #[test]
    fn a_command_line_not_written_for_a_worker_is_refused() {
        let parse = |args: &[&str]| WorkerArgs::parse(args.iter().map(OsString::from));
        assert_eq!(
            parse(&["--spec", "cpu", "--dir", "/tmp"]),
            Err(WorkerArgsError::Missing("--cpus"))
        );
        assert_eq!(
            parse(&["--spec", "cpu", "--dir"]),
            Err(WorkerArgsError::Missing("--dir"))
        );
        assert_eq!(
            parse(&["--spec", "cpu", "--dir", "/tmp", "--cpus", "0", "--x"]),
            Err(WorkerArgsError::Unexpected("--x".to_string()))
        );
        let not_a_worker = [OsString::from("latlab"), OsString::from("run")];
        assert_eq!(main_if_worker(&not_a_worker), None);
    }
}
