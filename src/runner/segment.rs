//! Windows: a long run stored as a chain of runs ("segments"), one per window, each with its
//! own histogram and envelope, so `runs`, `show`, `report` and `compare` read a monitor's
//! history like any other runs. The measuring threads never stop at a window's end: the runner
//! closes the segment at a checkpoint and the next samples count towards a new one.

use std::time::Duration;

use anyhow::Result;

use super::sink::Sink;
use crate::config::ThreadPlan;
use crate::model::{LoadRecord, Metric, RunKind, RunParams, RunStatus, SystemSnapshot, ThreadResult};
use crate::store::{NewRun, Store};

/// What a run adds to the plain driver: windows, their retention, and sinks of the caller's
/// (a metrics endpoint, an interval log). The default is a plain run.
#[derive(Default)]
pub struct Extras {
    /// Close the stored run and begin the next one this often.
    pub window: Option<Duration>,
    /// Delete the segments of the same label and probe that ended longer ago than this.
    pub keep: Option<Duration>,
    pub sinks: Vec<Box<dyn Sink + Send>>,
}

/// A stored run's header, owned, to begin each segment with the same one.
pub struct Header {
    pub label: String,
    pub probe: &'static str,
    pub kind: RunKind,
    pub metric: Metric,
    pub params: RunParams,
    pub load: LoadRecord,
    pub command_line: String,
    pub rt_priority: bool,
    pub warnings: Vec<String>,
    pub system: SystemSnapshot,
    pub envelope_ns: u64,
}

impl Header {
    pub fn new_run(&self) -> NewRun<'_> {
        NewRun {
            label: &self.label,
            probe: self.probe,
            kind: self.kind,
            metric: self.metric,
            params: &self.params,
            load: &self.load,
            command_line: &self.command_line,
            rt_priority: self.rt_priority,
            warnings: &self.warnings,
            system: &self.system,
            envelope_ns: self.envelope_ns,
        }
    }
}

/// How the store sink ends one segment and begins the next.
pub struct Segments {
    pub header: Header,
    pub keep: Option<Duration>,
    /// The measuring threads, to line each window's envelope up with its CPUs' steal time.
    pub threads: Vec<ThreadPlan>,
    /// Whether the CPUs' activity is recorded (not for synthetic samples).
    pub watched: bool,
}

impl Segments {
    /// Ends segment `id` (its last checkpoint is already written) with what the hypervisor took
    /// from it, begins the next, and applies the retention. Returns the new segment's id.
    pub fn roll(&self, store: &Store, id: i64) -> Result<i64> {
        let mut warnings = self.header.warnings.clone();
        if self.watched {
            match super::steal(store, id, &self.threads) {
                Ok(found) => warnings.extend(found.iter().map(|f| f.warning())),
                Err(e) => warnings.push(format!("steal time could not be lined up with the latencies: {e:#}")),
            }
        }
        store.finish(id, RunStatus::Complete, &warnings)?;
        let next = store.begin(&self.header.new_run())?;
        if let Some(keep) = self.keep {
            let gone = store.delete_ended_before(&self.header.label, self.header.probe, keep)?;
            if gone > 0 {
                eprintln!("rtbench: retention: deleted {gone} segment(s) older than {} s", keep.as_secs());
            }
        }
        Ok(next)
    }
}

/// The results of a window that has just closed, for sinks that keep history of their own.
pub struct Closed<'a> {
    pub threads: &'a [ThreadResult],
    /// Whether another window follows (false at the end of the run).
    pub more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuInterval, EnvPoint};

    fn segments(watched: bool) -> Segments {
        Segments {
            header: Header {
                label: "mon".into(),
                probe: "timer",
                kind: RunKind::MonitorWindow,
                metric: Metric::default(),
                params: RunParams::Unknown(serde_json::json!({})),
                load: LoadRecord::idle(),
                command_line: "rtbench monitor".into(),
                rt_priority: true,
                warnings: vec!["a warning of the whole monitor".into()],
                system: SystemSnapshot::default(),
                envelope_ns: 1_000_000_000,
            },
            keep: None,
            threads: vec![ThreadPlan { index: 0, cpu: Some(1) }],
            watched,
        }
    }

    /// A window whose second interval's 30 ms wake-up came while the hypervisor took 40 ms of
    /// CPU 1; returns the closed window's warnings and the next window's.
    fn roll_a_stolen_window(watched: bool) -> (Vec<String>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let segments = segments(watched);
        let id = store.begin(&segments.header.new_run()).unwrap();
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
        store.checkpoint(id, &[], &envelope, &[], &[stolen]).unwrap();
        let next = segments.roll(&store, id).unwrap();
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
