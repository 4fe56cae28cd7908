//! Where the split's BPF program finds what it reads in the kernel's structures, from the
//! kernel's own type information (BTF): the offsets of `struct hrtimer`, `struct
//! hrtimer_sleeper` and `struct task_struct` change with the kernel's version and configuration
//! (`task_struct` above all), so none of them is written down here.

use std::ops::Range;

/// The kernel's BTF, as `/sys/kernel/btf/vmlinux` gives it.
const VMLINUX: &str = "/sys/kernel/btf/vmlinux";
const MAGIC: u16 = 0xeb9f;

const STRUCT: u32 = 4;

/// What the program reads, in bytes from the start of its structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `hrtimer._softexpires`: the time the sleeper asked for.
    pub softexpires: i32,
    /// `hrtimer.function`: `hrtimer_wakeup` for a sleep.
    pub function: i32,
    /// `hrtimer_sleeper.task`: the sleeping thread.
    pub task: i32,
    /// `task_struct.pid` and `.tgid`: the thread and its process.
    pub pid: i32,
    pub tgid: i32,
}

impl Layout {
    /// This kernel's layout; Err says what is missing.
    pub fn of_this_kernel() -> Result<Layout, String> {
        let data = std::fs::read(VMLINUX).map_err(|e| format!("no kernel type information (BTF): {e}"))?;
        Layout::from(&Btf::parse(data)?)
    }

    fn from(btf: &Btf) -> Result<Layout, String> {
        let at = |s: &str, m: &str| {
            btf.member(s, m)
                .and_then(|o| i32::try_from(o).ok())
                .ok_or_else(|| format!("the kernel's BTF has no struct {s}.{m}"))
        };
        Ok(Layout {
            softexpires: at("hrtimer", "_softexpires")?,
            function: at("hrtimer", "function")?,
            task: at("hrtimer_sleeper", "task")?,
            pid: at("task_struct", "pid")?,
            tgid: at("task_struct", "tgid")?,
        })
    }
}

/// A BTF blob: its type and string sections.
pub struct Btf {
    data: Vec<u8>,
    types: Range<usize>,
    strings: Range<usize>,
}

impl Btf {
    pub fn parse(data: Vec<u8>) -> Result<Btf, String> {
        let bad = || "the kernel's BTF is not in a format rtbench reads".to_string();
        let u32_at = |at: usize| data.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        if data.get(0..2) != Some(&MAGIC.to_le_bytes()[..]) {
            return Err(bad());
        }
        let (hdr, toff, tlen, soff, slen) = (u32_at(4), u32_at(8), u32_at(12), u32_at(16), u32_at(20));
        let (Some(hdr), Some(toff), Some(tlen), Some(soff), Some(slen)) = (hdr, toff, tlen, soff, slen) else {
            return Err(bad());
        };
        let section = |off: u32, len: u32| (hdr + off) as usize..(hdr + off + len) as usize;
        let (types, strings) = (section(toff, tlen), section(soff, slen));
        if types.end > data.len() || strings.end > data.len() {
            return Err(bad());
        }
        Ok(Btf { data, types, strings })
    }

    fn word(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.data[at..at + 4].try_into().expect("4 bytes"))
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = &self.data[self.strings.start + off as usize..self.strings.end];
        &s[..s.iter().position(|b| *b == 0).unwrap_or(s.len())]
    }

    /// Byte offset of `member` in the first `struct name`; None when either is not there (or
    /// the member is a bit field).
    pub fn member(&self, name: &str, member: &str) -> Option<u32> {
        let mut at = self.types.start;
        while at + 12 <= self.types.end {
            let (name_off, info) = (self.word(at), self.word(at + 4));
            let (kind, vlen, bits) = ((info >> 24) & 0x1f, (info & 0xffff) as usize, info >> 31 == 1);
            let body = at + 12;
            if kind == STRUCT && self.name(name_off) == name.as_bytes() {
                return (0..vlen)
                    .map(|i| body + 12 * i)
                    .find(|m| self.name(self.word(*m)) == member.as_bytes())
                    .and_then(|m| {
                        let off = if bits { self.word(m + 8) & 0xff_ffff } else { self.word(m + 8) };
                        (off % 8 == 0).then_some(off / 8)
                    });
            }
            at = body + extra(kind, vlen)?;
        }
        None
    }
}

/// Bytes that follow a type's common part, by its kind.
fn extra(kind: u32, vlen: usize) -> Option<usize> {
    Some(match kind {
        1 | 14 | 17 => 4,             // int, var, decl tag
        2 | 7..=12 | 16 | 18 => 0,    // ptr, fwd, typedef, modifiers, func, float, type tag
        3 => 12,                      // array
        4 | 5 | 15 | 19 => 12 * vlen, // struct, union, datasec, enum64
        6 | 13 => 8 * vlen,           // enum, func proto
        _ => return None,
    })
}

/// Where `symbol` is in the kernel, from /proc/kallsyms; None when hidden (kptr_restrict) or
/// not there.
pub fn kernel_symbol(symbol: &str) -> Option<u64> {
    let all = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let addr = all.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (addr, _, name) = (f.next()?, f.next()?, f.next()?);
        (name == symbol).then(|| u64::from_str_radix(addr, 16).ok())?
    })?;
    (addr != 0).then_some(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob of an int and `struct s { int a; int b; }`, with bit-field offsets (kind_flag)
    /// on a second `struct t { int c : 3; int d; }`.
    fn blob() -> Vec<u8> {
        let strings = b"\0int\0s\0a\0b\0t\0c\0d\0";
        let pos =
            |n: &[u8]| strings.windows(n.len() + 2).position(|w| w[0] == 0 && &w[1..=n.len()] == n).unwrap() as u32 + 1;
        let mut types: Vec<u32> = vec![pos(b"int"), 1 << 24, 4, 32];
        types.extend([pos(b"s"), STRUCT << 24 | 2, 8, pos(b"a"), 1, 0, pos(b"b"), 1, 32]);
        types.extend([pos(b"t"), 1 << 31 | STRUCT << 24 | 2, 8, pos(b"c"), 1, 3 << 24, pos(b"d"), 1, 32]);
        let types: Vec<u8> = types.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for w in [24, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
            b.extend(w.to_le_bytes());
        }
        b.extend(types);
        b.extend(strings);
        b
    }

    #[test]
    fn members_are_found_by_struct_and_name_past_other_types() {
        let btf = Btf::parse(blob()).unwrap();
        assert_eq!(btf.member("s", "a"), Some(0));
        assert_eq!(btf.member("s", "b"), Some(4));
        assert_eq!(btf.member("t", "d"), Some(4), "a kind_flag struct keeps its offset in the low 24 bits");
        assert_eq!(btf.member("s", "c"), None);
        assert_eq!(btf.member("u", "a"), None);
    }

    #[test]
    fn what_is_not_btf_is_refused() {
        assert!(Btf::parse(b"\x7fELF".to_vec()).is_err());
        let mut short = blob();
        short.truncate(30);
        assert!(Btf::parse(short).is_err());
    }

    /// This kernel's layout, where it has BTF: the members are where a sleep's timer has them.
    #[test]
    fn this_kernel_s_layout_puts_the_task_after_the_timer() {
        let Ok(l) = Layout::of_this_kernel() else {
            eprintln!("skipped: this kernel has no BTF");
            return;
        };
        assert!(l.softexpires > 0 && l.function > l.softexpires, "{l:?}");
        assert!(l.task > l.function, "the sleeper's task follows its hrtimer: {l:?}");
        assert!(l.pid > 0 && l.tgid > 0 && l.pid != l.tgid, "{l:?}");
    }
}
