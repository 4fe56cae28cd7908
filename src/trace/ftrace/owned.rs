//! An ftrace instance of rtbench's own, a [`Held`] change: written in a journal before it
//! exists and removed (with a tracefs mount of ours) by its kind's one `put_back`, when it
//! drops or, when the process was killed, by the next rtbench command. The breach tracer, the
//! split and the classification each hold one.

use std::io;
use std::path::Path;

use super::instance::{self, Instance};
use super::journal::{ClassifyTraced, SplitTraced, TimerlatTraced, Traced};
use crate::restore::{Change, Guard, Held};

pub struct Owned {
    pub instance: Instance,
    /// The instance's [`Held`] change (its kind's `put_back` removes it, and a tracefs mount
    /// of ours); dropped with it.
    _held: Box<dyn Guard>,
}

impl Owned {
    /// Makes `instances/NAME` with `make` (given tracefs's root), journalled as `kind` says
    /// first; `Err` says why there is no instance.
    pub fn make<C: Change + 'static>(
        name: &str,
        kind: impl FnOnce(Traced) -> C,
        make: impl FnOnce(&Path) -> io::Result<Instance>,
    ) -> Result<Owned, String> {
        let mut fs = instance::tracefs()?;
        // Mounted by another rtbench that traces now: whichever of us ends last unmounts it,
        // or two traced runs at once would leave it mounted.
        fs.mounted_here |= mounted_by_rtbench(&fs.root);
        let change = kind(Traced {
            instance: fs.root.join("instances").join(name),
            mounted: fs.mounted_here.then(|| fs.root.clone()),
        });
        // Written before the instance exists: a kill between the two leaves nothing unknown.
        let held = Held::journalled(change).map_err(|e| {
            if fs.mounted_here {
                instance::unmount_if_unused(&fs.root);
            }
            format!("cannot write the tracer's journal: {e}")
        })?;
        // A failure drops `held`, which removes what was made and unmounts a mount of ours.
        let instance = make(&fs.root).map_err(|e| format!("cannot set up the trace instance: {e}"))?;
        Ok(Owned { instance, _held: Box::new(held) })
    }
}

/// Whether a running rtbench's tracer journal says it mounted tracefs at `root`.
fn mounted_by_rtbench(root: &Path) -> bool {
    fn by<C: Change>(root: &Path, traced: impl Fn(&C) -> &Traced) -> bool {
        crate::restore::alive::<C>().iter().any(|j| traced(&j.change).mounted.as_deref() == Some(root))
    }
    by::<Traced>(root, |t| t)
        || by::<SplitTraced>(root, |t| &t.0)
        || by::<ClassifyTraced>(root, |t| &t.0)
        || by::<TimerlatTraced>(root, |t| &t.0)
}
