//! Making processes, as LMbench's lat_proc does: from a small helper process (helper/spawn.c,
//! compiled with rtbench) that rtbench starts once per operation, so fork copies a small
//! address space, not rtbench's, and exec runs a tiny program. The helper is linked as
//! LMbench's programs are (libm, libtirpc), so what it forks, exits and execs is LMbench's
//! process image. It times its own loop and answers with nanoseconds.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::{Bench, Timed};

/// The helper's executable, built by build.rs (empty when no C compiler was found).
const HELPER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rtbench-spawn"));

/// "lmbench" when build.rs linked the helper as LMbench links its programs, "libc" when it
/// could not (no libtirpc to link) and the fork rows price a smaller process.
#[cfg(test)]
const IMAGE: &str = env!("RTBENCH_SPAWN_IMAGE");

/// How each process is made.
#[derive(Clone, Copy)]
pub enum How {
    /// fork, the child exits at once, wait.
    Exit,
    /// fork, exec the helper as a tiny program that exits, wait.
    Exec,
    /// fork, exec `/bin/sh -c` running the helper as that tiny program, wait.
    Shell,
}

impl How {
    fn word(self) -> &'static str {
        match self {
            How::Exit => "fork",
            How::Exec => "exec",
            How::Shell => "sh",
        }
    }
}

/// The running helper; dropping it ends its input, and it exits.
pub struct Spawner {
    how: How,
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    _dir: tempfile::TempDir,
}

impl Spawner {
    pub fn make(how: How) -> io::Result<Box<dyn Bench>> {
        Ok(Box::new(Spawner::start(how)?))
    }

    /// The helper started, waiting for requests.
    fn start(how: How) -> io::Result<Spawner> {
        if HELPER.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "rtbench was built without a C compiler, so without its process-creation helper",
            ));
        }
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("rtbench-spawn");
        std::fs::write(&path, HELPER)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        let mut child = spawn(&path)?;
        let input = child.stdin.take();
        let output = BufReader::new(child.stdout.take().ok_or_else(|| io::Error::other("no helper output"))?);
        Ok(Spawner { how, child, input, output, _dir: dir })
    }
}

/// Starts the helper at `path`. Retried a little: another thread forking while the file was
/// open for writing keeps it busy ("text file busy") until that child execs.
fn spawn(path: &std::path::Path) -> io::Result<Child> {
    let mut tries = 0;
    loop {
        let got = Command::new(path).arg(path).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
        match got {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

impl Bench for Spawner {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let input = self.input.as_mut().ok_or_else(|| io::Error::other("the helper's input is closed"))?;
        writeln!(input, "{} {n}", self.how.word())?;
        input.flush()?;
        let mut line = String::new();
        self.output.read_line(&mut line)?;
        let ns = line.trim().parse().map_err(|_| io::Error::other(format!("the helper failed ({line:?})")))?;
        Ok(Timed { ns, units: n })
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_makes_each_kind_of_process_and_answers_per_request() {
        for how in [How::Exit, How::Exec, How::Shell] {
            let mut s = Spawner::make(how).unwrap();
            let t = s.iterate(3).unwrap();
            assert_eq!(t.units, 3, "{}", how.word());
            assert!(t.ns > 0, "{}: a real time came back", how.word());
        }
    }

    #[test]
    fn the_helper_forks_from_lmbench_s_process_image() {
        if IMAGE != "lmbench" {
            eprintln!("skipped: rtbench was built without libtirpc, so the helper is libc only");
            return;
        }
        let mut s = Spawner::start(How::Exit).unwrap();
        s.iterate(1).unwrap(); // its answer says the loader has mapped everything
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", s.child.id())).unwrap();
        for lib in ["libc.so", "libm.so", "libtirpc.so"] {
            assert!(maps.contains(lib), "the helper maps {lib}, as LMbench's lat_proc does");
        }
        assert!(maps.lines().count() >= 50, "LMbench's image has about 70 mappings, libc alone 25");
    }
}
