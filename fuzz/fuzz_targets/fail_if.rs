//! The --fail-if expression parser on any text: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rtbench_fuzz::fail_if(data));
