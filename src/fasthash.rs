//! A hash map for the collector's per-event tables, whose keys are small and made by rtbench
//! itself (CPU numbers, a task's name, pid and priority): SipHash's defence against keys an
//! attacker picks costs more than the table work there (issue 38: a third of the main
//! thread's time per gap). The mixing is the multiply-and-rotate of Firefox's hash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with [`Fast`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fast>>;

/// A word at a time: rotate, mix in, multiply by an odd constant with well spread bits.
#[derive(Clone, Copy, Default)]
pub struct Fast(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Fast {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for Fast {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<Fast>::default().hash_one(t)
    }

    #[test]
    fn keys_that_differ_in_any_byte_hash_apart_and_equal_keys_alike() {
        assert_eq!(hash(&("kworker/1:1", 88, Some(120))), hash(&("kworker/1:1", 88, Some(120))));
        // Every one-character change of a name longer than a word, every neighbouring pid.
        let base = "ksoftirqd/17-x";
        let mut seen = std::collections::HashSet::new();
        for i in 0..base.len() {
            let mut b = base.as_bytes().to_vec();
            b[i] ^= 1;
            assert!(seen.insert(hash(&(String::from_utf8(b).unwrap(), 7))), "byte {i}");
        }
        for pid in 0..10_000 {
            assert!(seen.insert(hash(&(base, pid))), "pid {pid}");
        }
    }

    #[test]
    fn a_map_finds_what_it_holds() {
        let mut m: FastMap<(u32, &str), u64> = FastMap::default();
        for cpu in 0..300 {
            *m.entry((cpu, "local timer")).or_default() += u64::from(cpu);
        }
        assert_eq!(m.len(), 300);
        assert_eq!(m[&(257, "local timer")], 257);
    }
}
