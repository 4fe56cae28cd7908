//! Memory walked one word at a time, as LMbench's C loops compiled at its `-O` are: every
//! load and store its own scalar instruction, the sums one chain of adds. That is what its
//! memory bandwidths and context-switch working sets time. Volatile accesses keep the compiler
//! from widening the loops into vector loads and stores, which move this machine's cached
//! memory about twice as fast and so price something else under the same name.

/// Words per step: LMbench's loops take 128 words per pass, written out. Its sums add a
/// pass's words in a chain of their own and that to the total, so one pass's chain overlaps
/// the next's: one chain through every word ran at half LMbench's rate here.
const STEP: usize = 128;

/// A machine word LMbench's loops add: its ints and longs.
pub trait Word: Copy {
    const ZERO: Self;
    fn add(self, other: Self) -> Self;
}

impl Word for u32 {
    const ZERO: u32 = 0;
    fn add(self, other: u32) -> u32 {
        self.wrapping_add(other)
    }
}

impl Word for u64 {
    const ZERO: u64 = 0;
    fn add(self, other: u64) -> u64 {
        self.wrapping_add(other)
    }
}

/// The sum of `words`, each loaded by itself, wrapping as C's does (LMbench's memory read:
/// 4-byte ints; its bread: 8-byte longs).
pub fn sum<W: Word>(words: &[W]) -> W {
    let mut total = W::ZERO;
    let mut chunks = words.chunks_exact(STEP);
    for chunk in &mut chunks {
        let chunk: &[W; STEP] = chunk.try_into().expect("a whole step");
        let mut pass = W::ZERO;
        for w in chunk {
            // SAFETY: a reference is valid for reads.
            pass = pass.add(unsafe { std::ptr::read_volatile(w) });
        }
        total = total.add(pass);
    }
    for w in chunks.remainder() {
        // SAFETY: a reference is valid for reads.
        total = total.add(unsafe { std::ptr::read_volatile(w) });
    }
    total
}

/// The sum of the whole 8-byte words of `bytes` (a mapping, a read buffer), each loaded by
/// itself; a tail shorter than a word, or bytes before the first aligned word, are skipped.
pub fn sum_u64_of(bytes: &[u8]) -> u64 {
    // SAFETY: any bytes are valid u64s; align_to only reinterprets the aligned middle.
    let (_, words, _) = unsafe { bytes.align_to::<u64>() };
    sum(words)
}

/// Stores `v` in every word, one store each (LMbench's memory write).
pub fn fill_u32(words: &mut [u32], v: u32) {
    let mut chunks = words.chunks_exact_mut(STEP);
    for chunk in &mut chunks {
        let chunk: &mut [u32; STEP] = chunk.try_into().expect("a whole step");
        for w in chunk {
            // SAFETY: a mutable reference is valid for writes.
            unsafe { std::ptr::write_volatile(w, v) };
        }
    }
    for w in chunks.into_remainder() {
        // SAFETY: a mutable reference is valid for writes.
        unsafe { std::ptr::write_volatile(w, v) };
    }
}

/// Copies `src` into `dst` (as long as the shorter), a word loaded and stored at a time
/// (LMbench's hand-written copy).
pub fn copy_u32(dst: &mut [u32], src: &[u32]) {
    let len = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..len], &src[..len]);
    let mut pairs = dst.chunks_exact_mut(STEP).zip(src.chunks_exact(STEP));
    for (d, s) in &mut pairs {
        let (d, s): (&mut [u32; STEP], &[u32; STEP]) = (d.try_into().expect("a step"), s.try_into().expect("a step"));
        for (d, s) in d.iter_mut().zip(s) {
            // SAFETY: both references are valid, for writes and reads.
            unsafe { std::ptr::write_volatile(d, std::ptr::read_volatile(s)) };
        }
    }
    let done = len - len % STEP;
    for (d, s) in dst[done..].iter_mut().zip(&src[done..]) {
        // SAFETY: both references are valid, for writes and reads.
        unsafe { std::ptr::write_volatile(d, std::ptr::read_volatile(s)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_walks_compute_what_they_say() {
        let src: Vec<u32> = (1..=100).collect(); // less than a step: the remainder alone
        assert_eq!(sum(&src), 5050);
        assert_eq!(sum(&[u64::MAX, 2]), 1, "wrapping, as C's");
        assert_eq!(sum(&(1..=300).collect::<Vec<u64>>()), 45_150, "2 whole steps of 128 and 44 more");
        assert_eq!(sum(&vec![3u32; 1000]), 3000);
        let mut dst = vec![0u32; 100];
        copy_u32(&mut dst, &src);
        assert_eq!(dst, src);
        fill_u32(&mut dst, 7);
        assert!(dst.iter().all(|&w| w == 7));
        let bytes = vec![1u8; 64];
        let whole = (64 - bytes.as_ptr().align_offset(8)) / 8;
        assert_eq!(sum_u64_of(&bytes), whole as u64 * 0x0101_0101_0101_0101, "the whole aligned words");
    }
}
