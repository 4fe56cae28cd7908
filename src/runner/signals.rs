//! Stop signals: the first SIGINT/SIGTERM asks the run to stop and save; the second ends the
//! process at once (the last checkpoint is kept and the next rtbench command marks the run
//! `aborted`).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use crate::sys;

static RECEIVED: AtomicUsize = AtomicUsize::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig, Ordering::SeqCst);
    if RECEIVED.fetch_add(1, Ordering::SeqCst) >= 1 {
        sys::write_stderr_raw(b"\nrtbench: second signal, aborting now; the last checkpoint is kept\n");
        sys::exit_now(128 + sig);
    }
}

/// Installs the handlers for the length of a run.
fn install() -> std::io::Result<()> {
    RECEIVED.store(0, Ordering::SeqCst);
    sys::on_stop_signals(on_signal)
}

/// Puts the default handlers back.
fn restore() {
    sys::default_stop_signals();
}

/// The first stop signal received, if any.
pub fn received() -> Option<i32> {
    (RECEIVED.load(Ordering::SeqCst) > 0).then(|| LAST.load(Ordering::SeqCst))
}

/// Installs the handlers and puts the defaults back when dropped, however the run ends.
pub struct Installed(());

impl Installed {
    pub fn new() -> std::io::Result<Installed> {
        install()?;
        Ok(Installed(()))
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        restore();
    }
}
