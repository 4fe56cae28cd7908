//! `watch`: the user's own real-time application measured as it runs, without changing it —
//! which of its threads were late from wake-up to running, by how much, how often they moved,
//! and the mistakes that cost them latency. [`target`] finds the threads; [`bpf`] follows
//! their wake-ups, switches and migrations in the kernel; [`follow`] turns those events into
//! each thread's latencies; [`calls`] judges why a thread slept; [`instead`] looks up what ran
//! in its long waits; [`mistakes`] names what the application did wrong.

pub mod bpf;
pub mod calls;
pub mod follow;
pub mod instead;
pub mod mistakes;
pub mod target;

#[cfg(test)]
mod tests {
    use std::io::BufRead;
    use std::sync::Mutex;

    use super::bpf::Programs;
    use super::follow::Followed;
    use super::target::{threads, Policy, Target};

    /// The demonstration application (tests/apps/rtdemo.c), built with the machine's C
    /// compiler into `dir`.
    fn rtdemo(dir: &std::path::Path) -> std::path::PathBuf {
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/rtdemo.c");
        let out = dir.join("rtdemo");
        let built =
            std::process::Command::new("cc").args(["-O2", "-Wall", "-pthread", "-o"]).arg(&out).arg(source).status();
        assert!(built.unwrap().success(), "rtdemo builds");
        out
    }

    /// Watched for a second, the demonstration application's periodic FIFO thread has each
    /// wake-up timed at its real-time priority, and nothing of the application changed: its
    /// threads' policies, priorities and CPUs are the same after as before.
    #[rtbench_testkit::needs(root, btf, native, "cc")]
    #[test]
    fn the_demonstration_application_s_periodic_thread_is_followed_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = std::process::Command::new(rtdemo(dir.path()))
            .args(["-D", "1.5", "-p", "1000"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(app.stdout.take().unwrap()).lines();
        let ready = lines.next().unwrap().unwrap();
        assert_eq!(ready, format!("ready {}", app.id()));
        let said = lines.next().unwrap().unwrap();
        let tid: u32 = said.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(said.ends_with("rt-periodic FIFO 80"), "{said}");
        let before = threads(&Target::Pid(app.id())).unwrap();
        let mut programs = crate::sys::attached(|| Programs::attach(&[app.id()]));
        let followed = Mutex::new(Followed::default());
        std::thread::sleep(std::time::Duration::from_millis(1000));
        let after = threads(&Target::Pid(app.id())).unwrap();
        programs.drain(&followed).unwrap();
        assert!(app.wait().unwrap().success());
        let periodic = before.iter().find(|t| t.tid == tid).expect("the periodic thread");
        assert_eq!((periodic.policy, periodic.priority, &periodic.cpus[..]), (Policy::Fifo, 80, &[0][..]));
        assert_eq!(before, after, "nothing of the application changed");
        let f = followed.lock().unwrap();
        let a = f.threads.get(&tid).expect("its account");
        // About 1000 periods in the second watched; the VM's host may take the CPU for some.
        assert!(a.latencies.count > 500, "{} wake-ups timed", a.latencies.count);
        assert_eq!(a.prio, Some(19), "FIFO 80 is the kernel's priority 99 - 80");
        assert_eq!((a.migrations, a.last_cpu), (0, Some(0)), "pinned to CPU 0: {a:?}");
    }
}
