//! Files, mappings and memory: creating and deleting small files, mapping and faulting in a
//! file, select on file descriptors, and the bandwidths of rereading a cached file, copying
//! and reading and writing memory.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
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
        fs(
            "mmap",
            "map a cached 16 MB file shared and writable, write a byte every 16 KB of its first tenth, unmap it (per mapping, as LMbench)",
            || Ok(Box::new(Mapped::make()?)),
        ),
        fs(
            "page-fault",
            "fault in one page of a cached file's fresh mapping, pages in random order, the file written 8 KB at a time (per page, as LMbench)",
            || Ok(Box::new(Faults::make()?)),
        ),
        fs(
            "prot-fault",
            "a write to a file's page mapped read-only faulting again and again, less catching a signal (as LMbench)",
            || Ok(Box::new(Prot::make()?)),
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
        bw("bw-file-reread", "read a cached 16 MB file again from its start, 64 KB at a time, summing each 64 KB a word at a time (as LMbench's io_only)", || {
            let (dir, path) = scratch(SIZE)?;
            let mut f = File::open(&path)?;
            let mut buf = vec![0u8; 64 * 1024];
            Ok(Box::new(Moves(move || {
                let _keep = &dir;
                f.seek(io::SeekFrom::Start(0))?;
                let mut got = 0;
                loop {
                    let k = f.read(&mut buf)?;
                    if k == 0 {
                        return Ok(got);
                    }
                    std::hint::black_box(sys::sum_u64_of(&buf[..k]));
                    got += k as u64;
                }
            })))
        }),
        bw("bw-mmap-reread", "read every 8-byte word of a cached 16 MB file mapped once (as LMbench's mmap_only)", || {
            let (dir, path) = scratch(SIZE)?;
            let file = File::open(path)?;
            let m = sys::Mapping::file(file.as_raw_fd(), SIZE)?;
            Ok(Box::new(Moves(move || {
                let _keep = (&dir, &file);
                std::hint::black_box(sys::sum_u64_of(m.bytes()));
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-bcopy-libc", "copy 16 MB with the library's copy", || {
            let (src, mut dst) = (vec![1u8; SIZE], vec![0u8; SIZE]);
            Ok(Box::new(Moves(move || {
                dst.copy_from_slice(&src);
                std::hint::black_box(&dst);
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-bcopy-hand", "copy 16 MB a 4-byte word at a time, one load and one store each (as LMbench)", || {
            let (src, mut dst) = (vec![1u32; SIZE / 4], vec![0u32; SIZE / 4]);
            Ok(Box::new(Moves(move || {
                sys::copy_u32(&mut dst, &src);
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-mem-read", "read 16 MB a 4-byte word at a time, one load each added to a sum (as LMbench)", || {
            let src = vec![1u32; SIZE / 4];
            Ok(Box::new(Moves(move || {
                std::hint::black_box(sys::sum(&src));
                Ok(SIZE as u64)
            })))
        }),
        bw("bw-mem-write", "write 16 MB a 4-byte word at a time, one store each (as LMbench)", || {
            let mut dst = vec![0u32; SIZE / 4];
            Ok(Box::new(Moves(move || {
                sys::fill_u32(&mut dst, 1);
                Ok(SIZE as u64)
            })))
        }),
    ]
}

/// The block LMbench's suite writes its test file in (lmdd's default block size).
const WRITE_BLOCK: usize = 8 * 1024;

/// A temporary directory with one file of `len` bytes, in the page cache, written as LMbench's
/// suite writes the file its page-fault and mmap benchmarks use: 8 KB at a time, then fsync.
/// The page cache keeps a file in folios as large as the writes allowed, and a read fault maps
/// a whole large folio at once (one 16 MB write here: 2 MB folios, 8 faults for 4096 pages)
/// where small ones get the kernel's fault-around window (64 KB: 256 faults): the way the
/// file was written decides what a page fault per page means.
fn scratch(len: usize) -> io::Result<(tempfile::TempDir, PathBuf)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("data");
    let mut f = File::create(&path)?;
    let block = [0x33u8; WRITE_BLOCK];
    for at in (0..len).step_by(WRITE_BLOCK) {
        f.write_all(&block[..WRITE_BLOCK.min(len - at)])?;
    }
    f.sync_all()?;
    std::fs::read(&path)?;
    Ok((dir, path))
}

/// Protection faults as LMbench counts them: `n` faults of one write to a file's page mapped
/// shared and read-only, less `n` signals caught (each fault is delivered as a signal whose
/// handler returns).
struct Prot {
    fault: sys::ProtFault,
    catch: super::procs::Catch,
    _file: (tempfile::TempDir, File),
}

impl Prot {
    fn make() -> io::Result<Prot> {
        let (dir, path) = scratch(sys::page_size())?;
        let file = File::open(path)?;
        let fault = sys::ProtFault::new(file.as_raw_fd())?;
        Ok(Prot { fault, catch: super::procs::Catch::install()?, _file: (dir, file) })
    }
}

impl Bench for Prot {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let faults = self.fault.round(n)?;
        Ok(Timed { ns: super::less(faults, self.catch.net(n)), units: n })
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

/// The stride of the mmap operation's writes: LMbench's lat_mmap writes one byte every 16 KB.
const TENTH_STRIDE: usize = 16 * 1024;

/// The offsets the mmap operation writes to in a mapping of `len` bytes: one every
/// `TENTH_STRIDE` from the start, up to a tenth of the mapping (103 writes for 16 MB).
fn tenth_offsets(len: usize) -> impl Iterator<Item = usize> {
    (0..len / 10).step_by(TENTH_STRIDE)
}

/// LMbench's lat_mmap per iteration: a cached file mapped shared and writable, a byte written
/// every `TENTH_STRIDE` of the mapping's first tenth, and unmapped. Its point is to price a
/// mapping that is used, not only made and broken.
struct Mapped {
    _dir: tempfile::TempDir,
    file: File,
}

impl Mapped {
    fn make() -> io::Result<Mapped> {
        let (dir, path) = scratch(SIZE)?;
        let file = File::options().read(true).write(true).open(path)?;
        Ok(Mapped { _dir: dir, file })
    }
}

impl Bench for Mapped {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let t = Instant::now();
        for _ in 0..n {
            let mut m = sys::Mapping::file_rw(self.file.as_raw_fd(), SIZE)?;
            for at in tenth_offsets(SIZE) {
                m.write(at, SIZE as u8)?;
            }
        }
        Ok(Timed { ns: since(t), units: n })
    }
}

/// Page faults as LMbench's lat_pagefault counts them: every page of a cached file's fresh
/// mapping read once, in a random order, and the mapping made anew; less the same unmapping and
/// mapping without the reads; per page. The kernel may map a faulting page's neighbours too
/// (fault-around): that is part of what a page costs, as in LMbench.
struct Faults {
    _dir: tempfile::TempDir,
    file: File,
    /// Byte offsets of one byte in each page, shuffled.
    order: Vec<usize>,
}

impl Faults {
    fn make() -> io::Result<Faults> {
        let (dir, path) = scratch(SIZE)?;
        let mut order: Vec<usize> = (0..SIZE).step_by(sys::page_size()).collect();
        let mut rng = crate::rng::SplitMix64(0x5eed);
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        Ok(Faults { _dir: dir, file: File::open(path)?, order })
    }

    /// `n` times: read a byte of every page of `m` (when `read`), then map the file anew.
    fn rounds(&self, n: u64, read: bool) -> io::Result<u64> {
        let mut m = sys::Mapping::file(self.file.as_raw_fd(), SIZE)?;
        let t = Instant::now();
        for _ in 0..n {
            if read {
                let bytes = m.bytes();
                std::hint::black_box(self.order.iter().fold(0u8, |a, &p| a.wrapping_add(bytes[p])));
            }
            drop(m);
            m = sys::Mapping::file(self.file.as_raw_fd(), SIZE)?;
        }
        Ok(since(t))
    }
}

impl Bench for Faults {
    fn iterate(&mut self, n: u64) -> io::Result<Timed> {
        let read = self.rounds(n, true)?;
        let remap = self.rounds(n, false)?;
        Ok(per_page(read, remap, n, self.order.len()))
    }
}

/// The time per page of `n` rounds over `pages` pages that took `read` ns with the reads and
/// `remap` ns without them.
fn per_page(read: u64, remap: u64, n: u64, pages: usize) -> Timed {
    Timed { ns: super::less(read, remap), units: n * pages as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mmap_writes_a_byte_every_16_kb_of_the_first_tenth_and_counts_once() {
        let at: Vec<usize> = tenth_offsets(16 << 20).collect();
        // A tenth of 16 MB is 1,677,721 bytes: offsets 0, 16 KB, … 102 × 16 KB.
        assert_eq!((at.len(), at[1], *at.last().unwrap()), (103, 16_384, 102 * 16_384));
        assert_eq!(tenth_offsets(160 * 1024).count(), 1, "a 160 KB mapping: its first 16 KB only");
        let mut m = Mapped::make().unwrap();
        assert_eq!(m.iterate(3).unwrap().units, 3, "per mapping, not per write");
        let mut back = vec![0u8; 16_384 + 1];
        m.file.read_exact(&mut back).unwrap();
        assert_eq!((back[0], back[1], back[16_384]), (SIZE as u8, 0x33, SIZE as u8), "the writes reached the file");
    }

    #[test]
    fn page_faults_are_per_page_with_the_mapping_taken_off() {
        // 3 rounds over 4096 pages: 9 ms with the reads, 1 ms of mapping: 8 ms / 12288 pages.
        let t = per_page(9_000_000, 1_000_000, 3, 4096);
        assert_eq!((t.ns, t.units), (8_000_000, 12_288));
        assert_eq!(per_page(5, 7, 1, 1).ns, 0, "noise never makes a negative time");
        let mut f = Faults::make().unwrap();
        assert_eq!(f.iterate(2).unwrap().units, 2 * (SIZE / sys::page_size()) as u64, "every page of the file");
    }

    #[rtbench_testkit::needs(native)]
    #[test]
    fn a_page_of_the_file_costs_the_faults_of_a_file_written_as_lmbench_writes_it() {
        let f = Faults::make().unwrap();
        f.rounds(1, true).unwrap(); // the file's pages are all in the page cache
        let before = sys::thread_minor_faults().unwrap();
        f.rounds(1, true).unwrap();
        let faults = sys::thread_minor_faults().unwrap() - before;
        // Small folios: each read fault maps the kernel's fault-around window (64 KB, the
        // default of fault_around_bytes), aligned in the address space. One 16 MB write made
        // 2 MB folios here instead: 8 faults.
        let per_fault = (64 * 1024 / sys::page_size()) as u64;
        let pages = f.order.len() as u64;
        assert!(
            (pages / per_fault..=pages / per_fault + 2).contains(&faults),
            "{faults} faults for {pages} pages, one per {per_fault}-page window"
        );
    }

    #[test]
    fn a_protection_fault_round_takes_as_many_faults_as_asked_and_the_write_lands() {
        let mut p = Prot::make().unwrap();
        // What LMbench writes to: a file's page mapped shared and read-only, not an anonymous one.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = maps.lines().find(|l| l.starts_with(&format!("{:x}-", p.fault.addr()))).unwrap();
        assert!(line.contains("r--s") && line.ends_with("/data"), "{line}");
        assert_eq!(p.iterate(50).unwrap().units, 50);
        assert_eq!(p.fault.written(), 50, "the write went through in the end");
        assert_eq!(p.iterate(1).unwrap().units, 1);
        assert_eq!(p.fault.written(), 1, "the file's read-only page was mapped back, and faulted");
    }
}
