//! The journal: a change written down before it is made, in a runtime directory emptied at
//! boot (just as the changes are undone by a reboot), so a process killed while it held the
//! change leaves enough behind for the next rtbench command to put the system back.
//!
//! One format for every kind: the owner (pid and its start time, so a reused pid is not taken
//! for it) and the kind's own fields beside them, in `KIND-PID.json`, or `KIND.json` for a
//! change only one process may hold at a time. Adding a kind is one [`Change`] impl in its own
//! file and one line in the replay table; its holder is [`Held`](super::Held).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A kind of system change that can outlive the process that made it.
pub trait Change: Serialize + DeserializeOwned {
    /// The journal's file-name stem.
    const KIND: &'static str;
    /// Only one process on the machine may hold it at a time: a second is refused while the
    /// first one's journal is there.
    const ONE_AT_A_TIME: bool = false;

    /// Puts back what `owner` changed: a process now gone, when the next command replays its
    /// journal, or this one, when its [`Held`](super::Held) drops (one way back for both). Ok:
    /// what was done, for the user to read (None: nothing needed doing); Err: what could not be
    /// put back (the journal is kept for the next command, or a person, to finish).
    fn put_back(&self, owner: u32) -> Result<Option<String>, String>;
}

/// One written-down change and the process that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Journal<C> {
    pub pid: u32,
    pub pid_start: String,
    #[serde(flatten)]
    pub change: C,
}

/// A journal on disk, for the [`Held`](super::Held) that wrote it: removed once the change is
/// put back.
#[derive(Debug)]
pub(super) struct Written {
    path: PathBuf,
}

impl Written {
    /// The change is put back: nothing is left to replay.
    pub(super) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where journals live. `RTBENCH_STATE_DIR` moves it.
pub fn state_dir() -> PathBuf {
    std::env::var_os("RTBENCH_STATE_DIR").map_or_else(|| PathBuf::from("/run/rtbench"), PathBuf::from)
}

impl<C: Change> Journal<C> {
    /// This process's journal of `change`.
    pub(super) fn mine(change: C) -> Journal<C> {
        let pid = std::process::id();
        Journal { pid, pid_start: crate::sysinfo::process_start(pid), change }
    }

    /// Writes it into `dir` before the change is made (only a [`Held`](super::Held) does). For
    /// a change [`Change::ONE_AT_A_TIME`], fails when a journal of that kind is there already
    /// (alive or not yet replayed): the file is linked into place, and a link never replaces one.
    pub(super) fn write_in(&self, dir: &Path) -> std::io::Result<Written> {
        let path = path_of::<C>(dir, self.pid);
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        if !C::ONE_AT_A_TIME {
            super::write_atomic(&path, &bytes)?;
            return Ok(Written { path });
        }
        let tmp = path.with_extension(format!("{}.tmp", self.pid));
        super::write_atomic(&tmp, &bytes)?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        linked.map(|()| Written { path })
    }

    /// Whether the process that wrote it still runs.
    pub fn owner_alive(&self) -> bool {
        crate::sysinfo::same_process(self.pid, &self.pid_start)
    }
}

/// The journal a [`Change::ONE_AT_A_TIME`] kind has now, if any.
pub fn current<C: Change>() -> std::io::Result<Option<Journal<C>>> {
    current_in(&state_dir())
}

fn current_in<C: Change>(dir: &Path) -> std::io::Result<Option<Journal<C>>> {
    read(&path_of::<C>(dir, 0))
}

fn path_of<C: Change>(dir: &Path, pid: u32) -> PathBuf {
    let name = if C::ONE_AT_A_TIME { format!("{}.json", C::KIND) } else { format!("{}-{pid}.json", C::KIND) };
    dir.join(name)
}

/// A journal file. One that cannot be read as its kind is an error: it is kept for a person to
/// look at rather than taken for "nothing to restore".
fn read<C: Change>(at: &Path) -> std::io::Result<Option<Journal<C>>> {
    match std::fs::read(at) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::other(format!("{} is not a {} journal: {e}", at.display(), C::KIND))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The journals of kind `C` whose process still runs: the changes other rtbench processes hold
/// now (a tracefs one of them mounted, say).
pub fn alive<C: Change>() -> Vec<Journal<C>> {
    all::<C>(&state_dir()).iter().filter_map(|p| read::<C>(p).ok().flatten()).filter(|j| j.owner_alive()).collect()
}

/// Every journal of kind `C` on disk.
fn all<C: Change>(dir: &Path) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(dir) else { return Vec::new() };
    let one = format!("{}.json", C::KIND);
    let prefix = format!("{}-", C::KIND);
    let mut found: Vec<PathBuf> = dir
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                let per_pid = n.strip_prefix(&prefix).and_then(|r| r.strip_suffix(".json"));
                n == one || per_pid.is_some_and(|pid| pid.parse::<u32>().is_ok())
            })
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Puts back every change of kind `C` whose process is gone; says what it did and what it
/// could not do, a line each. A put-back change's journal is removed; a failed one stays.
pub fn replay<C: Change>() -> Vec<String> {
    replay_in::<C>(&state_dir())
}

pub(super) fn replay_in<C: Change>(dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    for path in all::<C>(dir) {
        let j = match read::<C>(&path) {
            Ok(Some(j)) => j,
            Ok(None) => continue,
            Err(e) => {
                said.push(format!("WARNING: {e}; remove it once what it names is known to be put back"));
                continue;
            }
        };
        if j.owner_alive() {
            continue;
        }
        match j.change.put_back(j.pid) {
            Ok(done) => {
                let _ = std::fs::remove_file(&path);
                said.extend(done);
            }
            Err(problem) => said.push(format!("WARNING: {problem}")),
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Flag {
        file: PathBuf,
        was: String,
    }

    impl Change for Flag {
        const KIND: &'static str = "test-flag";
        fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
            std::fs::write(&self.file, &self.was)
                .map_err(|e| format!("cannot put {} back: {e}", self.file.display()))?;
            Ok(Some(format!("put {} back for pid {owner}", self.file.display())))
        }
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Only {
        n: u32,
    }

    impl Change for Only {
        const KIND: &'static str = "test-only";
        const ONE_AT_A_TIME: bool = true;
        fn put_back(&self, _: u32) -> Result<Option<String>, String> {
            Ok(None)
        }
    }

    fn in_state_dir<T>(f: impl FnOnce(&Path) -> T) -> T {
        let dir = tempfile::tempdir().unwrap();
        f(dir.path())
    }

    #[test]
    fn a_dead_owners_change_is_put_back_once_and_a_live_ones_is_left() {
        in_state_dir(|dir| {
            let file = dir.join("setting");
            std::fs::write(&file, "changed").unwrap();
            let flag = Flag { file: file.clone(), was: "original".into() };
            let live = Journal::mine(flag.clone());
            let written = live.write_in(dir).unwrap();
            assert!(replay_in::<Flag>(dir).is_empty(), "this process is alive: its change stays");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed");
            written.remove();
            // A journal from a pid whose start time differs: the pid was reused, the owner is gone.
            let dead = Journal { pid: std::process::id(), pid_start: "0".into(), change: flag };
            dead.write_in(dir).unwrap();
            let said = replay_in::<Flag>(dir);
            assert_eq!(said.len(), 1, "{said:?}");
            assert!(said[0].starts_with("put "), "{said:?}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "original");
            assert!(replay_in::<Flag>(dir).is_empty(), "the journal went with the replay");
        });
    }

    #[test]
    fn a_change_that_cannot_be_put_back_keeps_its_journal() {
        in_state_dir(|dir| {
            let flag = Flag { file: dir.join("no/such/dir/setting"), was: "x".into() };
            Journal { pid: 1, pid_start: "0".into(), change: flag }.write_in(dir).unwrap();
            for _ in 0..2 {
                let said = replay_in::<Flag>(dir);
                assert_eq!(said.len(), 1, "{said:?}");
                assert!(said[0].starts_with("WARNING: cannot put"), "{said:?}");
            }
        });
    }

    #[test]
    fn one_at_a_time_refuses_a_second_holder_and_a_damaged_journal_is_said() {
        in_state_dir(|dir| {
            assert_eq!(current_in::<Only>(dir).unwrap(), None);
            let first = Journal::mine(Only { n: 1 }).write_in(dir).unwrap();
            assert!(Journal::mine(Only { n: 2 }).write_in(dir).is_err(), "a second holder is refused");
            assert_eq!(current_in::<Only>(dir).unwrap().map(|j| j.change.n), Some(1));
            first.remove();
            assert!(Journal::mine(Only { n: 3 }).write_in(dir).is_ok(), "free again once removed");
            std::fs::write(dir.join("test-only.json"), b"{not json").unwrap();
            assert!(current_in::<Only>(dir).is_err(), "damaged is an error, not 'nothing to restore'");
            let said = replay_in::<Only>(dir);
            assert!(said.len() == 1 && said[0].contains("is not a test-only journal"), "{said:?}");
            assert!(dir.join("test-only.json").exists(), "kept for a person to look at");
        });
    }

    #[test]
    fn the_owner_and_the_kinds_fields_sit_side_by_side() {
        let j = Journal { pid: 7, pid_start: "99".into(), change: Only { n: 4 } };
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(text, r#"{"pid":7,"pid_start":"99","n":4}"#);
    }
}
