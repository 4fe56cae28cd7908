//! The echo server's packet parser on any datagram: `None` or a header, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rtbench_fuzz::packet(data));
