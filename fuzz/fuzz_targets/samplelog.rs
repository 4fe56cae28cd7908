//! The sample-log reader on any bytes: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, data).unwrap();
    let _ = rtbench::analyze::analyze(&path, true);
});
