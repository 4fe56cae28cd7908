//! cyclictest's --json and -h histogram importers on any text: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rtbench_fuzz::cyclictest_import(data));
