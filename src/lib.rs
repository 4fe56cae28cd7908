//! rtbench: a real-time latency laboratory for Linux.
//!
//! Data flows one way: probe → recorder → store → report. `sys` is the only module with
//! `unsafe`, and the crate root denies it everywhere else.

#![deny(unsafe_code)]

pub mod analyze;
pub mod app;
pub mod audit;
pub mod cli;
pub mod config;
pub mod error;
pub mod evt;
pub mod fasthash;
pub mod import;
pub mod instrument;
#[cfg(test)]
mod layers;
pub mod load;
pub mod model;
pub mod net;
pub mod par;
pub mod parse;
pub mod probe;
pub mod recorder;
pub mod report;
pub mod restore;
pub mod rng;
pub mod runner;
pub mod session;
pub mod shield;
pub mod stats;
pub mod store;
pub mod sys;
pub mod sysbench;
pub mod sysinfo;
pub mod timefmt;
pub mod trace;
pub mod units;
pub mod vm;
pub mod watch;
