//! An ftrace instance of rtbench's own, written in a journal before it exists and removed
//! (with a tracefs mount of ours) when it drops, or by the next rtbench command when the
//! process was killed. The breach tracer and the split each hold one.

use std::io;
use std::path::{Path, PathBuf};

use super::instance::{self, Instance};
use super::journal::{ClassifyTraced, SplitTraced, Traced};
use crate::restore::{Change, Journal, Written};

pub struct Owned {
    pub instance: Instance,
    root: PathBuf,
    mounted_here: bool,
    /// Removed once the instance is gone.
    journal: Option<Written>,
}

impl Owned {
    /// Makes `instances/NAME` with `make` (given tracefs's root), journalled as `kind` says
    /// first; `Err` says why there is no instance.
    pub fn make<C: Change>(
        name: &str,
        kind: impl FnOnce(Traced) -> C,
        make: impl FnOnce(&Path) -> io::Result<Instance>,
    ) -> Result<Owned, String> {
        let mut fs = instance::tracefs()?;
        // Mounted by another rtbench that traces now: whichever of us ends last unmounts it,
        // or two traced runs at once would leave it mounted.
        fs.mounted_here |= mounted_by_rtbench(&fs.root);
        let j = Journal::mine(kind(Traced {
            instance: fs.root.join("instances").join(name),
            mounted: fs.mounted_here.then(|| fs.root.clone()),
        }));
        let undo_mount = || {
            if fs.mounted_here {
                instance::unmount_if_unused(&fs.root);
            }
        };
        // Written before the instance exists: a kill between the two leaves nothing unknown.
        let journal = j.write().map_err(|e| {
            undo_mount();
            format!("cannot write the tracer's journal: {e}")
        })?;
        match make(&fs.root) {
            Ok(instance) => {
                Ok(Owned { instance, root: fs.root, mounted_here: fs.mounted_here, journal: Some(journal) })
            }
            Err(e) => {
                undo_mount();
                journal.remove();
                Err(format!("cannot set up the trace instance: {e}"))
            }
        }
    }
}

/// Whether a running rtbench's tracer journal says it mounted tracefs at `root`.
fn mounted_by_rtbench(root: &Path) -> bool {
    fn by<C: Change>(root: &Path, traced: impl Fn(&C) -> &Traced) -> bool {
        crate::restore::alive::<C>().iter().any(|j| traced(&j.change).mounted.as_deref() == Some(root))
    }
    by::<Traced>(root, |t| t) || by::<SplitTraced>(root, |t| &t.0) || by::<ClassifyTraced>(root, |t| &t.0)
}

impl Drop for Owned {
    fn drop(&mut self) {
        if instance::remove(&self.instance.dir).is_ok() {
            if self.mounted_here {
                instance::unmount_if_unused(&self.root);
            }
            if let Some(journal) = self.journal.take() {
                journal.remove();
            }
        }
    }
}
