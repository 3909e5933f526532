//! `disk`: a file written and flushed over and over (Wilshire's "dd job and writing
//! the buffers to the hard disk using sync", Rapid Reaction Linux Tables 1 and 5).

use super::{
    param_size, require_free_space, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work,
};
use std::io::{Seek, SeekFrom, Write};

pub(super) struct Disk;

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "size",
        choices: &[],
        default: "64M",
        help: "file size, the bound on disk space used",
    },
    ParamInfo {
        key: "block",
        choices: &[],
        default: "1M",
        help: "bytes per write",
    },
];

/// The disk load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "disk",
    summary: "rewrites a file (64 MB) and flushes it with fsync and sync (Wilshire's dd + sync)",
    params: PARAMS,
    work: Work {
        unit: "bytes",
        rate_unit: "MB/s",
        scale: 1e-6,
    },
    load: &Disk,
};

impl Load for Disk {
    fn check(&self, params: &Params, dir: &std::path::Path) -> Result<(), LoadError> {
        let size = param_size(params, "size")?;
        let block = param_size(params, "block")?;
        if block == 0 || block > size || block > (64 << 20) {
            return Err(LoadError::Spec(
                "disk block: give 1 byte to 64M, at most the size".into(),
            ));
        }
        require_free_space("disk", dir, size)
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let size = param_size(params, "size")?;
        let block = vec![0x5au8; param_size(params, "block")? as usize];
        let path = ctx.dir.join("disk-load.dat");
        let mut file = std::fs::File::create(&path)
            .map_err(|e| LoadError::Failed(format!("create {}: {e}", path.display())))?;
        ctx.ready();
        let failed =
            |e: std::io::Error| LoadError::Failed(format!("write {}: {e}", path.display()));
        while !ctx.stopped() {
            file.seek(SeekFrom::Start(0)).map_err(failed)?;
            let mut written = 0;
            while written < size && !ctx.stopped() {
                let n = block.len().min((size - written) as usize);
                file.write_all(&block[..n]).map_err(failed)?;
                written += n as u64;
                ctx.count(0, n as u64);
            }
            if ctx.stopped() {
                break; // flushing now would only delay the stop
            }
            file.sync_data().map_err(failed)?;
            latlab_rt::shared::sync_all();
        }
        Ok(())
    }
}
