//! The duration, CPU-list and probe flag parsers on any text: a value or a message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rtbench_fuzz::flags(data));
