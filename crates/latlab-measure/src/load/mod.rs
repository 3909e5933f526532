//! Background loads: the conditions latency is measured under, each in its own file
//! behind one trait.
//!
//! A load never runs inside the measuring process. latlab starts each in a worker
//! process of its own (`latlab __load`, see [`worker`]) that leads a new process
//! group, runs on the load CPUs at SCHED_OTHER, counts the work it does in counters
//! its own children can share, and reports that count on its standard output. latlab
//! ends a load by signalling its process group — by id, never by name — and removes
//! its private temporary directory ([`running`]). Adding a load means one new file
//! here plus one line in [`registry`].

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

use latlab_model::spec::SpecError;
use latlab_rt::shared::SharedCounters;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Every built-in load, in the order `latlab loads` lists them.
pub fn registry() -> Vec<&'static dyn Load> {
    vec![
        &cpu::Cpu,
        &memory::Memory,
        &disk::Disk,
        &net::Net,
        &hackbench::Hackbench,
        &walk::Dirwalk,
        &find::Find,
        &launch::Launch,
        &filecopy::FileCopy,
        &exec::Exec,
    ]
}

/// Looks a load up by name.
pub fn by_name(name: &str) -> Option<&'static dyn Load> {
    registry().into_iter().find(|l| l.name() == name)
}

/// A parameter a load accepts.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Name (`size`).
    pub name: &'static str,
    /// Default value as text.
    pub default: &'static str,
    /// What it means.
    pub meaning: &'static str,
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

/// A background load.
pub trait Load: Sync {
    /// Its name (`hackbench`).
    fn name(&self) -> &'static str;

    /// One line on what it does, citing the study it comes from.
    fn describe(&self) -> &'static str;

    /// The parameters it takes.
    fn params(&self) -> &'static [Param];

    /// How its work is counted.
    fn work(&self) -> Work;

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

/// A load's parameters, by name, as text.
pub type Params = BTreeMap<String, String>;

impl LoadSpec {
    /// Parses and validates a load specification against the registry.
    pub fn parse(text: &str) -> Result<LoadSpec, SpecError> {
        let t = text.trim();
        let (name, rest) = match t.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (t, None),
        };
        let load = by_name(name).ok_or_else(|| {
            SpecError(format!(
                "unknown load '{name}': choose one of {} (latlab loads lists them)",
                registry()
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut params: Params = load
            .params()
            .iter()
            .map(|p| (p.name.to_string(), p.default.to_string()))
            .collect();
        if name == "exec" {
            let command = rest.map(str::trim).unwrap_or("");
            if command.is_empty() {
                return Err(SpecError(
                    "exec needs a command: write e.g. --load 'exec:make -j4 -C ~/linux'".into(),
                ));
            }
            params.insert("command".to_string(), command.to_string());
        } else if let Some(rest) = rest.filter(|r| !r.trim().is_empty()) {
            let mut given = std::collections::BTreeSet::new();
            for pair in rest.split(',') {
                let (key, value) = pair.split_once('=').ok_or_else(|| {
                    SpecError(format!(
                        "'{pair}' in load '{t}' needs the form key=value, e.g. {name}:{}=...",
                        load.params().first().map_or("size", |p| p.name)
                    ))
                })?;
                let key = key.trim();
                if !params.contains_key(key) {
                    return Err(SpecError(format!(
                        "load {name} has no parameter '{key}': it takes {}",
                        describe_params(load)
                    )));
                }
                if !given.insert(key) {
                    return Err(SpecError(format!("load '{t}' gives {key} twice: keep one")));
                }
                params.insert(key.to_string(), value.trim().to_string());
            }
        }
        Ok(LoadSpec {
            text: t.to_string(),
            name: name.to_string(),
            params,
        })
    }

    /// The load.
    pub fn load(&self) -> &'static dyn Load {
        by_name(&self.name).expect("validated at parse time")
    }
}

/// `size (default 32M): working set, ...` for messages and listings.
pub fn describe_params(load: &dyn Load) -> String {
    if load.params().is_empty() {
        return "no parameters".to_string();
    }
    load.params()
        .iter()
        .map(|p| format!("{}={} ({})", p.name, p.default, p.meaning))
        .collect::<Vec<_>>()
        .join(", ")
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
            .0
            .contains("unknown load"));
        assert!(LoadSpec::parse("memory:colour=red")
            .unwrap_err()
            .0
            .contains("no parameter 'colour'"));
        assert!(LoadSpec::parse("memory:size")
            .unwrap_err()
            .0
            .contains("key=value"));
        assert!(LoadSpec::parse("hackbench:groups=1,groups=2")
            .unwrap_err()
            .0
            .contains("gives groups twice"));
        assert!(LoadSpec::parse("exec:")
            .unwrap_err()
            .0
            .contains("needs a command"));
    }

    #[test]
    fn every_load_has_a_unique_name_and_valid_defaults() {
        let names: Vec<_> = registry().iter().map(|l| l.name()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for load in registry() {
            assert!(!load.describe().is_empty());
            if load.name() != "exec" {
                LoadSpec::parse(load.name()).unwrap();
            }
        }
    }
}
