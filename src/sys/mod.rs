//! The one place with `unsafe`: thin, checked wrappers around the libc calls rtbench needs,
//! one file per concern. The crate denies `unsafe_code`; only these modules allow it.
//!
//! Every function returns `io::Result` or a plain value; callers never see a raw pointer.

#[allow(unsafe_code)]
mod bpf;
#[allow(unsafe_code)]
mod child;
mod cpu;
#[allow(unsafe_code)]
mod fs;
#[allow(unsafe_code)]
mod ipc;
#[allow(unsafe_code)]
mod net;
#[allow(unsafe_code)]
mod ops;
#[allow(unsafe_code)]
mod proc;
#[allow(unsafe_code)]
mod ringbuf;
#[allow(unsafe_code)]
mod sched;
#[allow(unsafe_code)]
mod signal;
#[allow(unsafe_code)]
mod term;
#[allow(unsafe_code)]
mod time;
#[allow(unsafe_code)]
mod words;

use std::io;

pub use bpf::*;
pub use child::*;
pub use cpu::*;
pub use fs::*;
pub use ipc::*;
pub use net::*;
pub use ops::*;
pub use proc::*;
pub use ringbuf::RingBuf;
pub use sched::*;
pub use signal::*;
pub use term::*;
pub use time::*;
pub use words::*;

/// 0 is success; anything else is the error in errno.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
