//! `memcopy`: dd's copy of 1 MB blocks from /dev/zero to /dev/null.

use std::io::{Read, Write};

use anyhow::{Context, Result};

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "memcopy",
    help: "copies 1 MB blocks from /dev/zero to /dev/null, like dd",
    stresses: "memory bandwidth, system calls",
    unit: "MB copied",
    cpu_bound: true,
    nice: 0,
    supported: |_: &LoadOptions| {
        std::fs::File::open("/dev/zero").map(drop).map_err(|e| format!("/dev/zero: {e}"))?;
        std::fs::OpenOptions::new().write(true).open("/dev/null").map(drop).map_err(|e| format!("/dev/null: {e}"))
    },
    work,
};

fn work(ctx: &WorkerCtx) -> Result<()> {
    let mut zero = std::fs::File::open("/dev/zero").context("/dev/zero")?;
    let mut null = std::fs::OpenOptions::new().write(true).open("/dev/null").context("/dev/null")?;
    let mut block = vec![0u8; 1 << 20];
    while ctx.keep_going() {
        zero.read_exact(&mut block)?;
        null.write_all(&block)?;
        ctx.iteration();
    }
    Ok(())
}
