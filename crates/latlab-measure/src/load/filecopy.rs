//! `filecopy`: two large files copied over each other, again and again (Realfeel's
//! file-move load).

use super::{
    param_size, require_free_space, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work,
};
use std::io::{Read, Write};

pub(super) struct FileCopy;

/// The filecopy load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "filecopy",
    summary: "copies two large files (64 MB) over each other in turn (Realfeel's file-move load)",
    params: &[ParamInfo {
        key: "size",
        choices: &[],
        default: "64M",
        help: "size of each file",
    }],
    work: Work {
        unit: "bytes",
        rate_unit: "MB/s",
        scale: 1e-6,
    },
    load: &FileCopy,
};

impl Load for FileCopy {
    fn check(&self, params: &Params, dir: &std::path::Path) -> Result<(), LoadError> {
        let size = param_size(params, "size")?;
        require_free_space("filecopy", dir, 2 * size)
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let size = param_size(params, "size")? as usize;
        let (a, b) = (ctx.dir.join("copy-a.dat"), ctx.dir.join("copy-b.dat"));
        let failed = |e: std::io::Error| LoadError::Failed(format!("filecopy: {e}"));
        let chunk = vec![0xa5u8; 1 << 20];
        for path in [&a, &b] {
            let mut f = std::fs::File::create(path).map_err(failed)?;
            let mut left = size;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n]).map_err(failed)?;
                left -= n;
            }
        }
        ctx.ready();
        let mut buffer = vec![0u8; 1 << 20];
        let mut from_a = true;
        while !ctx.stopped() {
            let (src, dst) = if from_a { (&a, &b) } else { (&b, &a) };
            let mut input = std::fs::File::open(src).map_err(failed)?;
            let mut output = std::fs::File::create(dst).map_err(failed)?;
            loop {
                let n = input.read(&mut buffer).map_err(failed)?;
                if n == 0 || ctx.stopped() {
                    break;
                }
                output.write_all(&buffer[..n]).map_err(failed)?;
                ctx.count(0, n as u64);
            }
            from_a = !from_a;
        }
        Ok(())
    }
}
