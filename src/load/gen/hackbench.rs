//! `hackbench`: hackbench's algorithm, our own implementation. Groups of 20 senders and 20
//! receivers (processes) over socketpairs; every sender writes 100 messages of 100 bytes to
//! every receiver. One round is one iteration.

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};
use crate::sys::{self, ChildTask};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "hackbench",
    help: "hackbench's scheduler load: groups of 20 senders and 20 receivers (default 30 groups), niced",
    stresses: "scheduler, wake-ups, context switches, fork",
    unit: "rounds",
    cpu_bound: true,
    nice: 10,
    supported: |_: &LoadOptions| Ok(()),
    work,
};

const FDS: usize = 20;
const LOOPS: usize = 100;
const MSG: usize = 100;

fn work(ctx: &WorkerCtx) -> Result<()> {
    let groups = if ctx.opts.hackbench_groups == 0 { 30 } else { ctx.opts.hackbench_groups };
    let msg = [0x5Au8; MSG];
    while ctx.keep_going() {
        let mut children = 0;
        for _ in 0..groups {
            let pairs: Vec<(UnixStream, UnixStream)> = (0..FDS).filter_map(|_| UnixStream::pair().ok()).collect();
            let writes: Vec<RawFd> = pairs.iter().map(|(tx, _)| tx.as_raw_fd()).collect();
            // Every receiver hears from each of the FDS senders.
            let bytes = FDS * LOOPS * MSG;
            for (_, rx) in &pairs {
                sys::fork_task(ChildTask::Drain { read: rx.as_raw_fd(), bytes, chunk: MSG }, &[])?;
                children += 1;
            }
            for _ in 0..FDS {
                sys::fork_task(ChildTask::Send { writes: &writes, msg: &msg, rounds: LOOPS }, &[])?;
                children += 1;
            }
        }
        for _ in 0..children {
            if sys::wait_any_child().is_none() {
                break;
            }
        }
        ctx.iteration();
    }
    Ok(())
}
