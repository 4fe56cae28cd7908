//! The real-time set-up's changes as the restore layer's kinds: how each is put back. None is
//! journalled (a kill undoes them with the process), so their `KIND`s only name them.

use std::cell::Cell;
use std::fs::File;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::restore::Change;
use crate::sys;

/// Memory locked (`mlockall`).
#[derive(Serialize, Deserialize)]
pub struct Locked;

impl Change for Locked {
    const KIND: &'static str = "mlock";

    fn put_back(&self, _: u32) -> Result<Option<String>, String> {
        sys::unlock_memory();
        Ok(None)
    }
}

/// `/dev/cpu_dma_latency` open with a request: closing it ends the request.
#[derive(Serialize, Deserialize)]
pub struct LatencyRequest {
    #[serde(skip)]
    pub open: Cell<Option<File>>,
}

impl Change for LatencyRequest {
    const KIND: &'static str = "cpu-dma-latency";

    fn put_back(&self, _: u32) -> Result<Option<String>, String> {
        drop(self.open.take());
        Ok(None)
    }
}

/// A thread's scheduling and timer slack as they were before it set its own (None: not
/// changed). Put back on that thread: policies are per thread.
#[derive(Serialize, Deserialize)]
pub struct ThreadScheduling {
    #[serde(skip)]
    pub previous: Option<sys::Scheduling>,
    /// The thread's timer slack before it was set to 1 ns.
    pub previous_slack: Option<u64>,
    #[serde(skip)]
    pub on_this_thread: PhantomData<*const ()>,
}

impl Change for ThreadScheduling {
    const KIND: &'static str = "thread-policy";

    fn put_back(&self, _: u32) -> Result<Option<String>, String> {
        if let Some(previous) = self.previous {
            let _ = sys::restore_scheduling(previous);
        }
        if let Some(ns) = self.previous_slack {
            let _ = sys::set_timer_slack(ns);
        }
        Ok(None)
    }
}

/// A thread's CPU affinity before it was pinned, put back on that thread.
#[derive(Serialize, Deserialize)]
pub struct Affinity {
    pub previous: Option<Vec<usize>>,
    #[serde(skip)]
    pub on_this_thread: PhantomData<*const ()>,
}

impl Change for Affinity {
    const KIND: &'static str = "affinity";

    fn put_back(&self, _: u32) -> Result<Option<String>, String> {
        if let Some(cpus) = &self.previous {
            let _ = sys::set_affinity(cpus);
        }
        Ok(None)
    }
}
