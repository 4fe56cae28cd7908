//! `hackbench`: hackbench's algorithm, our own implementation. Groups of 20 senders and 20
//! receivers (processes) over socketpairs; every sender writes 100 messages of 100 bytes to
//! every receiver. One round is one iteration.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};
use crate::sys;

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
    // The children only read, write and _exit, which is safe after fork in a threaded process.
    while ctx.keep_going() {
        let mut children = 0;
        for _ in 0..groups {
            let pairs: Vec<(UnixStream, UnixStream)> = (0..FDS).filter_map(|_| UnixStream::pair().ok()).collect();
            for (_, rx) in &pairs {
                if sys::fork_child(libc::SIGKILL)? == 0 {
                    receive(rx);
                }
                children += 1;
            }
            for _ in 0..FDS {
                if sys::fork_child(libc::SIGKILL)? == 0 {
                    send(&pairs);
                }
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

/// A receiver: reads every sender's messages, then exits.
fn receive(mut rx: &UnixStream) -> ! {
    let mut buf = [0u8; MSG];
    let mut left = FDS * LOOPS * MSG;
    while left > 0 {
        match rx.read(&mut buf[..MSG.min(left)]) {
            Ok(0) | Err(_) => break,
            Ok(n) => left -= n,
        }
    }
    sys::exit_now(0)
}

/// A sender: writes LOOPS messages to every receiver, then exits.
fn send(pairs: &[(UnixStream, UnixStream)]) -> ! {
    let msg = [0x5Au8; MSG];
    for _ in 0..LOOPS {
        for (mut tx, _) in pairs.iter().map(|(t, r)| (t, r)) {
            if tx.write_all(&msg).is_err() {
                sys::exit_now(1);
            }
        }
    }
    sys::exit_now(0)
}
