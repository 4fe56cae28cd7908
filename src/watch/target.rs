//! What `watch` attaches to: the threads of a process (`--pid`), of every process of a name
//! (`--comm`, as `pgrep -x` finds them), or of a cgroup v2 (`--cgroup`), read from /proc as
//! they are when the watch begins. Nothing of them is changed: their policy, priority and
//! affinity are only read.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// The watched application, as the user named it.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Pid(u32),
    Comm(String),
    /// A cgroup v2 directory: absolute, or relative to the cgroup2 mount.
    Cgroup(PathBuf),
}

/// A scheduling policy, as the kernel numbers it (`sched_setscheduler(2)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
}

impl Policy {
    fn of(number: u32) -> Option<Policy> {
        Some(match number {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Deadline => "deadline",
        }
    }

    /// A real-time policy: FIFO, round-robin or deadline.
    pub fn real_time(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
}

/// One thread of the watched application when the watch began.
#[derive(Clone, Debug, PartialEq)]
pub struct Thread {
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    pub comm: String,
    pub policy: Policy,
    /// Its real-time priority (1–99; 0 for the other policies).
    pub priority: u32,
    /// The CPUs it may run on.
    pub cpus: Vec<usize>,
}

/// The threads of `target`, each process's main thread first and the others by id; an input
/// error when it names no process, or a cgroup without threads.
pub fn threads(target: &Target) -> Result<Vec<Thread>> {
    let processes = match target {
        Target::Pid(pid) => match Path::new(&format!("/proc/{pid}/task")).is_dir() {
            true => vec![*pid],
            false => return Err(crate::invalid!("watch --pid {pid}: no such process")),
        },
        Target::Comm(name) => named(name),
        Target::Cgroup(dir) => in_cgroup(dir)?,
    };
    let found: Vec<Thread> = processes.iter().flat_map(|&pid| tasks(pid)).filter_map(read_thread).collect();
    if found.is_empty() {
        return Err(match target {
            Target::Pid(pid) => crate::invalid!("watch --pid {pid}: the process ended"),
            Target::Comm(name) => crate::invalid!("watch --comm {name}: no process of that name"),
            Target::Cgroup(dir) => crate::invalid!("watch --cgroup {}: it holds no thread", dir.display()),
        });
    }
    Ok(found)
}

/// The processes whose command name is `name` (the kernel keeps its first 15 bytes).
fn named(name: &str) -> Vec<u32> {
    let name: String = name.chars().take(15).collect();
    let mut found: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| comm_of(pid).is_some_and(|c| c == name))
        .collect();
    found.sort_unstable();
    found
}

/// The processes of the cgroup v2 `dir` (threads of a threaded cgroup belong to their process).
fn in_cgroup(dir: &Path) -> Result<Vec<u32>> {
    let full = match dir.is_absolute() {
        true => dir.to_path_buf(),
        false => cgroup2_mount().unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup")).join(dir),
    };
    let listed = |file: &str| crate::sysinfo::read(&full.join(file).display().to_string());
    let Some(procs) = listed("cgroup.procs").or_else(|| listed("cgroup.threads")) else {
        return Err(crate::invalid!("watch --cgroup {}: not a cgroup v2 directory", dir.display()));
    };
    let mut pids: Vec<u32> = procs.lines().filter_map(|l| l.trim().parse().ok()).collect();
    // A threaded cgroup lists its threads; the process of each is what is watched.
    pids = pids.into_iter().filter_map(tgid_of).collect();
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// Where cgroup v2 is mounted, from /proc/self/mountinfo.
fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = crate::sysinfo::read("/proc/self/mountinfo")?;
    mounts.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next() == Some("cgroup2")).then(|| pre.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// The thread ids of process `pid`: its main thread first, then the others in the order of
/// their ids (which wrap at pid_max, so a later thread's may be lower than its process's).
fn tasks(pid: u32) -> Vec<(u32, u32)> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable_by_key(|&tid| (tid != pid, tid));
    tids.into_iter().map(|tid| (pid, tid)).collect()
}

/// The process of thread `tid`; None when it has ended.
pub fn tgid_of(tid: u32) -> Option<u32> {
    status_field(&crate::sysinfo::read(&format!("/proc/{tid}/status"))?, "Tgid:")?.parse().ok()
}

/// The command name of thread `tid`; None when it has ended.
pub fn comm_of(tid: u32) -> Option<String> {
    crate::sysinfo::read(&format!("/proc/{tid}/comm")).map(|c| c.trim_end().to_string())
}

/// The fields of a thread's /proc stat after its command name (which may hold spaces and
/// parentheses), counted from the state as 0; None when it has ended.
pub fn task_stat(tgid: u32, tid: u32) -> Option<Vec<String>> {
    let stat = crate::sysinfo::read(&format!("/proc/{tgid}/task/{tid}/stat"))?;
    Some(stat.rsplit_once(')')?.1.split_whitespace().map(str::to_string).collect())
}

/// One thread as /proc shows it; None when it ended meanwhile.
fn read_thread((tgid, tid): (u32, u32)) -> Option<Thread> {
    let base = format!("/proc/{tgid}/task/{tid}");
    let comm = crate::sysinfo::read(&format!("{base}/comm"))?.trim_end().to_string();
    // 37 rt_priority, 38 policy.
    let rest = task_stat(tgid, tid)?;
    let priority = rest.get(37)?.parse().ok()?;
    let policy = Policy::of(rest.get(38)?.parse().ok()?)?;
    let status = crate::sysinfo::read(&format!("{base}/status"))?;
    let cpus = crate::sysinfo::parse_cpu_list(&status_field(&status, "Cpus_allowed_list:")?)?;
    Some(Thread { tid, tgid, comm, policy, priority, cpus })
}

/// A field of /proc/PID/status.
fn status_field(status: &str, name: &str) -> Option<String> {
    status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_s_threads_are_read_with_their_policy_priority_and_cpus() {
        // A thread of this process with a name of its own, held until it is read.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (running, started) = std::sync::mpsc::channel::<()>();
        // It names itself once it runs: read after it says so.
        let held = std::thread::Builder::new()
            .name("watched-one".into())
            .spawn(move || {
                running.send(()).unwrap();
                rx.recv().unwrap();
            })
            .unwrap();
        started.recv().unwrap();
        let me = std::process::id();
        let found = threads(&Target::Pid(me)).unwrap();
        tx.send(()).unwrap();
        held.join().unwrap();
        assert_eq!(found[0].tid, me, "the main thread first: {found:?}");
        let one = found.iter().find(|t| t.comm == "watched-one").expect("the named thread");
        assert_eq!((one.tgid, one.policy, one.priority), (me, Policy::Other, 0));
        assert_eq!(one.cpus, crate::sys::affinity().unwrap(), "its CPUs are this process's");
        assert!(found.iter().all(|t| t.tgid == me));
    }

    #[test]
    fn a_process_is_found_by_its_name_and_a_missing_one_is_an_input_error() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        // Named by its program once it has run exec, which the spawn does not wait for.
        let named = || crate::sysinfo::read(&format!("/proc/{}/comm", child.id())).is_some_and(|c| c == "sleep\n");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !named() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let found = threads(&Target::Comm("sleep".into()));
        child.kill().unwrap();
        child.wait().unwrap();
        let found = found.unwrap();
        assert!(found.iter().any(|t| t.tid == child.id() && t.comm == "sleep"), "{found:?}");
        let e = threads(&Target::Comm("no-such-name-x".into())).unwrap_err().to_string();
        assert_eq!(e, "watch --comm no-such-name-x: no process of that name");
        let e = threads(&Target::Pid(u32::MAX - 1)).unwrap_err().to_string();
        assert_eq!(e, format!("watch --pid {}: no such process", u32::MAX - 1));
        let e = threads(&Target::Cgroup("/no/such/cgroup".into())).unwrap_err().to_string();
        assert_eq!(e, "watch --cgroup /no/such/cgroup: not a cgroup v2 directory");
    }

    #[test]
    fn policies_are_named_as_the_kernel_numbers_them() {
        assert_eq!(Policy::of(1).map(Policy::name), Some("fifo"));
        assert!(Policy::of(6).unwrap().real_time() && !Policy::of(3).unwrap().real_time());
        assert_eq!(Policy::of(4), None, "4 is no policy (SCHED_ISO was never merged)");
    }
}
