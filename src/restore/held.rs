//! The one holder of a system change: [`Held`] writes the change's journal before the change
//! is made and, when it drops, undoes the change through the kind's own [`Change::put_back`],
//! the very function the next rtbench command replays after a SIGKILL. So a change is put back
//! by one code path whether its process ends well or is killed.
//!
//! A change nothing outlives the process (the memory lock, a descriptor the kernel frees, a
//! thread's policy) is held [`Held::unjournalled`]: the same holder, the same `put_back`, no file.

use std::path::Path;

use super::journal::{state_dir, Change, Journal, Written};

/// A change this process holds; dropping it puts the change back.
///
/// Made in two steps, so nothing is ever changed unwritten: the holder first (its journal on
/// disk), then the change itself by its owner. A failure while making it drops the holder,
/// which puts back whatever part was made. A change that could not be put back keeps its
/// journal (the next command tries again) and is said on stderr.
pub struct Held<C: Change> {
    change: C,
    /// Removed once the change is put back; None when the change is not journalled.
    journal: Option<Written>,
}

impl<C: Change> Held<C> {
    /// Writes `change`'s journal and holds it: make the change once this returns. Err: the
    /// journal could not be written (for a [`Change::ONE_AT_A_TIME`] kind, another holder's
    /// is there); nothing is held then.
    pub fn journalled(change: C) -> std::io::Result<Held<C>> {
        Held::journalled_in(change, &state_dir())
    }

    pub(super) fn journalled_in(change: C, dir: &Path) -> std::io::Result<Held<C>> {
        let journal = Journal::mine(change);
        let written = journal.write_in(dir)?;
        Ok(Held { change: journal.change, journal: Some(written) })
    }

    /// Holds `change` without a journal: for a change the end of the process undoes anyway,
    /// or one whose journal could not be written (a kill then leaves it to a person).
    pub fn unjournalled(change: C) -> Held<C> {
        Held { change, journal: None }
    }

    /// What is held.
    pub fn change(&self) -> &C {
        &self.change
    }

    /// What is held, to note a part of the change once it is made (an original value read as
    /// it is replaced). A journalled change's journal keeps what was written first.
    pub fn change_mut(&mut self) -> &mut C {
        &mut self.change
    }
}

impl<C: Change> Drop for Held<C> {
    fn drop(&mut self) {
        match self.change.put_back(std::process::id()) {
            Ok(_) => {
                if let Some(journal) = self.journal.take() {
                    journal.remove();
                }
            }
            Err(problem) => eprintln!("rtbench: WARNING: {problem}"),
        }
    }
}

impl<C: Change + 'static> super::Guard for Held<C> {
    fn name(&self) -> &'static str {
        C::KIND
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde::{Deserialize, Serialize};

    use super::*;

    /// A setting in a file: `was` is put back, and every put-back is logged beside it.
    #[derive(Debug, Serialize, Deserialize)]
    struct Setting {
        file: PathBuf,
        was: String,
    }

    impl Setting {
        fn log(&self) -> PathBuf {
            self.file.with_extension("log")
        }
    }

    impl Change for Setting {
        const KIND: &'static str = "test-setting";

        fn put_back(&self, owner: u32) -> Result<Option<String>, String> {
            std::fs::write(&self.file, &self.was).map_err(|e| e.to_string())?;
            let mut log = std::fs::read_to_string(self.log()).unwrap_or_default();
            log.push_str(&format!("put back for {owner}\n"));
            std::fs::write(self.log(), log).map_err(|e| e.to_string())?;
            Ok(Some(format!("put {} back for pid {owner}", self.file.display())))
        }
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_default()
    }

    /// The journals in `dir`.
    fn journals(dir: &Path) -> Vec<String> {
        let names = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string());
        names.filter(|n| n.starts_with("test-setting")).collect()
    }

    /// A setting at "original" in `files`, held with its journal in `state`: not changed yet.
    fn held_setting(state: &Path, files: &Path) -> (PathBuf, Held<Setting>) {
        let file = files.join("setting");
        std::fs::write(&file, "original").unwrap();
        let held = Held::journalled_in(Setting { file: file.clone(), was: read(&file) }, state).unwrap();
        (file, held)
    }

    /// `file` is back, by one put_back of this process's change, and no journal is left.
    fn put_back_once(file: &Path, state: &Path) {
        assert_eq!(read(file), "original");
        assert_eq!(read(&file.with_extension("log")), format!("put back for {}\n", std::process::id()));
        assert!(journals(state).is_empty(), "nothing is left to replay");
    }

    #[test]
    fn a_held_change_is_journalled_before_it_is_made_and_put_back_when_it_drops() {
        let (state, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (file, held) = held_setting(state.path(), files.path());
        let mine = format!("test-setting-{}.json", std::process::id());
        assert_eq!(journals(state.path()), std::slice::from_ref(&mine), "written before anything changed");
        let journal = read(&state.path().join(&mine));
        assert!(journal.contains(r#""was": "original""#), "{journal}");
        std::fs::write(&file, "changed").unwrap();
        drop(held);
        put_back_once(&file, state.path());
    }

    #[test]
    fn a_holder_killed_with_its_change_is_put_back_by_the_replay_through_the_same_put_back() {
        let (state, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (file, held) = held_setting(state.path(), files.path());
        std::fs::write(&file, "changed").unwrap();
        // Killed: no drop runs. Its journal then names a process that is gone (a pid whose
        // start time differs is a reused one).
        std::mem::forget(held);
        let at = state.path().join(&journals(state.path())[0]);
        let mut left: Journal<Setting> = serde_json::from_str(&read(&at)).unwrap();
        left.pid_start = "0".into();
        std::fs::write(&at, serde_json::to_vec(&left).unwrap()).unwrap();
        let said = super::super::journal::replay_in::<Setting>(state.path());
        assert_eq!(said, [format!("put {} back for pid {}", file.display(), std::process::id())]);
        put_back_once(&file, state.path());
    }

    #[test]
    fn an_unjournalled_change_writes_nothing_and_a_failed_put_back_keeps_the_journal() {
        let (state, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let file = files.path().join("setting");
        std::fs::write(&file, "changed").unwrap();
        drop(Held::unjournalled(Setting { file: file.clone(), was: "original".into() }));
        assert_eq!(read(&file), "original", "put back all the same");
        let nowhere = Setting { file: files.path().join("no/such/setting"), was: "x".into() };
        drop(Held::journalled_in(nowhere, state.path()).unwrap());
        assert_eq!(journals(state.path()).len(), 1, "kept for the next command to try again");
    }
}
