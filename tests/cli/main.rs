//! End-to-end tests of the rtbench binary: one test binary, one module per topic.

mod audit;
mod bad_input;
mod breach;
mod docs;
mod export;
mod faults;
mod findings;
mod fleet;
mod helpers;
mod import;
mod kernels;
mod live;
mod load;
mod measure;
mod monitor;
mod net;
mod privilege;
mod report;
mod samplelog;
mod signals;
mod snapshot;
mod split;
mod steal;
mod study;
mod sysbench;
mod wcet;
