//! Making processes, as LMbench's lat_proc does: from a small helper process (helper/spawn.c,
//! compiled with rtbench) that rtbench starts once per operation, so fork copies a small
//! address space, not rtbench's, and exec runs a tiny program. The helper is linked with
//! LMbench's link line for lat_proc and the toolchain's defaults (build.rs), so it maps what
//! lat_proc built on the same machine maps; each fork row stores what it did map. It times its
//! own loop and answers with nanoseconds.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::{Bench, Timed};
use crate::model::ForkImage;

/// The helper's executable, built by build.rs (empty when no C compiler was found).
const HELPER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rtbench-spawn"));

/// "linked" when build.rs linked the helper with LMbench's whole link line, "missing" when
/// libtirpc could not be linked and it left `-ltirpc` out.
const TIRPC: &str = env!("RTBENCH_SPAWN_TIRPC");

/// The mark of a fork row whose helper lacks LMbench's `-ltirpc` (`tirpc` as build.rs said),
/// or None. Whether that changes what the helper maps is the toolchain's doing (one that links
/// --as-needed drops libtirpc from LMbench's lat_proc as well): the row's libraries say.
fn mark(tirpc: &str) -> Option<String> {
    (tirpc != "linked")
        .then(|| "linked without LMbench's -ltirpc: libtirpc-dev was missing when rtbench was built".to_string())
}

/// The image a /proc/PID/maps text describes: its mappings, and the shared objects among them
/// by file name, each once, in address order.
fn image_of(maps: &str, mark: Option<String>) -> ForkImage {
    let mut libraries: Vec<String> = Vec::new();
    for line in maps.lines() {
        let name = line.split_whitespace().nth(5).and_then(|path| path.rsplit('/').next());
        if let Some(name) = name.filter(|n| n.contains(".so")) {
            if !libraries.iter().any(|l| l == name) {
                libraries.push(name.to_string());
            }
        }
    }
    ForkImage { mappings: maps.lines().count() as u32, libraries, mark }
}

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

    /// The helper's own mappings: a fork's child is their copy, and an exec of the helper maps
    /// them again. None when they cannot be read (the helper gone).
    fn image(&self) -> Option<ForkImage> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.child.id())).ok()?;
        Some(image_of(&maps, mark(TIRPC)))
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
    fn the_embedded_helper_is_a_program_for_the_machine_rtbench_was_built_for() {
        // A cross build once compiled the helper with the host's cc (build.rs read CC only).
        // ELF's e_machine: EM_X86_64 62, EM_AARCH64 183, EM_ARM 40.
        let machine = match std::env::consts::ARCH {
            "x86_64" => 62,
            "aarch64" => 183,
            "arm" => 40,
            other => return eprintln!("no ELF machine number known here for {other}"),
        };
        assert!(HELPER.starts_with(b"\x7fELF"), "build.rs compiled no helper ({} bytes)", HELPER.len());
        assert_eq!(u16::from_le_bytes([HELPER[18], HELPER[19]]), machine);
    }

    #[rtbench_testkit::needs(native)]
    #[test]
    fn the_helper_makes_each_kind_of_process_and_answers_per_request() {
        for how in [How::Exit, How::Exec, How::Shell] {
            let mut s = Spawner::make(how).unwrap();
            let t = s.iterate(3).unwrap();
            assert_eq!(t.units, 3, "{}", how.word());
            assert!(t.ns > 0, "{}: a real time came back", how.word());
        }
    }

    #[rtbench_testkit::needs(native)]
    #[test]
    fn the_helper_s_image_is_read_from_its_maps_while_it_runs() {
        let mut s = Spawner::start(How::Exit).unwrap();
        assert!(s.image().is_some_and(|i| i.mappings > 0), "readable from the start");
        s.iterate(1).unwrap(); // its answer says the loader has mapped everything
        let image = s.image().unwrap();
        assert!(image.mappings as usize > image.libraries.len(), "{image:?}");
        assert!(image.libraries.iter().any(|l| l.starts_with("libc.so")), "libc among {:?}", image.libraries);
        assert_eq!(image.mark, mark(TIRPC), "marked as this build was linked");
    }

    #[test]
    fn maps_give_their_count_and_each_library_once() {
        let maps = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 131 /tmp/x/rtbench-spawn
7f1e2a400000-7f1e2a428000 r--p 00000000 fe:01 771 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e2a428000-7f1e2a5bd000 r-xp 00028000 fe:01 771 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e2a615000-7f1e2a622000 rw-p 00000000 00:00 0
7f1e2a630000-7f1e2a631000 r--p 00000000 fe:01 768 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7ffc5e5f1000-7ffc5e612000 rw-p 00000000 00:00 0                          [stack]
";
        let image = image_of(maps, None);
        assert_eq!(image.mappings, 6);
        assert_eq!(image.libraries, ["libc.so.6", "ld-linux-x86-64.so.2"]);
    }

    #[test]
    fn only_a_helper_built_without_libtirpc_is_marked() {
        assert_eq!(mark("linked"), None);
        let said = mark("missing").expect("marked");
        assert!(said.contains("-ltirpc") && said.contains("libtirpc-dev"), "{said}");
        assert_eq!(image_of("", mark("missing")).mark, Some(said), "the mark goes with the image");
    }
}
