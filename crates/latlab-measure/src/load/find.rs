//! `find`: several tree walks in parallel (Realfeel's find load; the Loongson study's
//! ~50 parallel `find /`).

use super::walk::{root_of, walk_forever, WORK};
use super::{param_u64, Load, LoadContext, LoadError, Param, Params, Work};
use std::path::Path;

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
