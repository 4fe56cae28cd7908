//! The echo server's packet parser on any datagram: `None` or a header, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(h) = rtbench::net::wire::read_header(data) {
        // What parses must write back the same.
        let mut buf = vec![0u8; rtbench::net::wire::HEADER];
        rtbench::net::wire::write_header(&mut buf, h);
        assert_eq!(rtbench::net::wire::read_header(&buf), Some(h));
    }
});
