//! The instruments of one run, as the runner drives them: armed in the registry's order, asked
//! in that order at every step, and put back in reverse when the run is over.

use anyhow::Result;

use super::{Arming, Ending, Extra, Following, Instrument, Planned, Resolved, Service, ThreadAsk};
use crate::model::{Breach, MeasuredParams, ThreadResult};

/// The armed instruments of a run.
#[derive(Default)]
pub struct Armed {
    list: Vec<Box<dyn Instrument>>,
}

impl Armed {
    /// Arms `planned` on `cpus`, their readers on the `collector`'s CPUs. One that cannot be
    /// armed records why in `params`; its warning is returned with the others'. Each armed one
    /// writes its record as the run begins.
    pub fn arm(
        planned: &[Planned],
        (cpus, collector): (&[usize], &[usize]),
        params: &mut MeasuredParams,
    ) -> (Armed, Vec<String>) {
        let (mut list, mut warnings) = (Vec::new(), Vec::new());
        for p in planned {
            let arming = Arming { settings: p.settings.clone(), beside: planned, cpus, collector };
            match (p.info.arm)(&arming) {
                Ok(armed) => {
                    armed.begun(params);
                    list.push(armed);
                }
                Err(why) => warnings.push((p.info.skipped)(&arming, why, params)),
            }
        }
        (Armed::of(list), warnings)
    }

    /// Instruments armed by the caller, in the order given.
    ///
    /// # Panics
    /// When more than one holds the samples: a sample can wait for one settling only.
    pub fn of(list: Vec<Box<dyn Instrument>>) -> Armed {
        assert!(list.iter().filter(|i| i.holds_samples()).count() <= 1, "two instruments hold the samples");
        Armed { list }
    }

    /// Whether no instrument rides along.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// What the measuring threads must do for them all.
    pub fn threads(&self) -> ThreadAsk {
        let asks = self.list.iter().map(|i| i.threads());
        asks.fold(ThreadAsk::default(), |all, a| ThreadAsk {
            every_sample: all.every_sample || a.every_sample,
            watch: all.watch.or(a.watch),
        })
    }

    pub fn follow(&mut self, run: &Following) {
        self.list.iter_mut().for_each(|i| i.follow(run));
    }

    /// Whether one of them holds the samples on their way to the sinks.
    pub fn hold_samples(&self) -> bool {
        self.list.iter().any(|i| i.holds_samples())
    }

    pub fn samples(&mut self, i: usize, chunk: &[(u64, u64)]) {
        self.list.iter_mut().for_each(|x| x.samples(i, chunk));
    }

    /// Settles thread `i`'s samples in every instrument; the samples the holder lets go are
    /// in `out`.
    pub fn settle(&mut self, i: usize, start_ns: u64, end: bool, out: &mut Resolved) {
        out.clear();
        self.list.iter_mut().for_each(|x| x.settle(i, start_ns, end, out));
    }

    /// The windows they took in this pass, and whether one of them asks the run to end.
    pub fn service(&mut self, run: &Service) -> (Vec<Breach>, bool) {
        let (mut windows, mut stop) = (Vec::new(), false);
        for i in &mut self.list {
            let s = i.service(run);
            windows.extend(s.window);
            stop |= s.stop;
        }
        (windows, stop)
    }

    /// What the holder of the samples adds to a window of thread `i`; false while it has not
    /// settled that sample.
    pub fn annotate(&self, i: usize, window: &mut Breach) -> bool {
        self.list.iter().filter(|x| x.holds_samples()).all(|x| x.annotate(i, window))
    }

    pub fn result(&mut self, i: usize, r: &mut ThreadResult) {
        self.list.iter_mut().for_each(|x| x.result(i, r));
    }

    pub fn checkpoint(&mut self) -> Extra {
        let mut extra = Extra::default();
        self.list.iter_mut().for_each(|i| i.checkpoint(&mut extra));
        extra
    }

    pub fn new_window(&mut self) {
        self.list.iter_mut().for_each(|i| i.new_window());
    }

    pub fn end(&mut self) {
        self.list.iter_mut().for_each(|i| i.end());
    }

    pub fn record(&self, params: &mut MeasuredParams) {
        self.list.iter().for_each(|i| i.record(params));
    }

    /// What the run should say of them, once it is over.
    pub fn warnings(&self) -> Vec<String> {
        self.list.iter().flat_map(|i| i.warnings()).collect()
    }

    /// The first of them that has a say on the time the kernel did not see (see
    /// [`Instrument::unseen`]).
    pub fn unseen(&self, end: &Ending) -> Result<Option<Option<String>>> {
        for i in &self.list {
            if let Some(said) = i.unseen(end)? {
                return Ok(Some(said));
            }
        }
        Ok(None)
    }
}

impl Drop for Armed {
    /// Put back in reverse: the first armed may have mounted what the later ones use.
    fn drop(&mut self) {
        while let Some(i) = self.list.pop() {
            drop(i);
        }
    }
}
