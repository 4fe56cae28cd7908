//! `cpu`: one busy loop per online CPU.

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "cpu",
    help: "one busy loop per online CPU",
    stresses: "CPU",
    unit: "million spins",
    cpu_bound: true,
    nice: 0,
    supported: |_: &LoadOptions| Ok(()),
    work,
};

fn work(ctx: &WorkerCtx) -> Result<()> {
    let n = crate::sysinfo::online_cpus().len();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                let mut x = 1u64;
                while ctx.keep_going() {
                    for _ in 0..1_000_000 {
                        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    }
                    std::hint::black_box(x);
                    ctx.iteration();
                }
            });
        }
    });
    Ok(())
}
