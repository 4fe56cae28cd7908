//! The sample-log reader on any bytes: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rtbench_fuzz::samplelog(data));
