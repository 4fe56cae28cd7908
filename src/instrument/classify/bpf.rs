//! The classification's events from small BPF programs on the raw tracepoints the ftrace
//! instance would trace (IRQ handlers, softirqs, switches, the x86 vectors), built here as
//! bytecode: on this VM an ftrace event on the interrupt path costs the interrupted thread
//! ~2–4 µs (a cold ring buffer on a freshly woken virtual CPU), a program almost nothing.
//!
//! Each program returns at once on a CPU that is not measured (a map with an entry per CPU
//! the machine can have says which are, so any CPU number is followed); on a measured one it
//! puts a record (time, CPU, event, the task current, the tracepoint's first argument, and at a
//! switch the next task's pid, priority and name) into a ring buffer ([`Records`]) for the
//! reader. A hard interrupt's entry and exit (an IRQ handler's, a vector's) travel as one
//! record, its exit's: the entry's program keeps its time in its CPU's entry of that map, and
//! the exit's hands it on (nothing else runs on a CPU inside a hard interrupt). That halves
//! the interrupts' records for the reader and spares the measured CPU a ring buffer write. The
//! reader takes them off the measured CPUs every few milliseconds and turns each record into
//! the events the ftrace path would have read, into the same [`Timeline`]. The next task
//! is read in the program, at offsets the kernel's BTF gives ([`crate::trace::bpf::btf`]):
//! reading it from /proc afterwards would miss the short-lived tasks (a burst that ended before
//! the reader looked) and cost a file per pid.
//! IRQ names come from /proc/interrupts in the reader ([`super::record`]): the program stays small.

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use super::record::{interrupt_entry, IrqNames, Record, RECORD};
use super::timeline::{ProgramTime, Timeline};
use crate::trace::bpf::asm::*;
use crate::trace::bpf::records::{word, Records};
use crate::trace::stream::{lock, Fill, Reader};

/// The tracepoints, a record's event number being the index; the first five are needed, the
/// vectors taken where the kernel has them (as the ftrace instance does).
const TRACEPOINTS: [&str; 15] = [
    "irq_handler_entry",
    "irq_handler_exit",
    "softirq_entry",
    "softirq_exit",
    "sched_switch",
    "local_timer_entry",
    "local_timer_exit",
    "reschedule_entry",
    "reschedule_exit",
    "call_function_entry",
    "call_function_exit",
    "call_function_single_entry",
    "call_function_single_exit",
    "irq_work_entry",
    "irq_work_exit",
];
const NEEDED: usize = 5;
const SWITCH: usize = 4;
/// `sched_switch(preempt, prev, next, ...)`: `next` is the third argument.
const NEXT_ARG: i16 = 16;
/// Records waiting for the reader: a busy CPU makes tens of thousands of events a second, the
/// reader takes them at least every 500 ms, more often when they fill a quarter of this.
const QUEUED: u32 = 65_536;
const ARRAY: u32 = 2;

/// Per CPU number in the map of CPUs followed: (followed, kind of the interrupt entered, its
/// time, the programs' own time there, their runs there), padded to a cache line so that two
/// measured CPUs do not write to one.
const SLOT: u32 = 64;
/// Where in a slot the programs add up their own time and runs.
const OWN_NS: i16 = 16;
const OWN_RUNS: i16 = 24;

/// The record on the program's stack.
const AT: i16 = -64;
/// This CPU's number on the stack, the key into the followed CPUs.
const KEY: i16 = AT - 8;

/// The programs and maps, attached; all of it goes with the fds.
pub struct Programs {
    records: Records,
    followed: OwnedFd,
    cpus: Vec<usize>,
    _links: Vec<OwnedFd>,
    /// When the last program was attached: records before it are dropped.
    since_ns: u64,
    /// The records of one pass, kept from pass to pass: grown once, not at every poll.
    batch: Vec<Record>,
}

impl Programs {
    /// Loads and attaches a program per tracepoint, following `cpus`.
    pub fn attach(cpus: &[usize]) -> Result<Programs, String> {
        use crate::sys::{bpf_attach_raw_tp, bpf_raw_tp_program};
        let followed = followed(cpus, crate::sysinfo::cpu_ids())?;
        let task = crate::trace::bpf::btf::task_offsets()?;
        let records = Records::make(RECORD, QUEUED)?;
        let mut links = Vec::new();
        for (kind, name) in TRACEPOINTS.iter().enumerate() {
            let maps = Maps { followed: &followed, records: &records };
            let code = program(kind, (kind == SWITCH).then_some(task), &maps);
            let prog = bpf_raw_tp_program("rtbench_class", &code)
                .map_err(|e| format!("the {name} program does not load: {e}"))?;
            let tp = std::ffi::CString::new(*name).expect("no NUL");
            match bpf_attach_raw_tp(&tp, &prog) {
                Ok(link) => links.push(link),
                Err(e) if kind < NEEDED => return Err(format!("cannot attach to {name}: {e}")),
                Err(_) => {}
            }
        }
        // Attaching patches the kernel's text, which interrupts every CPU: an entry program
        // attached before its exit's sees an interrupt whose end it never sees, and a CPU left
        // "in" that interrupt would have every gap put down to it. Only what follows counts.
        let since_ns = crate::sys::now_ns();
        Ok(Programs { records, followed, cpus: cpus.to_vec(), _links: links, since_ns, batch: Vec::new() })
    }

    /// Every record waiting, as the reader takes it.
    fn read(&mut self) -> std::io::Result<&mut Vec<Record>> {
        let batch = &mut self.batch;
        batch.clear();
        self.records.drain(|rec| batch.extend(<&[u8; RECORD]>::try_from(rec).ok().map(Record::from)))?;
        Ok(batch)
    }

    /// Reads every record waiting into `timeline`, in time order; Err when a map cannot be read.
    fn drain(&mut self, timeline: &Mutex<Timeline>, irqs: &mut IrqNames) -> std::io::Result<Fill> {
        let since = self.since_ns;
        let read = self.read()?.len();
        let Programs { batch, records, .. } = self;
        let lost = records.lost()?;
        let mut t = lock(timeline);
        take(batch, since, &mut t, irqs);
        t.lost_events = lost;
        t.records += read as u64;
        t.programs = Some(own_time(&self.followed, &self.cpus)?);
        Ok(records.fill(read))
    }
}

/// The programs' own time and runs, summed over the measured `cpus`' slots of `followed`.
fn own_time(followed: &OwnedFd, cpus: &[usize]) -> std::io::Result<ProgramTime> {
    let mut sum = ProgramTime::default();
    let mut slot = [0u8; SLOT as usize];
    let at = |off: i16| off as usize / 8;
    for &c in cpus {
        crate::sys::bpf_lookup(followed, &(c as u32).to_ne_bytes(), &mut slot)?;
        (sum.ns, sum.runs) = (sum.ns + word(&slot, at(OWN_NS)), sum.runs + word(&slot, at(OWN_RUNS)));
    }
    Ok(sum)
}

/// Takes the records of `batch` stamped from `since` on into `timeline`, in time order.
pub(super) fn take(batch: &mut Vec<Record>, since: u64, timeline: &mut Timeline, irqs: &mut IrqNames) {
    batch.retain(|r| r.ts >= since);
    // A program interrupted between its clock read and its output puts its record after the
    // interrupt's own.
    batch.sort_by_key(|r| r.ts);
    let name = |kind: u32| TRACEPOINTS.get(kind as usize).copied().unwrap_or("?");
    for r in batch.iter() {
        // An interrupt's entry, from its exit's record; one entered before the programs were
        // all attached is not (as its own record would not be).
        if let Some(e) = r.entry().filter(|e| e.ts >= since) {
            timeline.effect(e.cpu, e.ts, e.pid, || r.comm(), &e.effect(name(e.kind), irqs));
        }
        timeline.effect(r.cpu, r.ts, r.pid, || r.comm(), &r.effect(name(r.kind), irqs));
    }
}

/// Attaches the programs and reads them into a timeline of `cpus` from a thread named `name`,
/// on the collector's CPUs `on`; with how their records travel (`ringbuf` or `queue`).
pub fn start(name: &str, cpus: &[usize], on: &[usize]) -> Result<(Reader<Timeline>, &'static str), String> {
    let mut programs = Programs::attach(cpus)?;
    let transport = programs.records.transport();
    let mut irqs = IrqNames::default();
    // The programs go when the reader ends.
    let reader = Reader::spawn(name, Timeline::new(cpus), on, move |t| programs.drain(t, &mut irqs).ok())?;
    Ok((reader, transport))
}
/// The maps the programs share.
struct Maps<'a> {
    /// Per CPU number the machine can have, non-zero where the CPU is measured.
    followed: &'a OwnedFd,
    records: &'a Records,
}

/// The array of the CPUs to follow: an entry for each of the `ids` CPU numbers the machine can
/// have (no limit but the kernel's), 1 for each of `cpus`.
fn followed(cpus: &[usize], ids: usize) -> Result<OwnedFd, String> {
    let map = crate::sys::bpf_map(ARRAY, 4, SLOT, ids as u32).map_err(|e| format!("cannot make a map: {e}"))?;
    let mut one = [0u8; SLOT as usize];
    one[..4].copy_from_slice(&1u32.to_ne_bytes());
    for &c in cpus {
        if c >= ids {
            return Err(format!("CPU {c} is not one of the machine's {ids}"));
        }
        crate::sys::bpf_update(&map, &(c as u32).to_ne_bytes(), &one)
            .map_err(|e| format!("cannot follow CPU {c}: {e}"))?;
    }
    Ok(map)
}

/// The program of event `kind`: on a followed CPU, the record put into `records` (or counted
/// lost); at an interrupt's entry, its time kept for the exit's record instead. `task`: at a
/// switch, `task_struct`'s (pid, prio, comm) offsets to read `next` at.
fn program(kind: usize, task: Option<[u32; 3]>, maps: &Maps) -> Vec<u64> {
    let at = |off: i16| AT + off;
    let mut a = Asm::default();
    // r6: the arguments; r7: this CPU; r9: its slot, if it is followed (first word not 0).
    a.mov(6, 1).call(SMP_PROCESSOR_ID).mov(7, 0).op(STX_W, FP, 0, KEY, 0);
    a.map(1, maps.followed).stack(2, i32::from(KEY)).call(MAP_LOOKUP).exit_if(0, true, 0);
    a.op(LDX_W, 1, 0, 0, 0).exit_if(1, true, 0).mov(9, 0);
    if interrupt_entry(kind as u32) {
        a.call(KTIME_GET_NS).op(STX_DW, 9, 0, 8, 0).op(ST_W, 9, 0, 4, kind as i32);
        add_own_time(&mut a, 9, 8);
        return a.finish();
    }
    for off in (0..RECORD as i16).step_by(8) {
        a.op(ST_DW, FP, 0, at(off), 0);
    }
    a.op(STX_W, FP, 7, at(8), 0).op(ST_W, FP, 0, at(12), kind as i32);
    a.call(KTIME_GET_NS).op(STX_DW, FP, 0, at(0), 0);
    a.call(CURRENT_PID_TGID).op(STX_W, FP, 0, at(16), 0);
    a.op(LDX_DW, 1, 6, 0, 0).op(STX_W, FP, 1, at(20), 0);
    a.stack(1, i32::from(at(32))).mov_k(2, 16).call(CURRENT_COMM);
    if kind > 0 && interrupt_entry(kind as u32 - 1) {
        // The entry's time where a switch has its next task's pid and priority, if the last
        // entry kept is this exit's own (an exit attached before its entry's program sees none).
        let other = a.op(LDX_W, 1, 9, 4, 0).jump(JNE_K, 1, 0, kind as i32 - 1);
        a.op(LDX_DW, 1, 9, 8, 0).op(STX_DW, FP, 1, at(24), 0).land(other);
        a.op(ST_DW, 9, 0, 8, 0);
    }
    if let Some([pid, prio, comm]) = task {
        a.op(LDX_DW, 8, 6, NEXT_ARG, 0);
        a.read_kernel_n(i32::from(at(24)), 4, 8, pid as i32);
        a.read_kernel_n(i32::from(at(28)), 4, 8, prio as i32);
        a.read_kernel_n(i32::from(at(48)), 16, 8, comm as i32);
    }
    maps.records.emit_and_go_on(&mut a, AT);
    add_own_time(&mut a, FP, AT);
    a.finish()
}

/// The program's last step on a followed CPU: the time since the clock reading at `at + off`
/// and a run added to its CPU's slot (r9), atomically (an interrupt's program can come between).
fn add_own_time(a: &mut Asm, at: u8, off: i16) {
    a.call(KTIME_GET_NS).op(LDX_DW, 1, at, off, 0).op(ALU64 | SUB | X, 0, 1, 0, 0);
    a.op(ATOMIC_DW, 9, 0, OWN_NS, 0).mov_k(1, 1).op(ATOMIC_DW, 9, 1, OWN_RUNS, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The programs as the kernel runs them: a switch on this CPU is queued with both tasks.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn a_switch_on_a_followed_cpu_comes_back_with_the_next_task() {
        let cpus = crate::sysinfo::online_cpus();
        let mut programs = crate::sys::attached(|| Programs::attach(&cpus));
        // Sleeping switches this thread out and back in.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let timeline = Mutex::new(Timeline::new(&cpus));
        let seen = programs.read().unwrap();
        let me = crate::sys::gettid();
        let back_in =
            seen.iter().find(|r| r.kind == SWITCH as u32 && r.next_pid == me).expect("a switch to this thread");
        assert!(!back_in.next_comm().is_empty() && back_in.next_prio >= 100, "{back_in:?}");
        programs.drain(&timeline, &mut IrqNames::default()).unwrap();
    }

    /// Keeps `cpu` busy for 100 ms, from a thread of its own: a busy CPU takes the tick.
    fn spin_100_ms_on(cpu: usize) {
        std::thread::spawn(move || {
            let _ = crate::sys::set_affinity(&[cpu]);
            let until = std::time::Instant::now() + std::time::Duration::from_millis(100);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        })
        .join()
        .unwrap();
    }

    /// A hard interrupt comes as one record, its exit's with its entry's time: no entry of an
    /// IRQ handler or a vector is handed on by itself, and the reader makes both events of it.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn an_interrupt_s_entry_travels_in_its_exit_s_record() {
        let cpus = crate::sysinfo::online_cpus();
        let mut programs = crate::sys::attached(|| Programs::attach(&cpus));
        // A busy CPU takes the tick (an idle one may not): spin, bounded, on the last CPU.
        let busy = *cpus.last().unwrap();
        spin_100_ms_on(busy);
        let mut seen = programs.read().unwrap().clone();
        let entries: Vec<&Record> = seen.iter().filter(|r| interrupt_entry(r.kind)).collect();
        assert!(entries.is_empty(), "entries handed on by themselves: {entries:?}");
        let pairs: Vec<(u64, u64)> = seen.iter().filter_map(|r| r.entered().map(|e| (e, r.ts))).collect();
        assert!(!pairs.is_empty(), "interrupts in 100 ms of a busy CPU: {seen:?}");
        assert!(pairs.iter().all(|(e, x)| e <= x && x - e < 10_000_000), "entry before exit: {pairs:?}");
        let mut timeline = Timeline::new(&cpus);
        let since = programs.since_ns;
        take(&mut seen, since, &mut timeline, &mut IrqNames::default());
        crate::trace::stream::Lines::caught_up(&mut timeline, crate::sys::now_ns());
        let irq = crate::model::CauseKind::Irq;
        let stretches = cpus.iter().flat_map(|c| timeline.stretches(*c as u32).unwrap());
        assert!(stretches.filter(|s| s.key.kind == irq).count() > 0, "the interrupts' stretches");
    }

    /// The programs add up their own time on the CPU they follow, a run for each record and
    /// each interrupt entered, and nothing on a CPU they do not follow.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn the_programs_count_their_own_time_where_they_follow() {
        let cpus = crate::sysinfo::online_cpus();
        let busy = *cpus.last().unwrap();
        let mut programs = crate::sys::attached(|| Programs::attach(&[busy]));
        spin_100_ms_on(busy);
        let timeline = Mutex::new(Timeline::new(&[busy]));
        programs.drain(&timeline, &mut IrqNames::default()).unwrap();
        let (own, records) = {
            let t = lock(&timeline);
            (t.programs.expect("counted from BPF"), t.records)
        };
        // Every record is a run's; the interrupts' entries ran too (a busy CPU takes the tick).
        assert!(own.runs > records && records > 0, "{own:?}, {records} records");
        assert!(own.ns > 0 && own.ns / own.runs < 1_000_000, "{own:?}");
        if let Some(&other) = cpus.iter().find(|&&c| c != busy) {
            assert_eq!(own_time(&programs.followed, &[other]).unwrap(), ProgramTime::default(), "CPU {other}");
        }
    }

    /// Built for a 256-CPU machine (issue 38): every followed CPU's entry is there, CPUs past
    /// 64 included, and each program passes the kernel's verifier with that map.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn the_programs_follow_cpus_past_64() {
        let cpus = [0, 1, 63, 64, 130, 200, 255];
        let map = followed(&cpus, 256).expect("a map of 256 CPUs");
        for c in [0u32, 1, 2, 63, 64, 65, 130, 199, 200, 255] {
            let mut v = [0u8; SLOT as usize];
            crate::sys::bpf_lookup(&map, &c.to_ne_bytes(), &mut v).unwrap();
            let first = u32::from_ne_bytes(v[..4].try_into().unwrap());
            assert_eq!(first == 1, cpus.contains(&(c as usize)), "CPU {c}");
        }
        assert!(followed(&[256], 256).is_err(), "a CPU past the machine's is refused");
        let task = crate::trace::bpf::btf::task_offsets().expect("the kernel's task_struct in its BTF");
        for records in [Records::make(RECORD, 16).unwrap(), Records::queue(RECORD, 16).unwrap()] {
            let maps = Maps { followed: &map, records: &records };
            for (kind, name) in TRACEPOINTS.iter().enumerate() {
                let code = program(kind, (kind == SWITCH).then_some(task), &maps);
                let loaded = crate::sys::bpf_raw_tp_program("rtbench_class", &code);
                assert!(loaded.is_ok(), "the {name} program for 256 CPUs ({}): {loaded:?}", records.transport());
            }
        }
    }

    /// A CPU not followed queues nothing, however busy: the filter is the map's.
    #[rtbench_testkit::needs(root, btf, two_cpus, native)]
    #[test]
    fn a_cpu_not_followed_queues_nothing() {
        let cpus = crate::sysinfo::online_cpus();
        let (followed, other) = (cpus[0], cpus[1]);
        let mut programs = crate::sys::attached(|| Programs::attach(&[followed]));
        // Sleeps switch on both CPUs.
        for cpu in [other, followed] {
            std::thread::spawn(move || {
                let _ = crate::sys::set_affinity(&[cpu]);
                (0..5).for_each(|_| std::thread::sleep(std::time::Duration::from_millis(1)));
            })
            .join()
            .unwrap();
        }
        let seen: Vec<u32> = programs.read().unwrap().iter().map(|r| r.cpu).collect();
        assert!(seen.contains(&(followed as u32)), "CPU {followed}'s events are queued");
        assert!(seen.iter().all(|c| *c == followed as u32), "only CPU {followed}'s: {seen:?}");
    }

    /// Attaching interrupts every CPU (text patching): no CPU is left "in" an interrupt whose
    /// entry was seen before its exit's program was attached.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn no_cpu_is_left_in_an_interrupt_by_the_attaching() {
        let cpus = crate::sysinfo::online_cpus();
        // A busy CPU takes the patching's interrupts (an idle one polls and needs none): a
        // normal-priority spinner, bounded in time, on the last CPU.
        let busy = *cpus.last().unwrap();
        let spinner = std::thread::spawn(move || {
            let _ = crate::sys::set_affinity(&[busy]);
            let until = std::time::Instant::now() + std::time::Duration::from_millis(600);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (reader, _) = crate::sys::attached(|| start("rtbench-test", &cpus, &[]));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let state = reader.state();
        drop(reader);
        spinner.join().unwrap();
        let t = lock(&state);
        for c in &cpus {
            let stretches = t.stretches(*c as u32).unwrap();
            let span = stretches.back().map_or(0, |l| l.to) - stretches.front().map_or(0, |f| f.from);
            let irq = crate::model::CauseKind::Irq;
            let in_irq: u64 = stretches.iter().filter(|s| s.key.kind == irq).map(|s| s.to - s.from).sum();
            assert!(in_irq * 2 < span, "CPU {c} in interrupts for {in_irq} of {span} ns: {stretches:?}");
        }
    }
}
