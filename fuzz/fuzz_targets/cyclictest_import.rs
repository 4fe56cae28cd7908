//! cyclictest's --json and -h histogram importers on any text: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = rtbench::import::convert(&text) {
        for t in &c.threads {
            let _ = t.stats.summary();
        }
    }
});
