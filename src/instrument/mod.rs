//! Instruments: what rides along a probe's run.

pub mod breach;
pub mod classify;
pub mod split;
