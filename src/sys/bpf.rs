//! The bpf(2) calls `--split` needs: maps, a raw-tracepoint program loaded from bytecode built
//! in Rust, its attachment, and reading the maps. Every object is an fd: when rtbench ends, even
//! killed, the kernel detaches and frees them, so nothing is left behind to clean up.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const MAP_CREATE: libc::c_long = 0;
const MAP_LOOKUP_ELEM: libc::c_long = 1;
const MAP_UPDATE_ELEM: libc::c_long = 2;
const PROG_LOAD: libc::c_long = 5;
const PROG_TEST_RUN: libc::c_long = 10;
const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
const PROG_TYPE_RAW_TRACEPOINT: u32 = 17;

/// `union bpf_attr`, as many 64-bit words as the calls here use (the kernel wants the rest 0).
type Attr = [u64; 16];

fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a zeroed, valid bpf_attr of the size passed; the pointers the calls
    // put into it point to buffers that outlive the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of::<Attr>()) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn fd(rc: libc::c_long) -> OwnedFd {
    // SAFETY: a bpf call that returns a non-negative value of a creating command returns a new
    // fd this process owns.
    unsafe { OwnedFd::from_raw_fd(rc as i32) }
}

fn two(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// A one-entry array of a 64-bit count that BPF programs add to, read from memory shared with
/// the kernel (`BPF_F_MMAPABLE`, Linux 5.5) without a system call; on an older kernel, read
/// with one.
pub struct Counter {
    map: OwnedFd,
    shared: Option<super::ringbuf::Region>,
}

// SAFETY: the mapping belongs to this value alone, and the count is read through an atomic.
unsafe impl Send for Counter {}

const ARRAY: u32 = 2;
const MMAPABLE: u32 = 1 << 10;

impl Counter {
    pub fn new() -> io::Result<Counter> {
        let mut a: Attr = [0; 16];
        a[0] = two(ARRAY, 4);
        a[1] = two(8, 1);
        a[2] = u64::from(MMAPABLE);
        match bpf(MAP_CREATE, &mut a).map(fd) {
            // A page that cannot be mapped leaves the map read with the call.
            Ok(map) => {
                let shared = super::ringbuf::Region::map(&map, super::page_size(), 0, false).ok();
                Ok(Counter { map, shared })
            }
            // A kernel before 5.5 knows no such flag.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                Ok(Counter { map: bpf_map(ARRAY, 4, 8, 1)?, shared: None })
            }
            Err(e) => Err(e),
        }
    }

    /// The map, for the programs that add to it.
    pub fn map(&self) -> &OwnedFd {
        &self.map
    }

    /// Whether it is read without a system call.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The count now.
    pub fn value(&self) -> io::Result<u64> {
        match &self.shared {
            Some(region) => Ok(region.position().load(std::sync::atomic::Ordering::Relaxed)),
            None => {
                let mut v = [0u8; 8];
                bpf_lookup(&self.map, &0u32.to_ne_bytes(), &mut v)?;
                Ok(u64::from_ne_bytes(v))
            }
        }
    }
}

/// A map of `kind` (the kernel's BPF_MAP_TYPE_* number).
pub fn bpf_map(kind: u32, key_size: u32, value_size: u32, entries: u32) -> io::Result<OwnedFd> {
    let mut a: Attr = [0; 16];
    a[0] = two(kind, key_size);
    a[1] = two(value_size, entries);
    bpf(MAP_CREATE, &mut a).map(fd)
}

/// Loads a raw-tracepoint program (`insns`: 64-bit instructions) named `name` (at most 15
/// letters, digits or `_`: how `bpftool prog` lists it); the error carries the verifier's words.
pub fn bpf_raw_tp_program(name: &str, insns: &[u64]) -> io::Result<OwnedFd> {
    let mut log = vec![0u8; 1 << 16];
    let mut a: Attr = [0; 16];
    a[0] = two(PROG_TYPE_RAW_TRACEPOINT, insns.len() as u32);
    a[1] = insns.as_ptr() as u64;
    a[2] = c"GPL".as_ptr() as u64;
    a[3] = two(1, log.len() as u32);
    a[4] = log.as_mut_ptr() as u64;
    let mut prog_name = [0u8; 16];
    let kept = name.len().min(15);
    prog_name[..kept].copy_from_slice(&name.as_bytes()[..kept]);
    a[6] = u64::from_ne_bytes(prog_name[..8].try_into().expect("8 bytes"));
    a[7] = u64::from_ne_bytes(prog_name[8..].try_into().expect("8 bytes"));
    bpf(PROG_LOAD, &mut a).map(fd).map_err(|e| {
        let said = CStr::from_bytes_until_nul(&log).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        io::Error::new(e.kind(), if last.is_empty() { e.to_string() } else { format!("{e}: {last}") })
    })
}

/// Attaches `program` to the raw tracepoint `name`; detached when the returned fd closes.
pub fn bpf_attach_raw_tp(name: &CStr, program: &OwnedFd) -> io::Result<OwnedFd> {
    let mut a: Attr = [0; 16];
    a[0] = name.as_ptr() as u64;
    a[1] = program.as_raw_fd() as u64;
    bpf(RAW_TRACEPOINT_OPEN, &mut a).map(fd)
}

/// Reads the value of `key` into `value` (both of the map's sizes).
pub fn bpf_lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    let mut a: Attr = [0; 16];
    a[0] = map.as_raw_fd() as u64;
    a[1] = key.as_ptr() as u64;
    a[2] = value.as_mut_ptr() as u64;
    bpf(MAP_LOOKUP_ELEM, &mut a).map(drop)
}

/// Sets the value of `key` to `value` (both of the map's sizes).
pub fn bpf_update(map: &OwnedFd, key: &[u8], value: &[u8]) -> io::Result<()> {
    let mut a: Attr = [0; 16];
    a[0] = map.as_raw_fd() as u64;
    a[1] = key.as_ptr() as u64;
    a[2] = value.as_ptr() as u64;
    bpf(MAP_UPDATE_ELEM, &mut a).map(drop)
}

/// Takes the oldest value of a queue map into `value`; false when the queue is empty.
pub fn bpf_pop(map: &OwnedFd, value: &mut [u8]) -> io::Result<bool> {
    let mut a: Attr = [0; 16];
    a[0] = map.as_raw_fd() as u64;
    a[2] = value.as_mut_ptr() as u64;
    match bpf(MAP_LOOKUP_AND_DELETE_ELEM, &mut a) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs a raw-tracepoint `program` once, now, on this CPU, with `args` as the tracepoint's
/// arguments (at most 12); its return value. How tests make a program write records on demand.
pub fn bpf_run_raw_tp(program: &OwnedFd, args: &[u64]) -> io::Result<u32> {
    let mut a: Attr = [0; 16];
    a[0] = program.as_raw_fd() as u64;
    a[5] = std::mem::size_of_val(args) as u64;
    a[6] = args.as_ptr() as u64;
    bpf(PROG_TEST_RUN, &mut a)?;
    Ok((a[0] >> 32) as u32)
}

/// `struct bpf_prog_info` up to `recursion_misses` (Linux 5.12), the last field read here.
const PROG_INFO: usize = 216;
pub const RECURSION_MISSES: usize = 208;

/// How many times the kernel did not run `program` because it was already running on that CPU
/// (a tracepoint hit again inside the program's own run, from an interrupt); None from a
/// kernel before 5.12, which does not count them.
pub fn bpf_prog_misses(program: &OwnedFd) -> io::Result<Option<u64>> {
    let mut info = [0u8; PROG_INFO];
    let mut a: Attr = [0; 16];
    a[0] = two(program.as_raw_fd() as u32, PROG_INFO as u32);
    a[1] = info.as_mut_ptr() as u64;
    bpf(OBJ_GET_INFO_BY_FD, &mut a)?;
    // The kernel writes back how much of the structure it has.
    if ((a[0] >> 32) as usize) < PROG_INFO {
        return Ok(None);
    }
    let field = info[RECURSION_MISSES..RECURSION_MISSES + 8].try_into().expect("8 bytes");
    Ok(Some(u64::from_ne_bytes(field)))
}

/// For tests that need root and BTF (`#[needs(root, btf)]`): the programs `attach` loads and
/// attaches; any refusal fails the test.
#[cfg(test)]
pub fn attached<T>(attach: impl FnOnce() -> Result<T, String>) -> T {
    attach().unwrap_or_else(|why| panic!("the programs load and attach: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is written into the map is what the shared page reads (Linux 5.5 and later; an
    /// older kernel reads it with a system call, the same value).
    #[rtbench_testkit::needs(root, linux_5_5, native)]
    #[test]
    fn a_counter_reads_its_map_s_value() {
        let counter = Counter::new().expect("a counter");
        assert_eq!(counter.value().unwrap(), 0);
        bpf_update(counter.map(), &0u32.to_ne_bytes(), &42u64.to_ne_bytes()).unwrap();
        assert_eq!(counter.value().unwrap(), 42);
        assert!(counter.is_shared(), "read through the shared page (Linux 5.5 and later)");
    }
}
