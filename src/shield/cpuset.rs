//! The cpuset hierarchy of cgroup v1 (as `cset shield` uses it): making a cpuset, moving
//! tasks between cpusets, removing a cpuset with its tasks sent back to the root.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A mounted cpuset hierarchy.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    pub root: PathBuf,
    /// "cpuset." on a normal mount, "" on one mounted with `noprefix`.
    pub prefix: String,
}

impl Hierarchy {
    /// The v1 cpuset hierarchy from /proc/mounts, or why there is none to use.
    pub fn find() -> Result<Hierarchy, String> {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let root = mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset")).then(|| PathBuf::from(f[1]))
        });
        let Some(root) = root else {
            let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").unwrap_or_default();
            return Err(if v2.split_whitespace().any(|c| c == "cpuset") {
                "the cpuset controller is on cgroup v2 here; the shield needs the v1 cpuset hierarchy \
                 (boot with cgroup_no_v1= unset and mount -t cgroup -o cpuset)"
                    .into()
            } else {
                "no cpuset hierarchy is mounted (mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset)".into()
            });
        };
        let prefix = if root.join("cpuset.cpus").exists() { "cpuset." } else { "" };
        Ok(Hierarchy { root, prefix: prefix.to_string() })
    }

    pub fn dir(&self, set: &str) -> PathBuf {
        if set.is_empty() {
            self.root.clone()
        } else {
            self.root.join(set)
        }
    }

    fn file(&self, set: &str, name: &str) -> PathBuf {
        self.dir(set).join(format!("{}{name}", self.prefix))
    }

    /// The `tasks` file of `set` ("" for the root): writing a thread id there moves the thread.
    pub fn tasks_file(&self, set: &str) -> PathBuf {
        self.dir(set).join("tasks")
    }

    /// The memory nodes of the root, which every cpuset made here gets too.
    pub fn mems(&self) -> std::io::Result<String> {
        Ok(std::fs::read_to_string(self.file("", "mems"))?.trim().to_string())
    }

    /// Makes cpuset `set` with `cpus` and the root's memory nodes.
    pub fn make(&self, set: &str, cpus: &str, mems: &str) -> std::io::Result<()> {
        let dir = self.dir(set);
        if !dir.exists() {
            std::fs::create_dir(&dir)?;
        }
        std::fs::write(self.file(set, "cpus"), cpus)?;
        std::fs::write(self.file(set, "mems"), mems)
    }

    /// The thread ids in `set`.
    pub fn tasks(&self, set: &str) -> Vec<u32> {
        std::fs::read_to_string(self.tasks_file(set))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Moves every thread of `from` into `to`, a few passes so threads forked meanwhile follow.
    /// Returns the threads that refused, with the error; threads that ended meanwhile are no
    /// failure.
    pub fn move_all(&self, from: &str, to: &str) -> std::io::Result<Vec<(u32, std::io::Error)>> {
        let mut failed: Vec<(u32, std::io::Error)> = Vec::new();
        for _ in 0..3 {
            let left: Vec<u32> = self.tasks(from).into_iter().filter(|t| !failed.iter().any(|f| f.0 == *t)).collect();
            if left.is_empty() {
                break;
            }
            let mut file = std::fs::OpenOptions::new().write(true).open(self.tasks_file(to))?;
            for tid in left {
                // One write per thread: the kernel takes one id per write.
                if let Err(e) = file.write_all(format!("{tid}\n").as_bytes()) {
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        failed.push((tid, e));
                    }
                }
            }
        }
        Ok(failed)
    }

    /// Sends the threads of `set` back to the root and removes it. Absent already is done.
    pub fn remove(&self, set: &str) -> std::io::Result<()> {
        let dir = self.dir(set);
        if !dir.exists() {
            return Ok(());
        }
        let mut last = None;
        // Threads that are exiting leave the list a moment later: retry for up to a second.
        for _ in 0..100 {
            self.move_all(set, "")?;
            match std::fs::remove_dir(&dir) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("could not remove")))
    }
}

/// Moves the calling thread into the cpuset whose `tasks` file this is.
pub fn enter(tasks_file: &Path) -> std::io::Result<()> {
    // "0" is the writing thread itself.
    std::fs::write(tasks_file, "0")
}
