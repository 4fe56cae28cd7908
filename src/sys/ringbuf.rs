//! BPF ring buffers (`BPF_MAP_TYPE_RINGBUF`, Linux 5.8): the records a BPF program outputs,
//! read from memory shared with the kernel, with no system call per record (a queue map costs
//! one `bpf()` call per record popped: at 128 CPUs × 10 kHz, 1.28 M calls a second).
//!
//! The protocol, as the kernel's Documentation/bpf/ringbuf.rst and kernel/bpf/ringbuf.c give
//! it: the map's first page holds the consumer position (user space writes it, so it is mapped
//! read-write), the second the producer position, then the data area, which the kernel maps
//! twice in a row so that a record wrapping past the end reads as one piece (both mapped
//! read-only). The positions count bytes from the start, never wrapping; a position's place in
//! the data is `pos & (size - 1)`. Each record starts with an 8-byte header: its length in the
//! low 30 bits of the first word, bit 31 set while the program still writes it (BUSY), bit 30
//! when it was discarded (DISCARD); records are 8-byte aligned. The reader reads the producer
//! position (acquire), each header (acquire) up to a BUSY one, and releases what it read by
//! storing the consumer position (release): the kernel reuses that space only then.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const RINGBUF: u32 = 27;
const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;
const HEADER: u64 = 8;

/// A shared mapping of part of a map; unmapped on drop.
pub(super) struct Region {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Region {
    pub(super) fn map(fd: &OwnedFd, len: usize, offset: usize, writable: bool) -> io::Result<Region> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh mapping chosen by the kernel, of a map fd that outlives the call;
        // checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), offset as libc::off_t)
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region { ptr, len })
    }

    /// The 8-byte word at the region's start, shared with the kernel.
    pub(super) fn position(&self) -> &AtomicU64 {
        // SAFETY: the region is page-aligned, at least 8 bytes long and lives as long as the
        // reference; the kernel reads and writes it only atomically.
        unsafe { AtomicU64::from_ptr(self.ptr.cast()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned; no reference into it outlives self.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A ring buffer map and its mappings; the map goes when the fd closes (the programs that
/// write into it hold it too).
pub struct RingBuf {
    map: OwnedFd,
    consumer: Region,
    /// The producer's page, then the data area twice.
    producer: Region,
    page: usize,
    size: usize,
}

// SAFETY: the mappings belong to this value alone (moved, not shared, between threads), and
// every access to what the kernel shares goes through atomics.
unsafe impl Send for RingBuf {}

impl RingBuf {
    /// A ring of at least `bytes` of data (rounded up to a power of two of pages, as the kernel
    /// wants); `Err` on a kernel without ring buffers (before 5.8: EINVAL) or out of memory.
    pub fn new(bytes: usize) -> io::Result<RingBuf> {
        let page = super::page_size();
        let size = bytes.max(page).next_power_of_two();
        let entries =
            u32::try_from(size).map_err(|_| io::Error::other(format!("a ring of {size} bytes is too big")))?;
        let map = super::bpf_map(RINGBUF, 0, 0, entries)?;
        let consumer = Region::map(&map, page, 0, true)?;
        let producer = Region::map(&map, page + 2 * size, page, false)?;
        Ok(RingBuf { map, consumer, producer, page, size })
    }

    /// The map, for the programs that output into it.
    pub fn map(&self) -> &OwnedFd {
        &self.map
    }

    /// The data area's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Hands each record written since the last read to `each`, oldest first, and gives their
    /// space back to the kernel; stops at a record still being written. Returns how many.
    pub fn read(&mut self, mut each: impl FnMut(&[u8])) -> usize {
        let (consumer, producer) = (self.consumer.position(), self.producer.position());
        let mask = self.size as u64 - 1;
        let mut at = consumer.load(Ordering::Acquire);
        let mut read = 0;
        loop {
            let end = producer.load(Ordering::Acquire);
            if at >= end {
                return read;
            }
            let mut busy = false;
            while at < end {
                let offset = (at & mask) as usize;
                let len = self.header(offset).load(Ordering::Acquire);
                if len & BUSY != 0 {
                    busy = true;
                    break;
                }
                let body = len & !(BUSY | DISCARD);
                if len & DISCARD == 0 {
                    each(self.body(offset, body as usize));
                    read += 1;
                }
                at += (u64::from(body) + HEADER + 7) & !7;
            }
            // Once a pass, not once a record: the producers on the measured CPUs read this
            // position at every reserve, and each store here takes its cache line from them.
            consumer.store(at, Ordering::Release);
            if busy {
                return read;
            }
        }
    }

    /// The header at `offset` into the data area.
    fn header(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset < self.size && offset.is_multiple_of(8));
        // SAFETY: `offset` is inside the first copy of the data area (masked by the caller) and
        // 8-byte aligned (records are); the kernel writes headers only atomically.
        unsafe { AtomicU32::from_ptr(self.producer.ptr.cast::<u8>().add(self.page + offset).cast()) }
    }

    /// The `len` bytes of the record whose header is at `offset`.
    fn body(&self, offset: usize, len: usize) -> &[u8] {
        let len = len.min(self.size - HEADER as usize);
        // SAFETY: the data area is mapped twice in a row, so `offset + 8 + len` < 2 × size stays
        // inside the mapping; the kernel does not write a committed record until the consumer
        // position passes it, which happens after the borrow ends.
        unsafe { std::slice::from_raw_parts(self.producer.ptr.cast::<u8>().add(self.page + offset + 8), len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel takes the map and both mappings; an empty ring reads nothing. (The records
    /// themselves are tested with real programs writing them, in `trace::bpf::records`.)
    #[rtbench_testkit::needs(root, linux_5_8, native)]
    #[test]
    fn an_empty_ring_maps_and_reads_nothing() {
        let mut ring = RingBuf::new(1).unwrap_or_else(|e| panic!("a ring buffer: {e}"));
        assert_eq!(ring.size(), crate::sys::page_size(), "rounded up to a page");
        assert_eq!(ring.read(|_| panic!("no record")), 0);
        assert!(RingBuf::new(3 * crate::sys::page_size()).unwrap().size() == 4 * crate::sys::page_size());
    }
}
