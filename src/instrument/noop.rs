//! An instrument that changes nothing and only counts what the runner hands it, registered as
//! the real ones are: a test arms it in a real run and reads its counts back from the stored
//! run's warnings and its record, resumes the run with it, so the generic handling of
//! instruments (flags, arming, checkpoints, the stored record, resume) is shown end to end.

use super::{
    Arming, Ask, Extra, Following, Instrument, InstrumentArgs, InstrumentFlags, InstrumentInfo, Offer, Request,
    Resolved, ThreadAsk,
};
use crate::model::MeasuredParams;

/// The no-op instrument, as the registry lists it (in tests only).
pub const INFO: InstrumentInfo = InstrumentInfo {
    name: "noop",
    flag: "--noop",
    needs: Offer::Samples,
    does: "counts samples",
    lacks: "are not samples",
    root_why: None,
    flags: InstrumentFlags::with_monitor::<NoOpFlags, NoOpFlags, NoOpFlags>(),
    replay: &[],
    arm: |a| Ok(Box::new(NoOp::armed(a))),
    skipped: |_, why, _| format!("--noop: {why}"),
    resumed: |p| p.instruments.get::<NoOpRecord>(INFO.name).map(|_| Request::plain(INFO.name, Ask::Asked)),
};

/// What it keeps in the run's params: its counts so far, at every checkpoint and at the end.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct NoOpRecord {
    pub seen: usize,
    pub checkpoints: usize,
}

/// `--noop`: its flag, on every command that runs a probe and in the study, from the registry
/// alone.
#[derive(clap::Args, Debug)]
pub struct NoOpFlags {
    /// Count the samples the runner hands on (a test instrument)
    #[arg(long)]
    pub noop: bool,
}

impl InstrumentArgs for NoOpFlags {
    fn request(self) -> Option<Request> {
        self.noop.then(|| Request::plain(INFO.name, Ask::Asked))
    }
}

/// What it saw, said in its warning at the run's end.
#[derive(Default)]
struct NoOp {
    cpus: Vec<usize>,
    /// The collector's CPUs it was armed with.
    collector: Vec<usize>,
    /// Where the runner's main thread may run at its checkpoints, as the kernel says.
    main_on: Vec<usize>,
    followed: usize,
    /// Per thread, the samples it holds until the next settling.
    held: Vec<Vec<(u64, u64)>>,
    seen: usize,
    let_go: usize,
    settlings: usize,
    checkpoints: usize,
    ended: bool,
}

impl NoOp {
    fn armed(a: &Arming) -> NoOp {
        NoOp { cpus: a.cpus.to_vec(), collector: a.collector.to_vec(), ..NoOp::default() }
    }

    fn counts(&self) -> NoOpRecord {
        NoOpRecord { seen: self.seen, checkpoints: self.checkpoints }
    }
}

impl Instrument for NoOp {
    fn info(&self) -> &'static InstrumentInfo {
        &INFO
    }

    fn threads(&self) -> ThreadAsk {
        ThreadAsk { every_sample: true, watch: None }
    }

    fn follow(&mut self, run: &Following) {
        self.followed = run.threads.len();
        self.held = vec![Vec::new(); run.threads.len()];
    }

    /// It holds the samples, as the split does, so they reach the sinks only through it.
    fn holds_samples(&self) -> bool {
        true
    }

    fn samples(&mut self, i: usize, chunk: &[(u64, u64)]) {
        self.seen += chunk.len();
        self.held[i].extend_from_slice(chunk);
    }

    fn settle(&mut self, i: usize, _start_ns: u64, _end: bool, out: &mut Resolved) {
        self.settlings += 1;
        self.let_go += self.held[i].len();
        out.irq.extend(self.held[i].iter().map(|_| None));
        out.samples.append(&mut self.held[i]);
    }

    fn checkpoint(&mut self, extra: &mut Extra) {
        self.checkpoints += 1;
        self.main_on = crate::sys::affinity().unwrap_or_default();
        extra.records.push((INFO.name, serde_json::to_value(self.counts()).unwrap_or_default()));
    }

    fn record(&self, params: &mut MeasuredParams) {
        params.instruments.put(INFO.name, serde_json::to_value(self.counts()).unwrap_or_default());
    }

    fn end(&mut self) {
        self.ended = true;
    }

    fn warnings(&self) -> Vec<String> {
        vec![format!(
            "noop: cpus {:?} followed {} seen {} let_go {} settlings {} checkpoints {} ended {} collector {} main_on {}",
            self.cpus,
            self.followed,
            self.seen,
            self.let_go,
            self.settlings,
            self.checkpoints,
            self.ended,
            crate::units::format_cpu_list(&self.collector),
            crate::units::format_cpu_list(&self.main_on)
        )]
    }
}
