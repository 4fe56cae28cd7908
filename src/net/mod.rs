//! What the network probes share: the wire format, the transports, and the echo server.

pub mod server;
pub mod transport;
pub mod wire;
