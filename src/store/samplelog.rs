//! The raw sample log (`--samples FILE`): every sample with its time offset, append-only, in
//! checksummed blocks, so a crash leaves a readable prefix.
//!
//! Layout (little endian):
//! - file header: `RTBSMP01`, nominal step between samples in ns (u64), CRC-32 of those 16 bytes.
//! - blocks: `RTBK`, thread (u32), sample count (u32), time offset of the first sample (u64),
//!   payload length (u32), payload, CRC-32 of everything in the block before it.
//! - payload, per sample: LEB128 of zigzag(Δt − step) then LEB128 of zigzag(latency − previous
//!   latency). For a periodic probe Δt − step is 0, so a typical sample takes 3–4 bytes.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

const FILE_MAGIC: &[u8; 8] = b"RTBSMP01";
const BLOCK_MAGIC: &[u8; 4] = b"RTBK";
pub const FILE_HEADER_LEN: u64 = 20;
const BLOCK_HEADER_LEN: usize = 24;
/// Samples per block at most: bounds the reader's memory and the loss on a torn write.
pub const BLOCK_SAMPLES: usize = 1 << 16;

pub struct SampleLogWriter {
    out: BufWriter<File>,
    step_ns: u64,
    /// Added to every time offset written (a resumed run's new part comes after its gap).
    offset_ns: u64,
    payload: Vec<u8>,
    pub bytes: u64,
}

impl SampleLogWriter {
    /// Creates (truncates) `path` and writes the file header.
    pub fn create(path: &Path, step_ns: u64) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let mut head = Vec::with_capacity(FILE_HEADER_LEN as usize);
        head.extend_from_slice(FILE_MAGIC);
        head.extend_from_slice(&step_ns.to_le_bytes());
        let crc = crc32fast::hash(&head);
        head.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&head)?;
        out.flush()?;
        Ok(SampleLogWriter { out, step_ns, offset_ns: 0, payload: Vec::new(), bytes: FILE_HEADER_LEN })
    }

    /// Opens `path`, a sample log of the same step, to add blocks after its complete ones: the
    /// format has no trailer, so a log goes on where it stopped. A block torn at its end (a
    /// run killed mid-write) is cut off first.
    pub fn reopen(path: &Path, step_ns: u64) -> Result<Self, LogError> {
        let index = scan(path)?;
        if index.step_ns != step_ns {
            return Err(LogError::Step { logged: index.step_ns, now: step_ns });
        }
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        let bytes = match index.truncated_at {
            Some(at) => {
                file.set_len(at)?;
                at
            }
            None => file.metadata()?.len(),
        };
        let out = BufWriter::with_capacity(1 << 20, file);
        Ok(SampleLogWriter { out, step_ns, offset_ns: 0, payload: Vec::new(), bytes })
    }

    /// The samples to come are logged `ns` later than their time offsets say.
    pub fn offset(&mut self, ns: u64) {
        self.offset_ns = ns;
    }

    /// Appends one thread's samples as one or more blocks.
    pub fn append(&mut self, thread: u32, samples: &[(u64, u64)]) -> io::Result<()> {
        for chunk in samples.chunks(BLOCK_SAMPLES) {
            self.payload.clear();
            let (mut prev_t, mut prev_lat) = (chunk[0].0, 0u64);
            for &(t, lat) in chunk {
                let dt = t.wrapping_sub(prev_t) as i64;
                put_varint(&mut self.payload, zigzag(dt.wrapping_sub(self.step_ns as i64)));
                put_varint(&mut self.payload, zigzag(lat.wrapping_sub(prev_lat) as i64));
                prev_t = t;
                prev_lat = lat;
            }
            let mut head = [0u8; BLOCK_HEADER_LEN];
            head[0..4].copy_from_slice(BLOCK_MAGIC);
            head[4..8].copy_from_slice(&thread.to_le_bytes());
            head[8..12].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            head[12..20].copy_from_slice(&(chunk[0].0 + self.offset_ns).to_le_bytes());
            head[20..24].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
            let mut crc = crc32fast::Hasher::new();
            crc.update(&head);
            crc.update(&self.payload);
            self.out.write_all(&head)?;
            self.out.write_all(&self.payload)?;
            self.out.write_all(&crc.finalize().to_le_bytes())?;
            self.bytes += (BLOCK_HEADER_LEN + self.payload.len() + 4) as u64;
        }
        Ok(())
    }

    /// Pushes everything written so far to the file (called at each checkpoint).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Where a block sits in the file, as found by [`scan`].
#[derive(Clone, Copy, Debug)]
pub struct BlockRef {
    pub offset: u64,
    pub payload_len: u32,
}

/// What [`scan`] found: the file's step, its complete blocks, and whether the tail was torn.
#[derive(Debug)]
pub struct Index {
    pub step_ns: u64,
    pub blocks: Vec<BlockRef>,
    /// Byte offset of an incomplete final block, if the file ends inside one.
    pub truncated_at: Option<u64>,
}

/// Why a file cannot be read as a sample log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("is not an rtbench sample log (bad file header)")]
    NotALog,
    #[error("is corrupt: bad block at byte {0}")]
    Corrupt(u64),
    #[error("was logged with a step of {logged} ns between samples, not {now} ns")]
    Step { logged: u64, now: u64 },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Walks the block headers (seeking over payloads) to find every complete block.
pub fn scan(path: &Path) -> Result<Index, LogError> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = [0u8; FILE_HEADER_LEN as usize];
    if f.read_exact(&mut head).is_err() || &head[0..8] != FILE_MAGIC {
        return Err(LogError::NotALog);
    }
    if crc32fast::hash(&head[0..16]).to_le_bytes() != head[16..20] {
        return Err(LogError::NotALog);
    }
    let step_ns = u64::from_le_bytes(head[8..16].try_into().unwrap());
    let mut blocks = Vec::new();
    let mut pos = FILE_HEADER_LEN;
    let mut bh = [0u8; BLOCK_HEADER_LEN];
    while pos < len {
        if len - pos < BLOCK_HEADER_LEN as u64 {
            return Ok(Index { step_ns, blocks, truncated_at: Some(pos) });
        }
        f.seek(SeekFrom::Start(pos))?;
        f.read_exact(&mut bh)?;
        if &bh[0..4] != BLOCK_MAGIC {
            return Err(LogError::Corrupt(pos));
        }
        let payload_len = u32::from_le_bytes(bh[20..24].try_into().unwrap());
        let end = pos + BLOCK_HEADER_LEN as u64 + payload_len as u64 + 4;
        if end > len {
            return Ok(Index { step_ns, blocks, truncated_at: Some(pos) });
        }
        blocks.push(BlockRef { offset: pos, payload_len });
        pos = end;
    }
    Ok(Index { step_ns, blocks, truncated_at: None })
}

/// Reads the blocks in `blocks` in order, verifying each checksum, and calls `visit(thread,
/// t_ns, latency_ns)` for every sample. `buf` is reused between blocks.
pub fn read_blocks(
    path: &Path,
    step_ns: u64,
    blocks: &[BlockRef],
    mut visit: impl FnMut(u32, u64, u64),
) -> Result<u64, LogError> {
    let mut f = File::open(path)?;
    let mut buf = Vec::new();
    let mut samples = 0u64;
    for b in blocks {
        let total = BLOCK_HEADER_LEN + b.payload_len as usize + 4;
        buf.resize(total, 0);
        f.seek(SeekFrom::Start(b.offset))?;
        f.read_exact(&mut buf)?;
        let (body, crc) = buf.split_at(total - 4);
        if crc32fast::hash(body).to_le_bytes() != crc {
            return Err(LogError::Corrupt(b.offset));
        }
        let thread = u32::from_le_bytes(body[4..8].try_into().unwrap());
        let count = u32::from_le_bytes(body[8..12].try_into().unwrap());
        let mut t = u64::from_le_bytes(body[12..20].try_into().unwrap());
        let payload = &body[BLOCK_HEADER_LEN..];
        let (mut pos, mut lat, mut first) = (0usize, 0u64, true);
        for _ in 0..count {
            let dt = unzigzag(get_varint(payload, &mut pos).ok_or(LogError::Corrupt(b.offset))?);
            let dl = unzigzag(get_varint(payload, &mut pos).ok_or(LogError::Corrupt(b.offset))?);
            if !first {
                t = t.wrapping_add(dt.wrapping_add(step_ns as i64) as u64);
            }
            first = false;
            lat = lat.wrapping_add(dl as u64);
            visit(thread, t, lat);
        }
        if pos != payload.len() {
            return Err(LogError::Corrupt(b.offset));
        }
        samples += count as u64;
    }
    Ok(samples)
}

#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline(always)]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline(always)]
fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample of a log, in file order: (thread, time offset, latency).
    fn read_all(path: &Path) -> (Index, Vec<(u32, u64, u64)>) {
        let index = scan(path).unwrap();
        let mut all = Vec::new();
        read_blocks(path, index.step_ns, &index.blocks, |th, t, lat| all.push((th, t, lat))).unwrap();
        (index, all)
    }

    /// A log killed mid-block goes on after its last complete block: the torn one is cut off,
    /// the new samples are read back after the old ones, later by the offset given.
    #[test]
    fn a_log_is_appended_to_after_its_complete_blocks_and_a_torn_one_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rtb");
        let mut w = SampleLogWriter::create(&path, 1_000).unwrap();
        w.append(0, &[(1_000, 7), (2_000, 9)]).unwrap();
        w.flush().unwrap();
        let whole = std::fs::metadata(&path).unwrap().len();
        w.append(1, &[(3_000, 5)]).unwrap();
        w.flush().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 3).unwrap();
        assert_eq!(scan(&path).unwrap().truncated_at, Some(whole));

        assert!(matches!(SampleLogWriter::reopen(&path, 2_000), Err(LogError::Step { logged: 1_000, now: 2_000 })));
        let mut w = SampleLogWriter::reopen(&path, 1_000).unwrap();
        assert_eq!(w.bytes, whole);
        w.offset(1_000_000);
        w.append(0, &[(1_000, 11), (2_000, 13)]).unwrap();
        w.flush().unwrap();
        let (index, all) = read_all(&path);
        assert_eq!(index.truncated_at, None);
        assert_eq!(all, [(0, 1_000, 7), (0, 2_000, 9), (0, 1_001_000, 11), (0, 1_002_000, 13)]);
        std::fs::write(&path, b"not a log").unwrap();
        assert!(matches!(SampleLogWriter::reopen(&path, 1_000), Err(LogError::NotALog)));
    }

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn varint_round_trips() {
        let mut buf = Vec::new();
        let vals = [0u64, 127, 128, 16_383, 16_384, u64::MAX];
        for v in vals {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in vals {
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(get_varint(&buf, &mut pos), None);
    }
}
