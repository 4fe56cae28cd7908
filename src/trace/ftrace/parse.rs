//! Lines of an ftrace buffer as text (the `trace` file):
//!
//! ```text
//!             bash-30760   [001] d.h.. 19402.068050: hrtimer_expire_entry: hrtimer=… function=…
//! ```
//!
//! The task before the CPU number is the one current when the event fired.

/// One event, borrowing from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    pub comm: &'a str,
    pub pid: i32,
    pub cpu: u32,
    /// CLOCK_MONOTONIC ns (the instance runs on the `mono` clock), microsecond resolution.
    pub ts_ns: u64,
    pub name: &'a str,
    pub detail: &'a str,
}

/// The event on one line, or `None` for comments and lines of another shape.
pub fn line(l: &str) -> Option<Event<'_>> {
    if l.starts_with('#') {
        return None;
    }
    // "comm-pid" may hold spaces and dashes: the CPU field "[NNN]" is the anchor.
    let open = find_cpu_field(l)?;
    let head = l[..open].trim();
    let (comm, pid) = head.rsplit_once('-')?;
    let rest = &l[open + 1..];
    let close = rest.find(']')?;
    let cpu = rest[..close].parse().ok()?;
    let mut fields = rest[close + 1..].trim_start().splitn(2, ' ');
    let _flags = fields.next()?;
    let rest = fields.next()?.trim_start();
    let (ts, rest) = rest.split_once(": ")?;
    let (name, detail) = rest.split_once(": ").unwrap_or((rest.trim_end_matches(':'), ""));
    Some(Event { comm: comm.trim(), pid: pid.parse().ok()?, cpu, ts_ns: timestamp(ts)?, name, detail })
}

/// Where "[NNN]" (digits only) begins.
fn find_cpu_field(l: &str) -> Option<usize> {
    let bytes = l.as_bytes();
    let mut from = 0;
    while let Some(i) = l[from..].find('[').map(|i| i + from) {
        let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && bytes.get(i + 1 + digits) == Some(&b']') {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// "19402.068050" → ns.
fn timestamp(s: &str) -> Option<u64> {
    let (secs, frac) = s.trim().split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    let digits = frac.len().min(9);
    let frac: u64 = frac[..digits].parse().ok()?;
    Some(secs * 1_000_000_000 + frac * 10u64.pow(9 - digits as u32))
}

pub use crate::model::event_field as field;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_with_odd_task_names_and_without_detail() {
        let e = line("            bash-30760   [001] d.h.. 19402.068050: hrtimer_expire_entry: hrtimer=00000000238e10a7 function=tick_nohz_handler now=19402068032354").unwrap();
        assert_eq!(
            (e.comm, e.pid, e.cpu, e.ts_ns, e.name),
            ("bash", 30760, 1, 19_402_068_050_000, "hrtimer_expire_entry")
        );
        assert_eq!(field(e.detail, "function"), Some("tick_nohz_handler"));
        let e = line("  kworker/u4:1-ev-117     [000] ..... 12.000001: workqueue_execute_start: work struct 0000 function=vmstat_update").unwrap();
        assert_eq!((e.comm, e.pid, e.cpu), ("kworker/u4:1-ev", 117, 0));
        let e = line("   my [odd] task-9  [003] ...1. 5.5: tracing_mark_write: rtbench breach").unwrap();
        assert_eq!((e.comm, e.pid, e.ts_ns, e.detail), ("my [odd] task", 9, 5_500_000_000, "rtbench breach"));
        let e = line("          <idle>-0       [001] d.h1. 19402.075045: irq_handler_entry: irq=36 name=virtio1-req.0")
            .unwrap();
        assert_eq!(
            (e.comm, e.pid, field(e.detail, "irq"), field(e.detail, "name")),
            ("<idle>", 0, Some("36"), Some("virtio1-req.0"))
        );
        let e = line("bash-1 [001] .Ns.. 1.000002: softirq_entry: vec=7 [action=SCHED]").unwrap();
        assert_eq!(field(e.detail, "action"), Some("SCHED"));
        assert_eq!(line("# tracer: nop"), None);
        assert_eq!(line("CPU:1 [LOST 20 EVENTS]"), None);
    }

    #[test]
    fn a_key_is_matched_as_a_whole_word() {
        let d = "prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=0";
        assert_eq!(field(d, "pid"), None, "prev_pid is not pid");
        assert_eq!(field(d, "next_pid"), Some("2"));
        assert_eq!(field("comm=x pid=15 prio=120 target_cpu=001", "pid"), Some("15"));
    }
}
