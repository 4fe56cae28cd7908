//! `disk`: the I-pipe study's "hd" load. Write 512 MB in 1 MB blocks with fsync, delete, loop.

use std::io::Write;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "disk",
    help: "writes a 512 MB file in 1 MB blocks with fsync, deletes it, loops",
    stresses: "block I/O, page cache writeback",
    unit: "512 MB files",
    cpu_bound: false,
    nice: 0,
    supported: |_: &LoadOptions| Ok(()),
    work,
};

const FILE_MB: usize = 512;

fn work(ctx: &WorkerCtx) -> Result<()> {
    let path = ctx.scratch.join("disk-load.bin");
    let block = vec![0xA5u8; 1 << 20];
    while ctx.keep_going() {
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&path)?;
            for _ in 0..FILE_MB {
                if !ctx.keep_going() {
                    break;
                }
                f.write_all(&block)?;
                f.sync_data()?;
            }
            Ok(())
        })();
        let _ = std::fs::remove_file(&path);
        match written {
            Ok(()) => ctx.iteration(),
            // A full disk: keep trying, gently.
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(500)),
        }
    }
    Ok(())
}
