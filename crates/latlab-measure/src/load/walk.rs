//! `dirwalk` and `find`: file-system metadata walks (OSADL's `ls -Ral /` loop;
//! Realfeel's find and the Loongson study's ~50 parallel `find /`).

use super::{param_u64, Load, LoadContext, LoadError, Param, Params, Work};
use std::path::{Path, PathBuf};

/// Pseudo file systems a walk does not enter: their size changes as they are read.
const SKIP: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Walks `root` depth-first with readdir + lstat, again and again, until stopped,
/// counting every entry seen.
fn walk_forever(root: &Path, slot: usize, ctx: &LoadContext) {
    while !ctx.stopped() {
        let mut pending: Vec<PathBuf> = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            if ctx.stopped() {
                return;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut seen = 0;
            for entry in entries.flatten() {
                let path = entry.path();
                // lstat, as ls -l and find do.
                if let Ok(meta) = std::fs::symlink_metadata(&path) {
                    seen += 1;
                    if meta.is_dir() && !SKIP.iter().any(|s| path == Path::new(s)) {
                        pending.push(path);
                    }
                }
            }
            ctx.count(slot, seen);
        }
    }
}

fn root_of(params: &Params) -> Result<PathBuf, LoadError> {
    let root = PathBuf::from(params.get("root").map(String::as_str).unwrap_or("/"));
    if !root.is_dir() {
        return Err(LoadError::Spec(format!(
            "root={}: not a directory",
            root.display()
        )));
    }
    Ok(root)
}

const WORK: Work = Work {
    unit: "entries",
    rate_unit: "files/s",
    scale: 1.0,
};

pub(super) struct Dirwalk;

impl Load for Dirwalk {
    fn name(&self) -> &'static str {
        "dirwalk"
    }

    fn describe(&self) -> &'static str {
        "ls -Ral / in a loop: readdir and lstat of every entry (OSADL's load)"
    }

    fn params(&self) -> &'static [Param] {
        &[Param {
            name: "root",
            default: "/",
            meaning: "tree to walk (/proc, /sys and /dev are skipped)",
        }]
    }

    fn work(&self) -> Work {
        WORK
    }

    fn check(&self, params: &Params, _dir: &Path) -> Result<(), LoadError> {
        root_of(params).map(|_| ())
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let root = root_of(params)?;
        ctx.ready();
        walk_forever(&root, 0, ctx);
        Ok(())
    }
}

pub(super) struct Find;

impl Load for Find {
    fn name(&self) -> &'static str {
        "find"
    }

    fn describe(&self) -> &'static str {
        "several find / walks in parallel (Realfeel's find load, the Loongson study's finds)"
    }

    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "root",
                default: "/",
                meaning: "tree to walk (/proc, /sys and /dev are skipped)",
            },
            Param {
                name: "walkers",
                default: "4",
                meaning: "parallel walks",
            },
        ]
    }

    fn work(&self) -> Work {
        WORK
    }

    fn check(&self, params: &Params, _dir: &Path) -> Result<(), LoadError> {
        root_of(params)?;
        match param_u64(params, "walkers")? {
            1..=256 => Ok(()),
            _ => Err(LoadError::Spec("find walkers: give 1 to 256".into())),
        }
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let root = root_of(params)?;
        let walkers = param_u64(params, "walkers")? as usize;
        ctx.ready();
        std::thread::scope(|s| {
            for w in 0..walkers {
                let root = root.clone();
                s.spawn(move || walk_forever(&root, w, ctx));
            }
        });
        Ok(())
    }
}
