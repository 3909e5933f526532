//! Background loads: the conditions latency is measured under, each in its own file,
//! described by a constant and behind one trait.
//!
//! A load never runs inside the measuring process. latlab starts each in a worker
//! process of its own (`latlab __load`, see [`worker`]) that leads a new process
//! group, runs on the load CPUs at SCHED_OTHER, counts the work it does in counters
//! its own children can share, and reports that count on its standard output. latlab
//! ends a load by signalling its process group — by id, never by name — and removes
//! its private temporary directory ([`running`]). Adding a load means one new file
//! here (its behaviour, and an [`INFO`](LoadInfo) constant) plus one line in
//! [`REGISTRY`].

pub mod running;
pub mod worker;

mod cpu;
mod disk;
mod exec;
mod filecopy;
mod find;
mod hackbench;
mod launch;
mod memory;
mod net;
mod walk;

use latlab_model::params::{self, Described, ParamsError};
use latlab_rt::shared::SharedCounters;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Every built-in load, in the order `latlab loads` lists them.
pub const REGISTRY: &[LoadInfo] = &[
    cpu::INFO,
    memory::INFO,
    disk::INFO,
    net::INFO,
    hackbench::INFO,
    walk::INFO,
    find::INFO,
    launch::INFO,
    filecopy::INFO,
    exec::INFO,
];

/// Looks a load up by name.
pub fn by_name(name: &str) -> Option<&'static LoadInfo> {
    REGISTRY.iter().find(|l| l.name == name)
}

/// Why a `--load` specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadSpecError {
    /// The name, a key or a value is wrong.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// `exec` without a command.
    #[error("exec needs a command: write e.g. --load 'exec:make -j4 -C ~/linux'")]
    NoCommand,
}

/// A background load: its name, what it does, its parameters, how its work is
/// counted, and its behaviour.
pub struct LoadInfo {
    /// Its name on the command line and in results (`hackbench`).
    pub name: &'static str,
    /// One line on what it does, citing the study it comes from.
    pub summary: &'static str,
    /// Its parameters (values are checked by [`Load::check`]).
    pub params: &'static [ParamInfo],
    /// How its work is counted.
    pub work: Work,
    /// What it does.
    pub load: &'static dyn Load,
}

impl Described for LoadInfo {
    fn name(&self) -> &'static str {
        self.name
    }

    fn params(&self) -> &'static [ParamInfo] {
        self.params
    }
}

impl std::fmt::Debug for LoadInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadInfo")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// How a load's work is counted and shown.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// One unit of work (`bytes`, `messages`).
    pub unit: &'static str,
    /// The rate's unit (`MB/s`).
    pub rate_unit: &'static str,
    /// Rate units per work unit and second (1e-6 for bytes → MB/s).
    pub scale: f64,
}

/// Why a load cannot run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The specification is wrong (exit code 2).
    #[error("{0}")]
    Spec(String),
    /// The system cannot run it now (no space, no permission; exit code 2, before
    /// measuring).
    #[error("{0}")]
    Unavailable(String),
    /// It failed while running.
    #[error("{0}")]
    Failed(String),
}

/// What a background load does; what it is ([`LoadInfo`]) is a constant beside it.
pub trait Load: Sync {
    /// Checks parameters and the system, in latlab itself, before anything starts
    /// (e.g. free space for the disk load). `dir` is the load's private directory.
    fn check(&self, _params: &Params, _dir: &Path) -> Result<(), LoadError> {
        Ok(())
    }

    /// Runs in the worker process until `ctx.stopped()`, counting work with
    /// `ctx.count`. Calls `ctx.ready()` once set up. May fork (before `ready`).
    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError>;
}

/// A load as the user wrote it: `NAME`, `NAME:key=value,key=value`, or `exec:COMMAND`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSpec {
    /// The text as given.
    pub text: String,
    /// The load's name.
    pub name: String,
    /// Parameters, defaults applied.
    pub params: Params,
}

pub use latlab_model::params::{ParamInfo, Params};

impl LoadSpec {
    /// Parses and validates a load specification against the registry.
    pub fn parse(text: &str) -> Result<LoadSpec, LoadSpecError> {
        let t = text.trim();
        let kind = params::Kind {
            noun: "load",
            listed_by: "latlab loads",
        };
        // exec takes everything after its colon as one command, commas included.
        let command = t
            .split_once(':')
            .filter(|(name, _)| name.trim() == exec::INFO.name)
            .map(|(_, command)| command.trim());
        let (info, mut params) = match command {
            Some(_) => (&exec::INFO, Params::new()),
            None => params::parse(t, kind, REGISTRY)?,
        };
        if info.name == exec::INFO.name {
            let command = command.filter(|c| !c.is_empty());
            params.insert(
                "command".to_string(),
                command.ok_or(LoadSpecError::NoCommand)?.to_string(),
            );
        }
        Ok(LoadSpec {
            text: t.to_string(),
            name: info.name.to_string(),
            params,
        })
    }

    /// What the load is.
    pub fn info(&self) -> &'static LoadInfo {
        by_name(&self.name).expect("validated at parse time")
    }

    /// What the load does.
    pub fn load(&self) -> &'static dyn Load {
        self.info().load
    }
}

/// `size=32M (working set per thread), ...` for messages and listings.
pub fn describe_params(load: &LoadInfo) -> String {
    params::takes(load.params)
}

/// Reads a parameter as a number.
pub fn param_u64(params: &Params, key: &str) -> Result<u64, LoadError> {
    let text = params.get(key).map(String::as_str).unwrap_or("");
    text.parse()
        .map_err(|_| LoadError::Spec(format!("{key}={text}: give a whole number")))
}

/// Reads a parameter as a size in bytes (`32M`).
pub fn param_size(params: &Params, key: &str) -> Result<u64, LoadError> {
    let text = params.get(key).map(String::as_str).unwrap_or("");
    latlab_model::units::parse_size(text).map_err(|e| LoadError::Spec(format!("{key}: {e}")))
}

/// Checks that loads can keep their private directories in `dir`, by creating (and
/// removing) one there as each load will: a read-only file system or a directory this
/// user may not write to is named as such, not taken for a lack of space.
pub fn check_dir(dir: &Path) -> Result<(), LoadError> {
    let shown = dir.display();
    let trial = tempfile::Builder::new()
        .prefix(".latlab-load-check-")
        .tempdir_in(dir);
    match trial {
        // Dropping the directory removes it.
        Ok(_) => Ok(()),
        Err(e) => Err(LoadError::Unavailable(match e.kind() {
            std::io::ErrorKind::ReadOnlyFilesystem => format!(
                "{shown} is on a read-only file system, and loads keep their temporary \
                 files there: choose a writable directory with --load-dir"
            ),
            std::io::ErrorKind::PermissionDenied => format!(
                "this user may not create files in {shown}, where loads keep their \
                 temporary files: choose a directory you may write to with --load-dir"
            ),
            _ => format!(
                "cannot create a directory in {shown} ({e}), where loads keep their \
                 temporary files: choose another with --load-dir"
            ),
        })),
    }
}

/// Checks that `dir` has room for `bytes` (plus 16 MB to spare) before load `name`
/// starts writing there.
pub fn require_free_space(name: &str, dir: &Path, bytes: u64) -> Result<(), LoadError> {
    let free = latlab_rt::shared::free_bytes(dir)
        .map_err(|e| LoadError::Unavailable(format!("{name} load: {e}")))?;
    let needed = bytes + (16 << 20);
    if free < needed {
        return Err(LoadError::Unavailable(format!(
            "no space for the {name} load: it needs {} MB in {}, which has {} MB free; \
             lower size= or choose another directory with --load-dir",
            needed >> 20,
            dir.display(),
            free >> 20
        )));
    }
    Ok(())
}

/// What a running load sees of its worker process.
pub struct LoadContext {
    /// The load's private directory (removed by latlab afterwards).
    pub dir: PathBuf,
    /// The CPUs the load runs on.
    pub cpus: Vec<usize>,
    stop: Arc<AtomicBool>,
    counters: Arc<SharedCounters>,
    ready: Box<dyn Fn() + Sync>,
    note: Box<dyn Fn(&str) + Sync>,
}

impl LoadContext {
    /// A context (used by the worker, and by tests with a private stop flag).
    pub fn new(
        dir: PathBuf,
        cpus: Vec<usize>,
        stop: Arc<AtomicBool>,
        counters: Arc<SharedCounters>,
        ready: Box<dyn Fn() + Sync>,
        note: Box<dyn Fn(&str) + Sync>,
    ) -> LoadContext {
        LoadContext {
            dir,
            cpus,
            stop,
            counters,
            ready,
            note,
        }
    }

    /// Tells latlab something worth recording about how the load runs.
    pub fn note(&self, text: &str) {
        (self.note)(text);
    }

    /// True once the load must stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Adds `n` units of work, from any thread or forked child (`slot` spreads the
    /// counting over cache lines; any value works).
    pub fn count(&self, slot: usize, n: u64) {
        self.counters.get(slot * 8).fetch_add(n, Ordering::Relaxed);
    }

    /// Work counted so far.
    pub fn total(&self) -> u64 {
        self.counters.total()
    }

    /// Says the load is set up and running.
    pub fn ready(&self) {
        (self.ready)();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_defaults_and_reject_mistakes() {
        let s = LoadSpec::parse("memory:size=64M").unwrap();
        assert_eq!(s.params["size"], "64M");
        let s = LoadSpec::parse("hackbench").unwrap();
        assert!(s.params.contains_key("groups"));
        let s = LoadSpec::parse("exec:make -j4 -C /tmp/x").unwrap();
        assert_eq!(s.params["command"], "make -j4 -C /tmp/x");
        assert!(LoadSpec::parse("nosuch")
            .unwrap_err()
            .to_string()
            .contains("unknown load"));
        assert!(LoadSpec::parse("memory:colour=red")
            .unwrap_err()
            .to_string()
            .contains("no parameter 'colour'"));
        assert!(LoadSpec::parse("memory:size")
            .unwrap_err()
            .to_string()
            .contains("key=value"));
        assert!(LoadSpec::parse("hackbench:groups=1,groups=2")
            .unwrap_err()
            .to_string()
            .contains("gives groups twice"));
        assert!(LoadSpec::parse("exec:")
            .unwrap_err()
            .to_string()
            .contains("needs a command"));
    }

    #[test]
    fn every_load_has_a_unique_name_and_valid_defaults() {
        let names: Vec<_> = REGISTRY.iter().map(|l| l.name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for load in REGISTRY {
            assert!(!load.summary.is_empty());
            if load.name != "exec" {
                LoadSpec::parse(load.name).unwrap();
            }
        }
    }
}
