//! Where the split's BPF program finds what it reads in the kernel's structures, from the
//! kernel's own type information (BTF): the offsets of `struct hrtimer`, `struct
//! hrtimer_sleeper` and `struct task_struct` change with the kernel's version and configuration
//! (`task_struct` above all), so none of them is written down here.

use crate::trace::bpf::btf::{Btf, VMLINUX};

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
        let blob = std::fs::read(VMLINUX).map_err(|e| format!("no kernel type information (BTF): {e}"))?;
        let btf = Btf::parse(&blob)?;
        let at = |s: &str, m: &str| {
            btf.offset(s, m).and_then(|o| i32::try_from(o).map_err(|_| format!("struct {s}.{m} lies too far")))
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

/// Where `symbol` is in the kernel, from /proc/kallsyms; None when hidden (kptr_restrict) or
/// not there. Read line by line up to the symbol: the kernel formats the file as it is read, and
/// all of it (over 100,000 lines) costs seconds of a start under emulation, where the core
/// kernel's symbols come in its first fifth.
pub fn kernel_symbol(symbol: &str) -> Option<u64> {
    use std::io::BufRead;
    let all = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open("/proc/kallsyms").ok()?);
    let addr = all.lines().map_while(Result::ok).find_map(|l| {
        let mut f = l.split_whitespace();
        let (addr, _, name) = (f.next()?, f.next()?, f.next()?);
        (name == symbol).then(|| u64::from_str_radix(addr, 16).ok())?
    })?;
    (addr != 0).then_some(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kernel's layout, where it has BTF: the members are where a sleep's timer has them.
    #[rtbench_testkit::needs(btf)]
    #[test]
    fn this_kernel_s_layout_puts_the_task_after_the_timer() {
        let l = Layout::of_this_kernel().expect("the layout from the kernel's BTF");
        assert!(l.softexpires > 0 && l.function > l.softexpires, "{l:?}");
        assert!(l.task > l.function, "the sleeper's task follows its hrtimer: {l:?}");
        assert!(l.pid > 0 && l.tgid > 0 && l.pid != l.tgid, "{l:?}");
    }

    /// The program's misses are read at the offset this kernel's `struct bpf_prog_info` has.
    #[rtbench_testkit::needs(btf)]
    #[test]
    fn a_program_s_misses_are_read_where_this_kernel_keeps_them() {
        let blob = std::fs::read(VMLINUX).expect("the kernel's BTF");
        let at = Btf::parse(&blob).unwrap().offset("bpf_prog_info", "recursion_misses");
        assert_eq!(at, Ok(crate::sys::RECURSION_MISSES as u32));
    }
}
