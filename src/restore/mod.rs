//! Every system setting rtbench changes goes through here, as rtla's `run_tool` keeps the
//! original of every kernel setting it touches. Each kind of change is a [`Change`] (its fields
//! and how to put them back) held by one [`Held`]: it writes the change down in a [`journal`]
//! before the change is made, when the change must outlive a killed process, and puts the
//! change back when it drops through the same `put_back` the next rtbench command replays
//! (`app::REPLAY` and the instruments' registry list every journalled kind). A [`Guard`] is
//! what a session holds (a `Held` or a type made of them) and drops in reverse order when it
//! ends.
//!
//! This module knows no kind of change: shield, tracer, preemption switch, load and the rest
//! depend on it, never the other way.

mod held;
pub mod journal;

use std::path::Path;

pub use held::Held;
pub use journal::{alive, replay, Change, Journal};

/// A system change held for a session. Dropping it puts the old state back.
pub trait Guard: std::any::Any {
    /// What it changed, for messages.
    fn name(&self) -> &'static str;
}

impl Guard for Box<dyn Guard> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
}

/// Writes `bytes` to `path`, whole or not at all: a reader sees the old file or the new one,
/// never a part. The temporary file beside it carries the writer's pid, so two writers never
/// share one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temporary(path);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A hidden name beside `path` for a file about to take its place.
fn temporary(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.rtbench-tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("sub/out.txt");
        write_atomic(&at, b"first, longer text").unwrap();
        write_atomic(&at, b"second").unwrap();
        assert_eq!(std::fs::read(&at).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(at.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, ["out.txt"], "the temporary file was renamed, not left");
        let into_a_dir = write_atomic(dir.path(), b"x");
        assert!(into_a_dir.is_err(), "a directory cannot be replaced by a file");
    }
}
