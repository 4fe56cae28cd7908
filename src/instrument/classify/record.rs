//! The classification's BPF records as the reader takes them, and the text the ftrace instance
//! would have printed for their events, so the same parser and timeline read both.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::trace::context::Effect;

/// A record: ts, cpu, event, pid, arg, next pid, next prio (u64 + six u32), comm, next comm. At
/// a hard interrupt's exit the two words of the next task hold the entry's time instead.
pub const RECORD: usize = 64;

const SOFTIRQS: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];
/// Whether event `kind` is a hard interrupt's entry (an IRQ handler's or a vector's): the
/// programs keep its time for its exit's record (the next kind) instead of handing it on.
pub fn interrupt_entry(kind: u32) -> bool {
    kind == 0 || (kind >= 5 && kind % 2 == 1)
}

/// A record as the reader takes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Record {
    pub ts: u64,
    pub cpu: u32,
    pub kind: u32,
    pub pid: i32,
    pub arg: u32,
    pub next_pid: i32,
    pub next_prio: i32,
    /// The task names as the kernel keeps them, NUL-padded: read as text only when used
    /// ([`Record::comm`]), with nothing allocated per record.
    comm: [u8; 16],
    next_comm: [u8; 16],
}

impl From<&[u8; RECORD]> for Record {
    fn from(b: &[u8; RECORD]) -> Record {
        let w = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let name = |i: usize| <[u8; 16]>::try_from(&b[i..i + 16]).expect("16 bytes");
        Record {
            ts: u64::from_ne_bytes(b[0..8].try_into().expect("8 bytes")),
            cpu: w(8),
            kind: w(12),
            pid: w(16) as i32,
            arg: w(20),
            next_pid: w(24) as i32,
            next_prio: w(28) as i32,
            comm: name(32),
            next_comm: name(48),
        }
    }
}

/// A NUL-padded task name as text (a name cut inside a character, or not UTF-8, is `?`).
fn text(name: &[u8; 16]) -> &str {
    std::str::from_utf8(&name[..name.iter().position(|c| *c == 0).unwrap_or(16)]).unwrap_or("?")
}

impl Record {
    /// At a hard interrupt's exit (an IRQ handler's, a vector's), the time of its entry, when
    /// the program saw it: the entry's record travels in the exit's.
    pub fn entered(&self) -> Option<u64> {
        let exit = self.kind > 0 && interrupt_entry(self.kind - 1);
        let mut word = [0u8; 8];
        word[..4].copy_from_slice(&self.next_pid.to_ne_bytes());
        word[4..].copy_from_slice(&self.next_prio.to_ne_bytes());
        Some(u64::from_ne_bytes(word)).filter(|ts| exit && *ts != 0)
    }

    /// The entry whose time [`Record::entered`] gives, as its own record would have been.
    pub fn entry(&self) -> Option<Record> {
        self.entered().map(|ts| Record { ts, kind: self.kind - 1, next_pid: 0, next_prio: 0, ..*self })
    }

    /// The task current when the event fired.
    pub fn comm(&self) -> &str {
        text(&self.comm)
    }

    /// At a switch, the task switched to.
    pub fn next_comm(&self) -> &str {
        text(&self.next_comm)
    }

    /// What the event does to its CPU's context, typed straight from the record (`name`: its
    /// tracepoint): what [`Effect::of`] reads from the ftrace instance's line for it, with no
    /// text between (issue 38: formatting and parsing it again was most of the reader's cost).
    pub fn effect<'a>(&'a self, name: &'a str, irqs: &'a mut IrqNames) -> Effect<'a> {
        match self.kind {
            0 => Effect::IrqEntry(Cow::Borrowed(irqs.label(self.arg))),
            1 => Effect::IrqExit,
            2 => Effect::SoftirqEntry(SOFTIRQS.get(self.arg as usize).unwrap_or(&"?")),
            3 => Effect::SoftirqExit,
            4 => Effect::Switch { comm: self.next_comm(), pid: self.next_pid, prio: Some(self.next_prio) },
            // The vectors say nothing but their name.
            _ => Effect::vector(name).unwrap_or(Effect::Other),
        }
    }

    /// The event's fields as the ftrace instance prints them, for the same parser: what
    /// [`Record::effect`] is held to.
    #[cfg(test)]
    pub fn detail(&self, irqs: &mut IrqNames) -> String {
        match self.kind {
            0 | 1 => format!("irq={} name={}", self.arg, irqs.name(self.arg)),
            2 | 3 => format!("vec={} [action={}]", self.arg, SOFTIRQS.get(self.arg as usize).unwrap_or(&"?")),
            4 => format!(
                "prev_comm={} prev_pid={} ==> next_comm={} next_pid={} next_prio={}",
                self.comm(),
                self.pid,
                self.next_comm(),
                self.next_pid,
                self.next_prio
            ),
            _ => format!("vector={}", self.arg),
        }
    }
}

/// IRQ names by number, from /proc/interrupts, read again when an IRQ it did not list fires.
#[derive(Default)]
pub struct IrqNames {
    names: HashMap<u32, String>,
    read_for: Vec<u32>,
    /// `IRQ <number> <name>`, as the context labels a handler, by number.
    labels: HashMap<u32, String>,
}

impl IrqNames {
    /// IRQ `irq`'s label as the context keeps it, made once.
    fn label(&mut self, irq: u32) -> &str {
        if !self.labels.contains_key(&irq) {
            let label = format!("IRQ {irq} {}", self.name(irq));
            self.labels.insert(irq, label);
        }
        &self.labels[&irq]
    }

    fn name(&mut self, irq: u32) -> &str {
        if !self.names.contains_key(&irq) && !self.read_for.contains(&irq) {
            self.read_for.push(irq);
            self.names
                .extend(crate::sysinfo::irq_names(&std::fs::read_to_string("/proc/interrupts").unwrap_or_default()));
        }
        self.names.get(&irq).map_or("?", |s| s.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ftrace::parse::Event;

    #[test]
    fn records_read_as_the_ftrace_instance_prints_their_events() {
        let mut b = [0u8; RECORD];
        b[0..8].copy_from_slice(&10_000_000_123u64.to_ne_bytes());
        for (at, v) in [(8, 1u32), (12, 4), (16, 500), (20, 0), (24, 77), (28, 0)] {
            b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        }
        b[32..41].copy_from_slice(b"rtbench-0");
        b[48..55].copy_from_slice(b"python3");
        let r = Record::from(&b);
        assert_eq!((r.ts, r.cpu, r.pid, r.comm()), (10_000_000_123, 1, 500, "rtbench-0"));
        let mut irqs = IrqNames::default();
        let d = r.detail(&mut irqs);
        let field = crate::trace::ftrace::parse::field;
        assert_eq!(
            (field(&d, "next_comm"), field(&d, "next_pid"), field(&d, "next_prio")),
            (Some("python3"), Some("77"), Some("0"))
        );
        let softirq = Record { kind: 2, arg: 1, ..r };
        assert_eq!(field(&softirq.detail(&mut irqs), "action"), Some("TIMER"));
    }

    /// Every kind of record, typed, does to the context what its printed line would.
    #[test]
    fn a_record_s_typed_effect_is_its_printed_line_s() {
        let names = ["irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit", "sched_switch"];
        let vectors = ["local_timer_entry", "local_timer_exit", "reschedule_entry", "irq_work_exit"];
        let mut irqs = IrqNames::default();
        for (kind, name) in names.iter().enumerate().chain(vectors.iter().map(|v| (5, v))) {
            for arg in [0, 1, 9, 4000] {
                let r = Record {
                    ts: 5,
                    cpu: 1,
                    kind: kind as u32,
                    pid: 12,
                    arg,
                    next_pid: 77,
                    next_prio: 120,
                    comm: *b"a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
                    next_comm: *b"python3\0\0\0\0\0\0\0\0\0",
                };
                let detail = r.detail(&mut irqs);
                let e = Event { comm: r.comm(), pid: r.pid, cpu: r.cpu, ts_ns: r.ts, name, detail: &detail };
                let printed = Effect::of(&e);
                assert_eq!(r.effect(name, &mut irqs), printed, "{name} {arg}");
            }
        }
    }

    /// Only an exit's record carries an entry, and only when its words are set.
    #[test]
    fn an_exit_s_record_gives_its_entry_back() {
        let mut b = [0u8; RECORD];
        b[0..8].copy_from_slice(&2_000u64.to_ne_bytes());
        b[24..32].copy_from_slice(&1_500u64.to_ne_bytes());
        let exits = [1u32, 6, 8, 14];
        for kind in 0..15u32 {
            b[12..16].copy_from_slice(&kind.to_ne_bytes());
            let r = Record::from(&b);
            let want = exits.contains(&kind) || (kind >= 6 && kind.is_multiple_of(2));
            assert_eq!(r.entered(), want.then_some(1_500), "kind {kind}");
            if let Some(e) = r.entry() {
                assert_eq!((e.ts, e.kind, e.entered(), e.comm()), (1_500, kind - 1, None, r.comm()));
            }
        }
        b[24..32].fill(0);
        b[12..16].copy_from_slice(&1u32.to_ne_bytes());
        assert_eq!(Record::from(&b).entered(), None, "an exit whose entry the program did not see");
    }

    #[test]
    fn irq_names_are_the_last_column_of_proc_interrupts() {
        let text = "           CPU0       CPU1\n  0:         48          0   IO-APIC   2-edge      timer\n 36:          0       1234  PCI-MSIX-0000:00:04.0   0-edge      virtio1-req.0\nLOC:     100   200   Local timer interrupts\n";
        let names: HashMap<u32, String> = crate::sysinfo::irq_names(text).collect();
        assert_eq!(names.get(&36).map(String::as_str), Some("virtio1-req.0"));
        assert_eq!(names.get(&0).map(String::as_str), Some("timer"));
        assert_eq!(names.len(), 2, "the named vectors are not IRQ numbers");
    }
}
