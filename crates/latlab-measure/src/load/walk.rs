//! `dirwalk`: a file-system metadata walk (OSADL's `ls -Ral /` loop), and the walk
//! itself, which `find` runs several times in parallel.

use super::{Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work};
use std::path::{Path, PathBuf};

/// Pseudo file systems a walk does not enter: their size changes as they are read.
const SKIP: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Walks `root` depth-first with readdir + lstat, again and again, until stopped,
/// counting every entry seen.
pub(super) fn walk_forever(root: &Path, slot: usize, ctx: &LoadContext) {
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

pub(super) fn root_of(params: &Params) -> Result<PathBuf, LoadError> {
    let root = PathBuf::from(params.get("root").map(String::as_str).unwrap_or("/"));
    if !root.is_dir() {
        return Err(LoadError::Spec(format!(
            "root={}: not a directory",
            root.display()
        )));
    }
    Ok(root)
}

pub(super) const WORK: Work = Work {
    unit: "entries",
    rate_unit: "files/s",
    scale: 1.0,
};

pub(super) struct Dirwalk;

/// The dirwalk load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "dirwalk",
    summary: "ls -Ral / in a loop: readdir and lstat of every entry (OSADL's load)",
    params: &[ParamInfo {
        key: "root",
        choices: &[],
        default: "/",
        help: "tree to walk (/proc, /sys and /dev are skipped)",
    }],
    work: WORK,
    load: &Dirwalk,
};

impl Load for Dirwalk {
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
