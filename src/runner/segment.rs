//! Windows: a long run stored as a chain of runs ("segments"), one per window, each with its
//! own histogram and envelope, so `runs`, `show`, `report` and `compare` read a monitor's
//! history like any other runs. The measuring threads never stop at a window's end: the runner
//! closes the segment at a checkpoint and the next samples count towards a new one.

use std::time::Duration;

use super::sink::Sink;
use crate::config::ThreadPlan;
use crate::model::ThreadResult;
use crate::store::Store;

/// What a run adds to the plain driver: windows, their retention, and sinks of the caller's
/// (a metrics endpoint, an interval log). The default is a plain run.
#[derive(Default)]
pub struct Extras {
    /// Close the stored run and begin the next one this often.
    pub window: Option<Duration>,
    /// Delete the segments of the same label and probe that ended longer ago than this.
    pub keep: Option<Duration>,
    pub sinks: Vec<Box<dyn Sink + Send>>,
    /// Continue this stored run (interrupted or aborted) instead of beginning one.
    pub resume: Option<i64>,
    /// Warnings of the caller's, stored with the run's own (how a resumed part differs).
    pub notes: Vec<String>,
}

/// How the store sink ends one segment and begins the next.
pub struct Segments {
    /// Delete the segments of the same label and probe that ended longer ago than this.
    pub keep: Option<Duration>,
    /// The measuring threads, to line each window's envelope up with its CPUs' steal time.
    pub threads: Vec<ThreadPlan>,
    /// Whether the CPUs' activity is recorded (not for synthetic samples).
    pub watched: bool,
}

impl Segments {
    /// What the hypervisor took from segment `id`, for the warnings it is closed with.
    pub fn steal(&self, store: &Store, id: i64) -> Vec<String> {
        if !self.watched {
            return Vec::new();
        }
        match super::steal(store, id, &self.threads) {
            Ok(found) => found.iter().map(|f| f.warning()).collect(),
            Err(e) => vec![format!("steal time could not be lined up with the latencies: {e:#}")],
        }
    }
}

/// The results of a window that has just closed, for sinks that keep history of their own.
pub struct Closed<'a> {
    pub threads: &'a [ThreadResult],
    /// How each thread that set itself up ran (policy, priority, timer slack).
    pub ran: &'a [crate::model::ThreadRan],
    /// Whether another window follows (false at the end of the run).
    pub more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuInterval, EnvPoint, RunKind};
    use crate::runner::sink::{Checkpoint, StoreSink};
    use crate::store::{RunHead, RunWriter};

    fn head() -> RunHead {
        RunHead {
            label: "mon".into(),
            kind: RunKind::MonitorWindow,
            command_line: "rtbench monitor".into(),
            warnings: vec!["a warning of the whole monitor".into()],
            ..RunHead::for_test("timer")
        }
    }

    /// A window whose second interval's 30 ms wake-up came while the hypervisor took 40 ms of
    /// CPU 1, closed through the store's sink; returns the closed window's warnings and the
    /// next window's.
    fn roll_a_stolen_window(watched: bool) -> (Vec<String>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let segments = Segments { keep: None, threads: vec![ThreadPlan { index: 0, cpu: Some(1) }], watched };
        let mut sink = StoreSink::new(RunWriter::begin(&mut store, head()).unwrap(), Some(segments));
        let id = sink.id();
        let point = |index, max| (0, EnvPoint { index, min: 10_000, max, sum: max, count: 1 });
        let envelope = [point(0, 60_000), point(1, 30_000_000)];
        let stolen = CpuInterval {
            cpu: 1,
            index: 1,
            steal_ns: 40_000_000,
            irq_ns: 0,
            softirq_ns: 0,
            interrupts: 0,
            context_switches: None,
        };
        let cp = Checkpoint { envelope: &envelope, activity: &[stolen], ..Checkpoint::only(&[]) };
        sink.checkpoint(&cp).unwrap();
        let next = sink.window_closed(&Closed { threads: &[], ran: &[], more: true }).unwrap().expect("a next window");
        assert_eq!(sink.id(), next);
        drop(sink);
        (store.header(id).unwrap().warnings, store.header(next).unwrap().warnings)
    }

    #[test]
    fn a_window_is_closed_with_what_the_hypervisor_took_from_it() {
        let (closed, next) = roll_a_stolen_window(true);
        assert_eq!(closed[0], "a warning of the whole monitor");
        assert!(
            closed.iter().any(|w| w.contains("took 40 ms of CPU 1") && w.contains("above 60 µs")),
            "the window says the hypervisor explains its 30 ms: {closed:?}"
        );
        assert_eq!(next, ["a warning of the whole monitor"], "the next window begins with the monitor's only");
    }

    #[test]
    fn synthetic_windows_have_no_activity_to_line_up() {
        let (closed, _) = roll_a_stolen_window(false);
        assert_eq!(closed, ["a warning of the whole monitor"]);
    }
}
