//! A store whose rows were altered: reading it gives errors or values, never a panic. The input
//! picks a column of a real run and what to write into it.
#![no_main]

use libfuzzer_sys::fuzz_target;

// The template store is made with $RTBENCH (fuzz/run.sh sets it to the release build).
fuzz_target!(|data: &[u8]| {
    let rtbench = std::env::var("RTBENCH").unwrap_or_else(|_| "../target/release/rtbench".into());
    rtbench_fuzz::store_rows(data, &rtbench)
});
