//! `memory`: a working set thrashed line by line, beyond the caches (the 32 MB writer
//! of the L4/KVM interrupt-latency study).

use super::{
    param_size, param_u64, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work,
};

pub(super) struct Memory;

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "size",
        choices: &[],
        default: "32M",
        help: "working set per thread",
    },
    ParamInfo {
        key: "threads",
        choices: &[],
        default: "1",
        help: "thrashing threads",
    },
];

const LINE: usize = 64;

/// The memory load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "memory",
    summary: "writes a working set (32 MB) in a cache-hostile order, evicting caches and TLBs",
    params: PARAMS,
    work: Work {
        unit: "bytes",
        rate_unit: "MB/s",
        scale: 1e-6,
    },
    load: &Memory,
};

impl Load for Memory {
    fn check(&self, params: &Params, _dir: &std::path::Path) -> Result<(), LoadError> {
        let size = param_size(params, "size")?;
        if !(4096..=(64 << 30)).contains(&size) {
            return Err(LoadError::Spec("memory size: give 4K to 64G".into()));
        }
        Ok(())
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let size = param_size(params, "size")? as usize;
        let threads = param_u64(params, "threads")?.max(1) as usize;
        let lines = (size / LINE).max(1);
        ctx.ready();
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || {
                    let mut buffer = vec![0u8; lines * LINE];
                    // Stepping by a large odd number of lines visits every line once per
                    // pass, in an order no prefetcher follows.
                    let step = (lines / 2) | 1;
                    let mut line = 0usize;
                    while !ctx.stopped() {
                        for _ in 0..4096 {
                            buffer[line * LINE] = buffer[line * LINE].wrapping_add(1);
                            line = (line + step) % lines;
                        }
                        ctx.count(t, 4096 * LINE as u64);
                    }
                    std::hint::black_box(&buffer);
                });
            }
        });
        Ok(())
    }
}
