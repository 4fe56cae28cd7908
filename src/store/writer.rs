//! The one writer of stored runs. A run is begun with its head, checkpointed (each checkpoint
//! one transaction: the store holds every checkpoint whole or not at all), rolled into the next
//! run of the same head (a monitor's windows), and finished. The runner, sysbench, import and
//! the monitor's windows all write through it; what a checkpoint could not write is kept and
//! written by the next one.

use std::time::Duration;

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::resume::{merged, Resumed};
use super::{RawBatch, Store};
use crate::model::{
    Breach, ClassInterval, CpuInterval, EnvPoint, LoadRecord, MeasuredParams, Metric, ProbeParams, RunKind, RunParams,
    RunStatus, SplitRecord, SystemSnapshot, ThreadRan, ThreadResult, EMULATED_WARNING,
};

/// Raw samples per thread kept in the store: a run this short is drawn sample by sample.
pub const RAW_IN_STORE: u64 = 2_000;

/// What a run is stored with when it begins (and each window after it).
#[derive(Clone, Debug)]
pub struct RunHead {
    pub label: String,
    pub probe: String,
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

#[cfg(test)]
impl RunHead {
    /// A run of `probe`, idle, with no parameters, snapshot or warnings: tests set what they
    /// need on top (`RunHead { warnings, ..RunHead::for_test("timer") }`).
    pub fn for_test(probe: &str) -> RunHead {
        RunHead {
            label: "l".into(),
            probe: probe.into(),
            kind: RunKind::Probe,
            metric: Metric::default(),
            params: RunParams::Unknown(serde_json::json!({})),
            load: LoadRecord::idle(),
            command_line: format!("rtbench {probe}"),
            rt_priority: true,
            warnings: Vec::new(),
            system: SystemSnapshot::default(),
            envelope_ns: 1_000_000_000,
        }
    }
}

/// What a checkpoint brings: cumulative results, and what is new since the last one.
pub struct Checkpoint<'a> {
    /// Cumulative per-thread results.
    pub threads: &'a [ThreadResult],
    /// Envelope intervals completed since the last checkpoint.
    pub envelope: &'a [(u32, EnvPoint)],
    /// What happened on the measured CPUs in intervals read since the last checkpoint.
    pub activity: &'a [CpuInterval],
    /// What the instruments riding along found.
    pub found: Found<'a>,
}

/// What the instruments riding along a run found by a checkpoint.
#[derive(Clone, Copy, Default)]
pub struct Found<'a> {
    /// Breaches traced since the last checkpoint.
    pub breaches: &'a [Breach],
    /// `noise --classify`: gaps classified since the last checkpoint, per class and interval.
    pub noise: &'a [ClassInterval],
    /// Each instrument's record as it stands (the classification's, what it has come to since
    /// the run began): the run's params hold them from the first checkpoint on, so a killed run
    /// keeps them, and the metrics read them as they grow.
    pub records: &'a [(&'static str, Value)],
}

impl Found<'_> {
    /// `name`'s record at this checkpoint, read as a `T`.
    pub fn record<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        let (_, v) = self.records.iter().find(|(n, _)| *n == name)?;
        T::deserialize(v).ok()
    }
}

impl<'a> Checkpoint<'a> {
    /// A checkpoint of the threads' results and nothing new.
    pub fn only(threads: &'a [ThreadResult]) -> Checkpoint<'a> {
        Checkpoint { threads, envelope: &[], activity: &[], found: Found::default() }
    }
}

/// `warnings`, and the emulation warning first when the run is made on an emulated CPU: every
/// run made in a guest under TCG carries it, whatever wrote the run.
pub(super) fn with_emulation(system: &SystemSnapshot, warnings: &[String]) -> Vec<String> {
    let emulated = system.vm.as_ref().is_some_and(|vm| vm.emulated());
    let missing = emulated && !warnings.iter().any(|w| w == EMULATED_WARNING);
    missing.then(|| EMULATED_WARNING.to_string()).into_iter().chain(warnings.iter().cloned()).collect()
}

/// A stored run being written.
pub struct RunWriter<'s> {
    store: &'s mut Store,
    id: i64,
    head: RunHead,
    /// Written or not, by thread.
    raw: Vec<KeptRaw>,
    /// Not yet written (a checkpoint failed).
    envelope: Vec<(u32, EnvPoint)>,
    activity: Vec<CpuInterval>,
    breaches: Vec<Breach>,
    noise: Vec<ClassInterval>,
    /// The envelope index the current run counts from: a window's intervals are stored from its
    /// own start, as a run's are. `None` until the first interval after a roll.
    base: Option<u64>,
    /// A run continued by `rtbench resume`: what it held, and where the new part goes.
    resumed: Option<Resumed>,
}

/// One thread's raw samples for the store.
struct KeptRaw {
    thread: u32,
    /// Kept so far, written or not.
    kept: u64,
    /// Not yet written.
    pending: Vec<(u64, u64)>,
    /// `--split`: the IRQ latencies of the samples kept, in step with them.
    irq_kept: u64,
    irq: Vec<Option<u64>>,
}

impl<'s> RunWriter<'s> {
    /// Begins a run of `head`, in status `running`.
    pub fn begin(store: &'s mut Store, mut head: RunHead) -> Result<RunWriter<'s>> {
        head.warnings = with_emulation(&head.system, &head.warnings);
        let id = store.begin(&head)?;
        let (raw, envelope, activity, breaches) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        Ok(RunWriter {
            store,
            id,
            head,
            raw,
            envelope,
            activity,
            breaches,
            noise: Vec::new(),
            base: Some(0),
            resumed: None,
        })
    }

    /// Continues run `id`, interrupted or aborted, with `head` (the same parameters, asked
    /// again): the gap since its last checkpoint is recorded, and each checkpoint stores the
    /// run's results with the new samples added, its new samples and intervals after the
    /// stored ones on the same time axis.
    pub fn resume(store: &'s mut Store, id: i64, mut head: RunHead) -> Result<RunWriter<'s>> {
        head.warnings = with_emulation(&head.system, &head.warnings);
        let resumed = store.reopen(id, &head)?;
        let raw = resumed
            .kept
            .iter()
            .map(|&(thread, n)| KeptRaw { thread, kept: n, pending: Vec::new(), irq_kept: n, irq: Vec::new() })
            .collect();
        let (envelope, activity, breaches) = (Vec::new(), Vec::new(), Vec::new());
        let resumed = Some(resumed);
        Ok(RunWriter { store, id, head, raw, envelope, activity, breaches, noise: Vec::new(), base: Some(0), resumed })
    }

    /// A run written whole at once (a sysbench operation, an import): begun, its results
    /// checkpointed, finished complete with `warnings`. Returns its id.
    pub fn whole(store: &'s mut Store, head: RunHead, threads: &[ThreadResult]) -> Result<i64> {
        let warnings = with_emulation(&head.system, &head.warnings);
        let mut w = RunWriter::begin(store, head)?;
        w.checkpoint(&Checkpoint::only(threads))?;
        w.finish(RunStatus::Complete, &warnings)
    }

    /// The run being written.
    pub fn id(&self) -> i64 {
        self.id
    }

    pub fn head(&self) -> &RunHead {
        &self.head
    }

    /// How much later than their time offsets the samples to come lie on the run's time axis:
    /// a resumed run's new part comes after its gap.
    pub fn shift_ns(&self) -> u64 {
        self.resumed.as_ref().map_or(0, |r| r.shift_ns)
    }

    /// The store, to read what the run holds so far.
    pub fn store(&self) -> &Store {
        self.store
    }

    /// How long each write waits for another writer's lock.
    pub fn set_lock_wait(&self, wait: Duration) {
        self.store.set_busy_timeout(wait);
    }

    /// Keeps the first [`RAW_IN_STORE`] raw samples of each thread for the next checkpoint.
    pub fn keep_raw(&mut self, thread: u32, chunk: &[(u64, u64)]) {
        let shift = self.shift_ns();
        let slot = self.slot(thread);
        let take = (RAW_IN_STORE.saturating_sub(slot.kept) as usize).min(chunk.len());
        slot.pending.extend(chunk[..take].iter().map(|&(t, latency)| (t + shift, latency)));
        slot.kept += take as u64;
    }

    /// Keeps the IRQ latencies of the raw samples kept (`--split`), given in their order.
    pub fn keep_irq(&mut self, thread: u32, irq: &[Option<u64>]) {
        let slot = self.slot(thread);
        let take = (RAW_IN_STORE.saturating_sub(slot.irq_kept) as usize).min(irq.len());
        slot.irq.extend_from_slice(&irq[..take]);
        slot.irq_kept += take as u64;
    }

    fn slot(&mut self, thread: u32) -> &mut KeptRaw {
        match self.raw.iter().position(|r| r.thread == thread) {
            Some(i) => &mut self.raw[i],
            None => {
                self.raw.push(KeptRaw { thread, kept: 0, pending: Vec::new(), irq_kept: 0, irq: Vec::new() });
                self.raw.last_mut().expect("just pushed")
            }
        }
    }

    /// Writes `cp` with whatever earlier checkpoints could not write, in one transaction (the
    /// breaches in one of their own). On failure everything is kept for the next one.
    pub fn checkpoint(&mut self, cp: &Checkpoint) -> Result<()> {
        let (envelope, activity) = (cp.envelope.iter().map(|(_, p)| p.index), cp.activity.iter().map(|a| a.index));
        let first = envelope.chain(activity).chain(cp.found.noise.iter().map(|c| c.index)).min();
        if let Some(base) = self.base.or(first) {
            self.base = Some(base);
            let shift = self.resumed.as_ref().map_or(0, |r| r.shift_index);
            let from_base = |index: u64| index.saturating_sub(base) + shift;
            self.envelope.extend(cp.envelope.iter().map(|(t, p)| (*t, EnvPoint { index: from_base(p.index), ..*p })));
            self.activity.extend(cp.activity.iter().map(|a| CpuInterval { index: from_base(a.index), ..*a }));
            self.noise.extend(cp.found.noise.iter().map(|c| ClassInterval { index: from_base(c.index), ..*c }));
        }
        self.breaches.extend_from_slice(cp.found.breaches);
        if !self.breaches.is_empty() {
            self.store.add_breaches(self.id, &self.breaches)?;
            self.breaches.clear();
        }
        let raw: Vec<RawBatch> = self
            .raw
            .iter()
            .map(|r| RawBatch {
                thread: r.thread,
                first_seq: r.kept - r.pending.len() as u64,
                samples: &r.pending,
                irq: &r.irq,
            })
            .collect();
        let threads = match &self.resumed {
            Some(r) => &merged(&r.prior, cp.threads),
            None => cp.threads,
        };
        self.store.checkpoint(self.id, threads, &self.envelope, &raw, &self.activity, &self.noise)?;
        for r in &mut self.raw {
            r.pending.clear();
            r.irq.clear();
        }
        self.envelope.clear();
        self.activity.clear();
        self.noise.clear();
        Ok(())
    }

    /// Ends this run complete with the head's warnings and `more` (its last checkpoint is
    /// already written), begins the next of the same head, and deletes the windows of the same
    /// label and probe that ended longer than `keep` ago. Returns the new run's id.
    pub fn roll(&mut self, more: &[String], keep: Option<Duration>) -> Result<i64> {
        let warnings: Vec<String> = self.head.warnings.iter().chain(more).cloned().collect();
        self.store.finish(self.id, RunStatus::Complete, &warnings)?;
        self.id = self.store.begin(&self.head)?;
        self.base = None;
        if let Some(keep) = keep {
            let gone = self.store.delete_ended_before(&self.head.label, &self.head.probe, keep)?;
            if gone > 0 {
                eprintln!("rtbench: retention: deleted {gone} segment(s) older than {} s", keep.as_secs());
            }
        }
        Ok(self.id)
    }

    /// Replaces what is stored about the load (what it did, once it stopped).
    pub fn set_load(&self, load: &LoadRecord) -> Result<()> {
        self.store.set_load(self.id, load)
    }

    /// Records how the threads ran in this run's parameters and in those of the runs the head
    /// begins next (a monitor's windows), once, when the threads have said it.
    pub fn note_ran(&mut self, ran: &[ThreadRan]) -> Result<()> {
        let RunParams::Measured(p) = &mut self.head.params else { return Ok(()) };
        if !p.ran.is_empty() || ran.is_empty() {
            return Ok(());
        }
        p.ran = ran.to_vec();
        self.store.set_params(self.id, &self.head.params)
    }

    /// Stores what the instruments of a checkpoint have recorded since the run began in the
    /// run's parameters, so a killed run keeps it.
    pub fn set_records(&self, cp: &Checkpoint) -> Result<()> {
        for (name, record) in cp.found.records {
            self.store.set_record(self.id, name, record)?;
        }
        Ok(())
    }

    /// Replaces the stored parameters (with what was found while measuring). A resumed run
    /// keeps what it was asked: its duration, loop count, sample log and probe's settings.
    pub fn set_params(&self, params: &RunParams) -> Result<()> {
        match (self.resumed.as_ref().and_then(|r| r.params.measured()), params) {
            (Some(asked), RunParams::Measured(now)) => {
                self.store.set_params(self.id, &RunParams::Measured(as_asked(asked, now)))
            }
            _ => self.store.set_params(self.id, params),
        }
    }

    /// Ends the run with `status` and `warnings` (a resumed run's own before them). Returns its
    /// id.
    pub fn finish(self, status: RunStatus, warnings: &[String]) -> Result<i64> {
        let mut all = self.resumed.as_ref().map(|r| r.warnings.clone()).unwrap_or_default();
        all.extend(warnings.iter().filter(|w| !all.contains(w)).cloned().collect::<Vec<_>>());
        self.store.finish(self.id, status, &with_emulation(&self.head.system, &all))?;
        Ok(self.id)
    }

    /// Marks the run failed with `reason`; what was checkpointed stays.
    pub fn fail(&self, reason: &str) -> Result<()> {
        self.store.mark_failed(self.id, reason)
    }
}

/// A resumed run's parameters: what its new part found (how its threads ran, what it traced),
/// and what the run was asked (its duration, loop count, sample log, and the probe's own
/// settings, which its new part was built from: a count it was given for the rest reads as
/// the whole's). The split's lost trace events, records read and missed expiries are the whole
/// run's: each part's added.
fn as_asked(asked: &MeasuredParams, now: &MeasuredParams) -> MeasuredParams {
    let probe = ProbeParams::as_asked(&asked.probe, &now.probe);
    let split = match (&asked.split, &now.split) {
        (Some(a), Some(n)) => Some(SplitRecord {
            lost_events: a.lost_events + n.lost_events,
            records: n.records.map(|r| r + a.records.unwrap_or(0)),
            missed: n.missed.map(|m| m + a.missed.unwrap_or(0)),
            ..n.clone()
        }),
        _ => now.split.clone(),
    };
    MeasuredParams {
        duration_s: asked.duration_s,
        loops: asked.loops,
        samples_file: asked.samples_file.clone(),
        split,
        probe,
        ..now.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TimerParams, VmPlacement};
    use serde_json::json;

    /// A timer part's parameters: asked for `duration_s`, its split having lost `lost` events (and
    /// read a hundred times as many, missed ten times).
    fn part(duration_s: f64, lost: u64) -> MeasuredParams {
        let json = serde_json::json!({"threads": 1, "cpus": [1], "policy": "fifo", "priority": 95, "mlock": true,
            "loops": null, "duration_s": duration_s, "envelope_interval_ns": 1_000_000_000u64,
            "samples_file": "s.rtb", "interval_us": 1000, "distance_us": 0});
        let mut p: MeasuredParams = serde_json::from_value(json).unwrap();
        let (records, missed) = (Some(100 * lost), Some(10 * lost));
        p.split = Some(SplitRecord { lost_events: lost, records, missed, ..Default::default() });
        p
    }

    /// A resumed part stores what the run was asked, and the split's lost events of every part.
    #[test]
    fn a_resumed_run_keeps_what_it_was_asked_and_counts_every_part_s_lost_events() {
        let whole = as_asked(&part(60.0, 3), &MeasuredParams { samples_file: None, ..part(20.0, 4) });
        assert_eq!((whole.duration_s, whole.samples_file.as_deref()), (Some(60.0), Some("s.rtb")));
        let counts = whole.split.as_ref().map(|s| (s.lost_events, s.records, s.missed));
        assert_eq!(counts, Some((7, Some(700), Some(70))), "both parts'");
        assert!(matches!(whole.probe, ProbeParams::Timer(TimerParams { interval_us: 1000, .. })));
    }

    fn head(accelerator: Option<&str>) -> RunHead {
        let vm =
            accelerator.map(|a| VmPlacement { hypervisor: "qemu".into(), accelerator: a.into(), ..Default::default() });
        RunHead {
            label: "guest".into(),
            warnings: vec!["its own".into()],
            system: SystemSnapshot { vm, ..SystemSnapshot::default() },
            ..RunHead::for_test("timer")
        }
    }

    #[test]
    fn every_run_made_on_an_emulated_cpu_carries_the_warning_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let whole = RunWriter::whole(&mut store, head(Some("tcg")), &[]).unwrap();
        let w = RunWriter::begin(&mut store, head(Some("tcg"))).unwrap();
        let running = w.id();
        assert_eq!(w.store().header(running).unwrap().warnings, [EMULATED_WARNING, "its own"], "while it runs");
        let finished = w.finish(RunStatus::Complete, &["its own".into(), "found later".into()]).unwrap();
        let kvm = RunWriter::whole(&mut store, head(Some("kvm")), &[]).unwrap();
        let host = RunWriter::whole(&mut store, head(None), &[]).unwrap();
        let warnings = |id| store.header(id).unwrap().warnings;
        assert_eq!(warnings(whole), [EMULATED_WARNING, "its own"]);
        assert_eq!(warnings(finished), [EMULATED_WARNING, "its own", "found later"]);
        assert_eq!(warnings(kvm), ["its own"], "KVM runs the guest's own instructions");
        assert_eq!(warnings(host), ["its own"]);
    }

    /// The instruments' records at a checkpoint land in the run's params: the classification's
    /// where the model names it, another instrument's under `instruments`, each replaced by the
    /// next checkpoint's.
    #[test]
    fn a_checkpoint_s_records_stand_in_the_params_where_the_model_reads_them() {
        use crate::model::ClassifyRecord;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let mut p = part(10.0, 0);
        p.split = None;
        let w = RunWriter::begin(&mut store, RunHead { params: RunParams::Measured(p), ..head(None) }).unwrap();
        let classify = ClassifyRecord { budget_ns: Some(10_000), ..Default::default() };
        for seen in [1, 2] {
            let records = [("classify", serde_json::to_value(&classify).unwrap()), ("noop", json!({ "seen": seen }))];
            w.set_records(&Checkpoint {
                found: Found { records: &records, ..Found::default() },
                ..Checkpoint::only(&[])
            })
            .unwrap();
        }
        let h = w.store().header(w.id()).unwrap();
        let m = h.params.measured().unwrap();
        assert_eq!(m.classify.as_ref().and_then(|c| c.budget_ns), Some(10_000));
        assert_eq!(m.instruments.get::<Value>("noop"), Some(json!({ "seen": 2 })));
        assert!(matches!(m.probe, ProbeParams::Timer(_)), "the probe's own keys are its own: {:?}", m.probe);
    }

    /// `noise --classify`: an interval's gaps classified over several checkpoints add up in the
    /// store, and a merge brings them along.
    #[test]
    fn noise_classes_of_an_interval_add_up_across_checkpoints_and_survive_a_merge() {
        use crate::model::{ClassInterval, NoiseClass::*};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut store = Store::open(&path).unwrap();
        let mut w = RunWriter::begin(&mut store, head(None)).unwrap();
        let c = |index, class, count, ns| ClassInterval { thread: 0, index, class, count, ns };
        let cp = |noise| Checkpoint { found: Found { noise, ..Found::default() }, ..Checkpoint::only(&[]) };
        let (first, second) =
            ([c(0, Irq, 2, 100), c(1, Hardware, 1, 5_000)], [c(0, Irq, 1, 50), c(0, Thread, 1, 2_000_000)]);
        w.checkpoint(&cp(&first)).unwrap();
        w.checkpoint(&cp(&second)).unwrap();
        let id = w.finish(RunStatus::Complete, &[]).unwrap();
        let want = [c(0, Irq, 3, 150), c(0, Thread, 1, 2_000_000), c(1, Hardware, 1, 5_000)];
        assert_eq!(store.noise_classes(id).unwrap(), want);
        assert_eq!(store.run(id).unwrap().noise, want, "the run read for reports and exports has them");
        let mut other = Store::open(&dir.path().join("other.db")).unwrap();
        assert_eq!(other.merge(&path).unwrap(), (1, 0));
        assert_eq!(other.noise_classes(1).unwrap(), want);
    }
}
