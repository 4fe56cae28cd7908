//! The duration, CPU-list and probe flag parsers on any text: a value or a message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let _ = rtbench::parse::duration(&s);
    let _ = rtbench::parse::positive_us(&s);
    let _ = rtbench::parse::latency_ns(&s, "us");
    let _ = rtbench::parse::message_size(&s);
    let _ = rtbench::sysinfo::parse_cpu_list(&s);
    for info in rtbench::probe::REGISTRY {
        for flag in info.flags {
            let _ = flag.parse(&s);
        }
    }
});
