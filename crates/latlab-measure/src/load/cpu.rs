//! `cpu`: busy arithmetic on every load CPU (the compute part of Koolwal's make -j8).

use super::{param_u64, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work};

pub(super) struct Cpu;

const PARAMS: &[ParamInfo] = &[ParamInfo {
    key: "threads",
    choices: &[],
    default: "0",
    help: "busy threads; 0 = one per load CPU",
}];

/// Iterations between two looks at the stop flag and the counter.
const BATCH: u64 = 1 << 16;

/// The cpu load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "cpu",
    summary: "busy integer arithmetic on every load CPU",
    params: PARAMS,
    work: Work {
        unit: "iterations",
        rate_unit: "M iterations/s",
        scale: 1e-6,
    },
    load: &Cpu,
};

impl Load for Cpu {
    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let threads = match param_u64(params, "threads")? {
            0 => ctx.cpus.len().max(1),
            n => n as usize,
        };
        ctx.ready();
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || {
                    let mut x: u64 = t as u64 + 1;
                    while !ctx.stopped() {
                        for _ in 0..BATCH {
                            // A 64-bit LCG: dependent multiplies keep the ALU busy.
                            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        }
                        std::hint::black_box(x);
                        ctx.count(t, BATCH);
                    }
                });
            }
        });
        Ok(())
    }
}
