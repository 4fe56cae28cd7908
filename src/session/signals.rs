//! Stop signals: the first SIGINT/SIGTERM asks the session to stop and save; the second ends
//! the process at once (the last checkpoint is kept and the next rtbench command sees the run
//! as `aborted`).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::restore::Guard;
use crate::sys;

static RECEIVED: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);
/// Sessions holding the handlers: a study's cells run inside the study's own session.
static HOLDERS: Mutex<usize> = Mutex::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig, Ordering::SeqCst);
    if RECEIVED.fetch_add(1, Ordering::SeqCst) >= 1 {
        sys::write_stderr_raw(b"\nrtbench: second signal, aborting now; the last checkpoint is kept\n");
        sys::exit_now(128 + sig);
    }
    // Counted first, woken after: a waiter woken by this (the handler may run on another
    // thread) must find the signal, or it sleeps its whole timeout again.
    sys::wake();
}

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    (RECEIVED.load(Ordering::SeqCst) > 0).then(|| LAST.load(Ordering::SeqCst))
}

/// Our handlers for SIGINT and SIGTERM; the default ones come back when the last holder drops.
pub struct Installed(());

impl Installed {
    pub fn new() -> std::io::Result<Installed> {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        if *holders == 0 {
            RECEIVED.store(0, Ordering::SeqCst);
            sys::prepare_wake()?;
            sys::on_stop_signals(on_signal)?;
        }
        *holders += 1;
        Ok(Installed(()))
    }
}

impl Guard for Installed {
    fn name(&self) -> &'static str {
        "signal handlers"
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let mut holders = HOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        *holders -= 1;
        if *holders == 0 {
            sys::default_stop_signals();
        }
    }
}
