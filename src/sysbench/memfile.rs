//! Files, mappings and memory: creating and deleting small files, mapping and faulting in a
//! file, select on file descriptors, and the bandwidths of rereading a cached file, copying
//! and reading and writing memory.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Instant;

use super::{since, Bench, Group, Op, Timed};
use crate::sys;

/// The size of the buffers and of the file the bandwidths go through: well past the caches.
const SIZE: usize = 16 << 20;

pub fn ops() -> Vec<Op> {
    let fs = |name, help, make| Op { name, group: Group::FileVm, bandwidth: false, help, make };
    let bw = |name, help, make| Op { name, group: Group::Bandwidth, bandwidth: true, help, make };
    vec![
        fs("create-0k", "create an empty file", || Files::make(0, Phase::Create)),
        fs("delete-0k", "delete an empty file", || Files::make(0, Phase::Delete)),
        fs("create-10k", "create a file and write 10 KB into it", || Files::make(10 * 1024, Phase::Create)),
        fs("delete-10k", "delete a 10 KB file", || Files::make(10 * 1024, Phase::Delete)),
        fs("mmap", "map a 16 MB file and unmap it", || Ok(Box::new(Mapped::make(Touch::None)?))),
        fs("page-fault", "one page fault on a cached file's mapping (time per fault the kernel counts)", || {
            Ok(Box::new(Mapped::make(Touch::Pages)?))
        }),
        fs(
            "prot-fault",
            "write to a read-only page, a handler making it writable (less the two mprotect calls)",
            || Ok(Box::new(Prot(sys::ProtFault::new()?))),
        ),
        fs("select-file", "select on 100 file descriptors of a regular file", || {
            let (dir, path) = scratch(0)?;
            let files: Vec<File> = (0..100).map(|_| File::open(&path)).collect::<io::Result<_>>()?;
            let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
            Ok(Box::new(Repeat(move || {
                let _keep = (&dir, &files);
                sys::select_read(&fds).map(drop)
            })))
        }),
        bw("bw-file-reread", "read a cached 16 MB file again, 64 KB at a time", || {
            let (dir, path) = scratch(SIZE)?;
            let mut buf = vec![0u8; 64 * 1024];
            Ok(Box::new(Moves(move || {
                let _keep = &dir;
                let mut f = File::open(&path)?;
                while f.read(&mut buf)? > 0 {}
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-mmap-reread", "read every word of a cached 16 MB file through a mapping", || {
            Ok(Box::new(Mapped::make(Touch::Words)?))
        }),
        bw("bw-bcopy-libc", "copy 16 MB with the library's copy", || {
            let (src, mut dst) = (vec![1u8; SIZE], vec![0u8; SIZE]);
            Ok(Box::new(Moves(move || {
                dst.copy_from_slice(&src);
                std::hint::black_box(&dst);
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-bcopy-hand", "copy 16 MB a word at a time", || {
            let (src, mut dst) = (vec![1u64; SIZE / 8], vec![0u64; SIZE / 8]);
            Ok(Box::new(Moves(move || {
                for (d, s) in dst.iter_mut().zip(&src) {
                    *d = std::hint::black_box(*s);
                }
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-mem-read", "read 16 MB a word at a time", || {
            let src = vec![1u64; SIZE / 8];
            Ok(Box::new(Moves(move || {
                std::hint::black_box(src.iter().fold(0u64, |a, &w| a.wrapping_add(w)));
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-mem-write", "write 16 MB a word at a time", || {
            let mut dst = vec![0u64; SIZE / 8];
            Ok(Box::new(Moves(move || {
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = i as u64;
                }
                std::hint::black_box(&dst);
                Ok(SIZE as u64)
            })))
        }),
    ]
}

/// A temporary directory with one file of `len` bytes, in the page cache.
fn scratch(len: usize) -> io::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    let mut f = File::create(&path)?;
    f.write_all(&vec![0x33u8; len])?;
    f.sync_all()?;
    std::fs::read(&path)?;
    Ok((dir, path))
}

/// Protection faults: the time of faulting writes less that of the same mprotect calls.
struct Prot(sys::ProtFault);

impl Bench for Prot {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let faulting = self.0.round(n, true)?;
        let calls = self.0.round(n, false)?;
        Ok(Timed { ns: faulting.saturating_sub(calls), units: n })
    }
}

/// One operation per iteration.
struct Repeat<F: FnMut() -> io::Result<()>>(F);

impl<F: FnMut() -> io::Result<()>> Bench for Repeat<F> {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let t = Instant::now();
        for _ in 0..n {
            (self.0)()?;
        }
        Ok(Timed { ns: since(t), units: n })
    }
}

/// Bytes moved per iteration.
struct Moves<F: FnMut() -> io::Result<u64>>(F);

impl<F: FnMut() -> io::Result<u64>> Bench for Moves<F> {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let mut bytes = 0;
        let t = Instant::now();
        for _ in 0..n {
            bytes += (self.0)()?;
        }
        Ok(Timed { ns: since(t), units: bytes })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Create,
    Delete,
}

/// Creating or deleting `n` files of a size; the other half of the work is not timed.
struct Files {
    dir: tempfile::TempDir,
    size: usize,
    phase: Phase,
    data: Vec<u8>,
}

impl Files {
    fn make(size: usize, phase: Phase) -> io::Result<Box<dyn Bench>> {
        Ok(Box::new(Files { dir: tempfile::tempdir()?, size, phase, data: vec![0x44; size] }))
    }

    fn path(&self, i: u64) -> PathBuf {
        self.dir.path().join(format!("f{i}"))
    }

    fn create(&self, n: u64) -> io::Result<()> {
        for i in 0..n {
            let mut f = File::create(self.path(i))?;
            if self.size > 0 {
                f.write_all(&self.data)?;
            }
        }
        Ok(())
    }

    fn delete(&self, n: u64) -> io::Result<()> {
        for i in 0..n {
            std::fs::remove_file(self.path(i))?;
        }
        Ok(())
    }
}

impl Bench for Files {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let ns = match self.phase {
            Phase::Create => {
                let t = Instant::now();
                self.create(n)?;
                let ns = since(t);
                self.delete(n)?;
                ns
            }
            Phase::Delete => {
                self.create(n)?;
                let t = Instant::now();
                self.delete(n)?;
                since(t)
            }
        };
        Ok(Timed { ns, units: n })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Touch {
    /// Map and unmap only.
    None,
    /// One byte per page: the cost of a page fault.
    Pages,
    /// Every word: a bandwidth.
    Words,
}

/// A cached file mapped per iteration, and touched as asked.
struct Mapped {
    _dir: tempfile::TempDir,
    file: File,
    touch: Touch,
}

impl Mapped {
    fn make(touch: Touch) -> io::Result<Mapped> {
        let (dir, path) = scratch(SIZE)?;
        Ok(Mapped { _dir: dir, file: File::open(path)?, touch })
    }
}

impl Bench for Mapped {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let page = sys::page_size();
        let mut units = 0;
        let faults = sys::minor_faults();
        let t = Instant::now();
        for _ in 0..n {
            let m = sys::Mapping::file(self.file.as_raw_fd(), SIZE)?;
            if self.touch == Touch::Pages {
                // Else the kernel maps the neighbours of a faulting page too, and a "fault"
                // would cost a sixteenth of one.
                m.random_access()?;
            }
            let bytes = m.bytes();
            units += match self.touch {
                Touch::None => 1,
                Touch::Pages => {
                    let mut sum = 0u8;
                    for p in (0..SIZE).step_by(page) {
                        sum = sum.wrapping_add(bytes[p]);
                    }
                    std::hint::black_box(sum);
                    0
                }
                Touch::Words => {
                    let sum = bytes
                        .chunks_exact(8)
                        .fold(0u64, |a, w| a.wrapping_add(u64::from_ne_bytes(w.try_into().expect("8 bytes"))));
                    std::hint::black_box(sum);
                    SIZE as u64
                }
            };
        }
        let ns = since(t);
        if self.touch == Touch::Pages {
            // The faults the kernel counted: it maps a large folio's pages on one fault, so
            // pages touched would understate a fault's cost.
            units = sys::minor_faults().saturating_sub(faults).max(1);
        }
        Ok(Timed { ns, units })
    }
}
