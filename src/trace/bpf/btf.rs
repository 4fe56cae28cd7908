//! Where a field lies in a kernel structure, from the kernel's own BTF (`/sys/kernel/btf/vmlinux`):
//! a BPF program reading `next->pid` at `sched_switch` needs `pid`'s offset in `task_struct`,
//! which changes with every kernel's configuration. Only what that needs is read: the type
//! section's records, skipped by kind, and the struct members' names and bit offsets.

const MAGIC: u16 = 0xeb9f;
const STRUCT: u32 = 4;
const UNION: u32 = 5;

/// The kernel's BTF.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// One type record: kind, name, member count, kind flag, where its members start.
#[derive(Clone, Copy)]
struct Type {
    kind: u32,
    name: u32,
    vlen: usize,
    kind_flag: bool,
    body: usize,
}

/// A BTF blob's types and strings.
pub struct Btf<'a> {
    types: Vec<Type>,
    data: &'a [u8],
    strings: &'a [u8],
}

impl<'a> Btf<'a> {
    /// Reads the types of `blob` (the kernel's byte order).
    pub fn parse(blob: &'a [u8]) -> Result<Btf<'a>, String> {
        let u32_at = |at: usize| blob.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")));
        if blob.get(0..2).map(|b| u16::from_ne_bytes([b[0], b[1]])) != Some(MAGIC) {
            return Err("not BTF in this machine's byte order".into());
        }
        let field = |i: usize| u32_at(4 + 4 * i).map(|v| v as usize).ok_or("a short BTF header");
        let (hdr, type_off, type_len, str_off, str_len) = (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        let data = blob.get(hdr + type_off..hdr + type_off + type_len).ok_or("the type section runs past the end")?;
        let strings = blob.get(hdr + str_off..hdr + str_off + str_len).ok_or("the strings run past the end")?;
        let mut types = vec![Type { kind: 0, name: 0, vlen: 0, kind_flag: false, body: 0 }];
        let mut at = 0;
        while at + 12 <= data.len() {
            let word = |i: usize| u32::from_ne_bytes(data[at + 4 * i..at + 4 * i + 4].try_into().expect("4 bytes"));
            let info = word(1);
            let t = Type {
                kind: (info >> 24) & 0x1f,
                name: word(0),
                vlen: (info & 0xffff) as usize,
                kind_flag: info >> 31 == 1,
                body: at + 12,
            };
            at = t.body + extra(t.kind, t.vlen)?;
            types.push(t);
        }
        Ok(Btf { types, data, strings })
    }

    fn name(&self, off: u32) -> &str {
        let rest = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    /// The byte offset of `member` in `struct strukt`, looking into anonymous structs and unions.
    pub fn offset(&self, strukt: &str, member: &str) -> Result<u32, String> {
        let t = self
            .types
            .iter()
            .find(|t| t.kind == STRUCT && t.vlen > 0 && self.name(t.name) == strukt)
            .ok_or_else(|| format!("the kernel's BTF has no struct {strukt}"))?;
        let bits = self.find(t, member, 0).ok_or_else(|| format!("struct {strukt} has no member {member}"))?;
        Ok(bits / 8)
    }

    /// `member`'s bit offset in `t` plus `base`.
    fn find(&self, t: &Type, member: &str, base: u32) -> Option<u32> {
        for i in 0..t.vlen {
            let at = t.body + 12 * i;
            let word =
                |j: usize| u32::from_ne_bytes(self.data[at + 4 * j..at + 4 * j + 4].try_into().expect("4 bytes"));
            let (name, ty, off) = (word(0), word(1) as usize, word(2));
            let bits = base + if t.kind_flag { off & 0x00ff_ffff } else { off };
            if name != 0 && self.name(name) == member {
                return Some(bits);
            }
            let inner = self.types.get(ty).filter(|i| name == 0 && (i.kind == STRUCT || i.kind == UNION));
            if let Some(found) = inner.and_then(|i| self.find(i, member, bits)) {
                return Some(found);
            }
        }
        None
    }
}

/// The bytes after a type record's 12, by kind.
fn extra(kind: u32, vlen: usize) -> Result<usize, String> {
    Ok(match kind {
        1 | 14 | 17 => 4,             // int, var, decl tag
        3 => 12,                      // array
        4 | 5 | 15 | 19 => 12 * vlen, // struct, union, datasec, enum64
        6 | 13 => 8 * vlen,           // enum, function prototype
        2 | 7..=12 | 16 | 18 => 0,    // pointer, forward, typedef, qualifiers, func, float, type tag
        k => return Err(format!("a BTF kind this reader does not know ({k})")),
    })
}

/// `task_struct`'s `pid`, `prio` and `comm` offsets in the running kernel.
pub fn task_offsets() -> Result<[u32; 3], String> {
    let blob = std::fs::read(VMLINUX).map_err(|e| format!("cannot read the kernel's BTF: {e}"))?;
    let btf = Btf::parse(&blob)?;
    Ok([btf.offset("task_struct", "pid")?, btf.offset("task_struct", "prio")?, btf.offset("task_struct", "comm")?])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob of `types` (each its words) and `strings`.
    fn blob(types: &[Vec<u32>], strings: &[u8]) -> Vec<u8> {
        let body: Vec<u8> = types.iter().flatten().flat_map(|w| w.to_ne_bytes()).collect();
        let mut b = Vec::new();
        b.extend(MAGIC.to_ne_bytes());
        b.extend([1, 0]);
        for w in [24, 0, body.len() as u32, body.len() as u32, strings.len() as u32] {
            b.extend(w.to_ne_bytes());
        }
        b.extend(body);
        b.extend(strings);
        b
    }

    #[test]
    fn a_member_is_found_directly_and_inside_an_anonymous_union() {
        // 1: int; 2: union { int pid; } (anonymous); 3: struct task_struct { int state; <2> at 64 bits; int prio at 96 }.
        let strings = b"\0int\0pid\0task_struct\0state\0prio\0";
        let (int, pid, task, state, prio) = (1, 5, 9, 21, 27);
        let types = vec![
            vec![int, 1 << 24, 4, 32],
            vec![0, UNION << 24 | 1, 4, pid, 1, 0],
            vec![task, STRUCT << 24 | 3, 16, state, 1, 0, 0, 2, 64, prio, 1, 96],
        ];
        let b = blob(&types, strings);
        let btf = Btf::parse(&b).unwrap();
        assert_eq!(btf.offset("task_struct", "prio"), Ok(12));
        assert_eq!(btf.offset("task_struct", "pid"), Ok(8), "inside the anonymous union at byte 8");
        assert!(btf.offset("task_struct", "comm").unwrap_err().contains("no member comm"));
        assert!(btf.offset("mm_struct", "pid").is_err());
    }

    #[rtbench_testkit::needs(btf)]
    #[test]
    fn the_running_kernel_s_task_struct_has_its_fields_in_order() {
        let [pid, prio, comm] = task_offsets().expect("the kernel's task_struct in its BTF");
        // In every layout, pid and comm come after the scheduling fields prio is among.
        assert!(prio < pid && pid < comm, "pid {pid}, prio {prio}, comm {comm}");
    }
}
