//! `stress-ng:ARGS`: the installed stress-ng with the given arguments, restarted when it ends
//! (a stress-ng that fails in its first second fails the load).

use anyhow::Result;

use crate::load::{on_path, GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "stress-ng",
    help: "runs stress-ng with ARGS (stress-ng:ARGS, e.g. 'stress-ng:--cpu 2 --io 1')",
    stresses: "whatever ARGS select",
    unit: "stress-ng runs",
    cpu_bound: true,
    nice: 0,
    supported: |_: &LoadOptions| {
        if on_path("stress-ng") {
            Ok(())
        } else {
            Err("stress-ng is not installed (Debian package stress-ng)".into())
        }
    },
    work,
};

fn work(ctx: &WorkerCtx) -> Result<()> {
    let args: Vec<&str> = ctx.spec.args.as_deref().unwrap_or("").split_whitespace().collect();
    while ctx.keep_going() {
        let mut cmd = std::process::Command::new("stress-ng");
        cmd.args(&args);
        if !ctx.run_child("stress-ng", &mut cmd)? {
            // Bad arguments would otherwise restart at full speed.
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        ctx.iteration();
    }
    Ok(())
}
