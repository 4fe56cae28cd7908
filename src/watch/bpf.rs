//! The watched threads' scheduling events from small BPF programs on the scheduler's raw
//! tracepoints: `sched_wakeup` and `sched_wakeup_new` (a thread made runnable), `sched_waking`
//! (who wakes a real-time one, from the waker's side), `sched_switch` (one switched out, one
//! in) and `sched_migrate_task` (moved to another CPU). Each program reads the task's process id
//! (`task_struct.tgid`, at the offset the kernel's BTF gives) and returns at once unless it is
//! one of the watched processes (a hash map of their ids), so the rest of the machine costs a
//! read and a lookup; a watched thread's event goes into a ring buffer ([`Records`]) as a
//! [`follow::Event`](super::follow::Event). Two more on `sys_enter`/`sys_exit` keep, for each
//! watched thread inside a system call, which call it is (a map, no event): a switch out to
//! sleep and a wake-up carry it, so a sleep is judged by what the thread slept in. Threads the
//! processes start later are theirs too. Nothing of the watched threads is changed.

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use super::follow::{Event, Followed, MIGRATE, RECORD, SWITCH, WAKEUP, WAKEUP_NEW, WAKING};
use crate::trace::bpf::asm::*;
use crate::trace::bpf::btf::{Btf, VMLINUX};
use crate::trace::bpf::records::Records;
use crate::trace::stream::{lock, Fill, Reader};

/// Events waiting for the reader: a thread of 10 kHz makes 30 000 a second.
const QUEUED: u32 = 65_536;
const HASH: u32 = 1;
/// The most processes one watch follows, and threads inside a system call at once.
const PROCESSES: u32 = 1024;
const IN_CALL: u32 = 16_384;

/// The record on the program's stack (the 4 bytes below it for the lost count's key), and the
/// key of the map lookup below that.
const AT: i16 = -80;
const KEY: i16 = AT - 16;
/// Where in the record a thread's system call goes: number + 1 and operation, first argument,
/// and a `clock_nanosleep`'s time asked (seconds, nanoseconds).
const CALL_AT: i16 = AT + 40;
const CALL: i16 = 32;

/// A system call's first three arguments in the `pt_regs` that `sys_enter` hands on, and the
/// size of one.
#[cfg(target_arch = "x86_64")]
const ARGS: ([i32; 3], i32) = ([112, 104, 96], 8); // di, si, dx
#[cfg(target_arch = "aarch64")]
const ARGS: ([i32; 3], i32) = ([0, 8, 16], 8); // regs[0..3]
#[cfg(target_arch = "arm")]
const ARGS: ([i32; 3], i32) = ([0, 4, 8], 4); // uregs[0..3]

/// The `clock_nanosleep` whose time asked is a 64-bit `timespec` (on 32-bit ARM, glibc's
/// `clock_nanosleep_time64`).
#[cfg(target_pointer_width = "64")]
const CLOCK_NANOSLEEP: i32 = libc::SYS_clock_nanosleep as i32;
#[cfg(not(target_pointer_width = "64"))]
const CLOCK_NANOSLEEP: i32 = super::calls::SYS_CLOCK_NANOSLEEP_TIME64 as i32;

/// `task_struct`'s members the programs read.
#[derive(Clone, Copy, Debug)]
struct Task {
    pid: i32,
    tgid: i32,
    prio: i32,
}

impl Task {
    fn of_this_kernel() -> Result<Task, String> {
        let blob = std::fs::read(VMLINUX).map_err(|e| format!("no kernel type information (BTF): {e}"))?;
        let btf = Btf::parse(&blob)?;
        let at = |m: &str| {
            btf.offset("task_struct", m)
                .and_then(|o| i32::try_from(o).map_err(|_| format!("task_struct.{m} lies too far")))
        };
        Ok(Task { pid: at("pid")?, tgid: at("tgid")?, prio: at("prio")? })
    }
}

/// The programs and maps, attached; all of it goes with the fds.
pub struct Programs {
    records: Records,
    _watched: OwnedFd,
    _in_call: OwnedFd,
    _links: Vec<OwnedFd>,
    batch: Vec<Event>,
}

impl Programs {
    /// Loads and attaches the programs, following the threads of the processes `tgids`.
    pub fn attach(tgids: &[u32]) -> Result<Programs, String> {
        use crate::sys::{bpf_attach_raw_tp, bpf_raw_tp_program};
        let task = Task::of_this_kernel()?;
        let watched = crate::sys::bpf_map(HASH, 4, 4, PROCESSES).map_err(|e| format!("cannot make a map: {e}"))?;
        if tgids.len() > PROCESSES as usize {
            return Err(format!("{} processes: one watch follows at most {PROCESSES}", tgids.len()));
        }
        for tgid in tgids {
            crate::sys::bpf_update(&watched, &tgid.to_ne_bytes(), &1u32.to_ne_bytes())
                .map_err(|e| format!("cannot follow process {tgid}: {e}"))?;
        }
        let records = Records::make(RECORD, QUEUED)?;
        let in_call =
            crate::sys::bpf_map(HASH, 4, CALL as u32, IN_CALL).map_err(|e| format!("cannot make a map: {e}"))?;
        let programs = [
            ("sched_wakeup", woken(WAKEUP, task, &watched, &records)),
            ("sched_wakeup_new", woken(WAKEUP_NEW, task, &watched, &records)),
            ("sched_waking", waking(task, &watched, &in_call, &records)),
            ("sched_switch", switched(task, &watched, &in_call, &records)),
            ("sched_migrate_task", migrated(task, &watched, &records)),
            ("sys_enter", entered(&watched, &in_call)),
            ("sys_exit", left(&watched, &in_call)),
        ];
        let mut links = Vec::new();
        for (name, code) in programs {
            let prog = bpf_raw_tp_program("rtbench_watch", &code)
                .map_err(|e| format!("the {name} program does not load: {e}"))?;
            let tp = std::ffi::CString::new(name).expect("no NUL");
            links.push(bpf_attach_raw_tp(&tp, &prog).map_err(|e| format!("cannot attach to {name}: {e}"))?);
        }
        Ok(Programs { records, _watched: watched, _in_call: in_call, _links: links, batch: Vec::new() })
    }

    /// Every event waiting, into `followed` in time order; Err when a map cannot be read.
    pub fn drain(&mut self, followed: &Mutex<Followed>) -> std::io::Result<Fill> {
        let batch = &mut self.batch;
        batch.clear();
        let read = self.records.drain(|rec| batch.extend(Event::from(rec)))?;
        // A program interrupted between its clock read and its output puts its record after
        // the interrupt's own.
        batch.sort_by_key(|e| e.ts);
        let lost = self.records.lost()?;
        let mut f = lock(followed);
        for e in batch.iter() {
            f.take(e);
        }
        f.records += read as u64;
        f.lost_events = lost;
        Ok(self.records.fill(read))
    }
}

/// Attaches the programs for `tgids` and reads them into `into` from a thread named `name` on
/// the CPUs `on`; with how their records travel (`ringbuf` or `queue`).
pub fn start(
    name: &str,
    tgids: &[u32],
    on: &[usize],
    into: Followed,
) -> Result<(Reader<Followed>, &'static str), String> {
    let mut programs = Programs::attach(tgids)?;
    let transport = programs.records.transport();
    let reader = Reader::spawn(name, into, on, move |f| programs.drain(f).ok())?;
    Ok((reader, transport))
}

/// `fp[KEY]` = the tgid of the task in `reg`, looked up among the watched processes: the program
/// ends unless it is one, or with `flag_at` goes on and notes there (1) that it is.
fn watched_task(a: &mut Asm, task: Task, reg: u8, watched: &OwnedFd, flag_at: Option<i16>) {
    a.op(ST_DW, FP, 0, KEY, 0).read_kernel_n(i32::from(KEY), 4, reg, task.tgid);
    a.map(1, watched).stack(2, i32::from(KEY)).call(MAP_LOOKUP);
    match flag_at {
        None => {
            a.exit_if(0, true, 0);
        }
        Some(at) => {
            let not = a.jump(JEQ_K, 0, 0, 0);
            a.op(ST_W, FP, 0, at, 1).land(not);
        }
    }
}

/// The record's time, CPU and kind, with the task in `reg`'s pid and priority.
fn stamp(a: &mut Asm, kind: u32, task: Task, reg: u8) {
    for off in (0..RECORD as i16).step_by(8).filter(|&o| o != 32) {
        a.op(ST_DW, FP, 0, AT + off, 0);
    }
    a.call(KTIME_GET_NS).op(STX_DW, FP, 0, AT, 0);
    a.call(SMP_PROCESSOR_ID).op(STX_W, FP, 0, AT + 8, 0).op(ST_W, FP, 0, AT + 12, kind as i32);
    a.read_kernel_n(i32::from(AT + 16), 4, reg, task.pid);
    a.read_kernel_n(i32::from(AT + 20), 4, reg, task.prio);
}

/// `sched_wakeup(p)`, `sched_wakeup_new(p)`: a watched thread made runnable.
fn woken(kind: u32, task: Task, watched: &OwnedFd, records: &Records) -> Vec<u64> {
    let mut a = Asm::default();
    a.mov(6, 1).op(LDX_DW, 8, 6, 0, 0);
    watched_task(&mut a, task, 8, watched, None);
    stamp(&mut a, kind, task, 8);
    a.op(ST_DW, FP, 0, AT + 32, 1);
    records.emit(&mut a, AT);
    a.finish()
}

/// `sched_switch(preempt, prev, next, prev_state)`: when either thread is watched, the switch
/// with both, and the state `prev` leaves in, 0 when it stays runnable (Linux 5.18 on has that
/// argument), and when `prev` is watched the system call it is in.
fn switched(task: Task, watched: &OwnedFd, in_call: &OwnedFd, records: &Records) -> Vec<u64> {
    let mut a = Asm::default();
    a.mov(6, 1).op(LDX_DW, 7, 6, 8, 0).op(LDX_DW, 8, 6, 16, 0);
    a.op(ST_DW, FP, 0, AT + 32, 0);
    watched_task(&mut a, task, 8, watched, Some(AT + 32));
    watched_task(&mut a, task, 7, watched, Some(AT + 36));
    a.op(LDX_DW, 1, FP, AT + 32, 0).exit_if(1, true, 0);
    stamp(&mut a, SWITCH, task, 8);
    a.read_kernel_n(i32::from(AT + 24), 4, 7, task.pid);
    // Still runnable when preempted, whatever state it was going into (the tracepoint's "R+").
    a.op(LDX_DW, 1, 6, 24, 0).op(LDX_DW, 2, 6, 0, 0);
    let not_preempted = a.jump(JEQ_K, 2, 0, 0);
    a.mov_k(1, 0).land(not_preempted);
    a.op(STX_W, FP, 1, AT + 28, 0);
    // A watched thread switched out: the system call it is in.
    a.op(LDX_W, 1, FP, AT + 36, 0);
    let not_watched = a.jump(JEQ_K, 1, 0, 0);
    call_of(&mut a, in_call, AT + 24);
    a.land(not_watched);
    records.emit(&mut a, AT);
    a.finish()
}

/// `fp[CALL_AT..+CALL]` = the system call the thread whose id is at `fp + key` is in, when it
/// is in one (r0-r5 clobbered).
fn call_of(a: &mut Asm, in_call: &OwnedFd, key: i16) {
    a.map(1, in_call).stack(2, i32::from(key)).call(MAP_LOOKUP);
    let none = a.jump(JEQ_K, 0, 0, 0);
    for off in (0..CALL).step_by(8) {
        a.op(LDX_DW, 1, 0, off, 0).op(STX_DW, FP, 1, CALL_AT + off, 0);
    }
    a.land(none);
}

/// `sched_waking(p)`: a watched real-time thread about to be woken, from its waker's side: the
/// current thread's id and priority, whether it is watched, and the system call it is in.
fn waking(task: Task, watched: &OwnedFd, in_call: &OwnedFd, records: &Records) -> Vec<u64> {
    let mut a = Asm::default();
    a.mov(6, 1).op(LDX_DW, 8, 6, 0, 0);
    watched_task(&mut a, task, 8, watched, None);
    stamp(&mut a, WAKING, task, 8);
    // Only real-time threads' sleeps are judged.
    a.op(LDX_W, 1, FP, AT + 20, 0).exit_on(JGT_K, 1, 99);
    a.op(ST_DW, FP, 0, AT + 32, 1);
    a.call(CURRENT_PID_TGID).mov(7, 0).op(STX_W, FP, 7, AT + 24, 0);
    a.call(CURRENT_TASK).mov(9, 0);
    a.read_kernel_n(i32::from(AT + 28), 4, 9, task.prio);
    a.mov(1, 7).op(ALU64 | RSH, 1, 0, 0, 32).op(ST_DW, FP, 0, KEY, 0).op(STX_W, FP, 1, KEY, 0);
    a.map(1, watched).stack(2, i32::from(KEY)).call(MAP_LOOKUP);
    let not_watched = a.jump(JEQ_K, 0, 0, 0);
    a.op(ST_W, FP, 0, AT + 36, 1);
    call_of(&mut a, in_call, AT + 24);
    a.land(not_watched);
    records.emit(&mut a, AT);
    a.finish()
}

/// `fp[KEY]` = the current thread's process id, its thread id kept in r7: the program ends
/// unless the process is watched.
fn current_watched(a: &mut Asm, watched: &OwnedFd) {
    a.call(CURRENT_PID_TGID).mov(7, 0).mov(1, 0).op(ALU64 | RSH, 1, 0, 0, 32);
    a.op(ST_DW, FP, 0, KEY, 0).op(STX_W, FP, 1, KEY, 0);
    a.map(1, watched).stack(2, i32::from(KEY)).call(MAP_LOOKUP).exit_if(0, true, 0);
    a.op(STX_W, FP, 7, KEY, 0);
}

/// `sys_enter(regs, id)`: a watched thread enters a system call; kept by its thread id, with
/// its first two arguments, and for `clock_nanosleep` the time it asks (read from the
/// application's memory).
fn entered(watched: &OwnedFd, in_call: &OwnedFd) -> Vec<u64> {
    const VALUE: i16 = -8 - CALL;
    let ([arg0, arg1, arg2], size) = ARGS;
    let mut a = Asm::default();
    a.mov(6, 1);
    current_watched(&mut a, watched);
    for off in (0..CALL).step_by(8) {
        a.op(ST_DW, FP, 0, VALUE + off, 0);
    }
    a.op(LDX_DW, 1, 6, 8, 0).add_k(1, 1).op(STX_W, FP, 1, VALUE, 0);
    a.op(LDX_DW, 8, 6, 0, 0);
    a.read_kernel_n(i32::from(VALUE + 4), 4, 8, arg1);
    a.read_kernel_n(i32::from(VALUE + 8), size, 8, arg0);
    a.op(LDX_DW, 1, 6, 8, 0);
    let other = a.jump(JNE_K, 1, 0, CLOCK_NANOSLEEP);
    a.read_kernel_n(i32::from(VALUE + 16), size, 8, arg2);
    a.op(LDX_DW, 3, FP, VALUE + 16, 0).stack(1, i32::from(VALUE + 16)).mov_k(2, 16).call(PROBE_READ_USER);
    a.land(other);
    a.map(1, in_call).stack(2, i32::from(KEY)).stack(3, i32::from(VALUE)).mov_k(4, 0).call(MAP_UPDATE);
    a.finish()
}

/// `sys_exit(regs, ret)`: a watched thread is out of its system call.
fn left(watched: &OwnedFd, in_call: &OwnedFd) -> Vec<u64> {
    let mut a = Asm::default();
    current_watched(&mut a, watched);
    a.map(1, in_call).stack(2, i32::from(KEY)).call(MAP_DELETE);
    a.finish()
}

/// `sched_migrate_task(p, dest_cpu)`: a watched thread moved.
fn migrated(task: Task, watched: &OwnedFd, records: &Records) -> Vec<u64> {
    let mut a = Asm::default();
    a.mov(6, 1).op(LDX_DW, 8, 6, 0, 0);
    watched_task(&mut a, task, 8, watched, None);
    stamp(&mut a, MIGRATE, task, 8);
    a.op(LDX_DW, 1, 6, 8, 0).op(STX_W, FP, 1, AT + 24, 0).op(ST_DW, FP, 0, AT + 32, 1);
    records.emit(&mut a, AT);
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::calls::Slept;
    use std::time::Duration;

    /// The programs as the kernel runs them: a watched process's thread that sleeps and wakes
    /// has its wake-ups timed to its switches in, and its sleeps known by the call it slept in;
    /// another process's do not come.
    #[rtbench_testkit::needs(root, btf, native)]
    #[test]
    fn a_watched_thread_s_wake_ups_are_timed_and_another_process_s_are_not() {
        let me = std::process::id();
        let mut programs = crate::sys::attached(|| Programs::attach(&[me]));
        let sleeper = std::thread::spawn(|| {
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(1));
            }
            crate::sys::gettid() as u32
        });
        let mut child = std::process::Command::new("sleep").arg("0.02").spawn().expect("sleep starts");
        let tid = sleeper.join().unwrap();
        let theirs = child.id();
        child.wait().unwrap();
        let followed = Mutex::new(Followed::default());
        programs.drain(&followed).unwrap();
        let f = lock(&followed);
        let a = f.threads.get(&tid).unwrap_or_else(|| panic!("the sleeper {tid}: {:?}", f.threads.keys()));
        assert!(a.latencies.count >= 20, "each of its 20 wake-ups timed: {a:?}");
        assert!(a.switches_in >= 20 && a.runtime_ns > 0, "{a:?}");
        assert!(a.prio.is_some_and(|p| p >= 100), "an ordinary thread's priority: {a:?}");
        // Each sleep judged by the call it slept in: std's sleep is a relative nanosleep.
        let relative = a.sleeps.get(&(Slept::Relative, None)).copied().unwrap_or(0);
        assert!(relative >= 20, "its sleeps, judged relative: {:?}", a.sleeps);
        assert!(!f.threads.contains_key(&theirs), "the child's threads are not followed");
        assert!(f.threads.contains_key(&(crate::sys::gettid() as u32)), "this thread's own switches are");
        assert_eq!(f.lost_events, 0);
    }
}
