//! `find`: several tree walks in parallel (Realfeel's find load; the Loongson study's
//! ~50 parallel `find /`).

use super::walk::{root_of, walk_forever, WORK};
use super::{param_u64, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params};
use std::path::Path;

pub(super) struct Find;

/// The find load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "find",
    summary: "several find / walks in parallel (Realfeel's find load, the Loongson study's finds)",
    params: &[
        ParamInfo {
            key: "root",
            choices: &[],
            default: "/",
            help: "tree to walk (/proc, /sys and /dev are skipped)",
        },
        ParamInfo {
            key: "walkers",
            choices: &[],
            default: "4",
            help: "parallel walks",
        },
    ],
    work: WORK,
    load: &Find,
};

impl Load for Find {
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
