//! What the hypervisor's steal time explains of one run's latencies, interval by interval
//! (`model::stolen` decides: steal at least the interval's largest latency).

use std::collections::HashMap;

use crate::model::{stolen, NoiseClass};
use crate::report::select::RunView;

/// A run's intervals set against the steal on their CPUs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Steal {
    /// The largest latency of any interval.
    pub max_ns: u64,
    /// The largest latency of the intervals steal does not explain; `None` when it explains all.
    pub outside_ns: Option<u64>,
    /// Intervals whose largest latency is above the threshold asked about, and how many of
    /// them steal explains.
    pub over: u64,
    pub over_explained: u64,
}

impl Steal {
    /// True when the run's largest latency is one the hypervisor explains.
    pub fn explains_max(&self) -> bool {
        self.outside_ns.is_none_or(|o| o < self.max_ns)
    }
}

/// The run's intervals against its steal, counting those above `over_ns`; `None` when the
/// hypervisor took nothing from a measured CPU (or the run has no intervals: an import).
pub fn of(r: &RunView, over_ns: u64) -> Option<Steal> {
    let mut by_interval: HashMap<(u32, u64), u64> = HashMap::new();
    for a in r.activity.iter().filter(|a| a.steal_ns > 0) {
        *by_interval.entry((a.cpu, a.index)).or_default() += a.steal_ns;
    }
    if by_interval.is_empty() || r.envelope.is_empty() {
        return None;
    }
    let cpu_of = |thread: u32| r.data.threads.iter().find(|t| t.thread == thread).and_then(|t| t.cpu);
    let mut s = Steal::default();
    for (thread, points) in &r.envelope {
        let cpu = cpu_of(*thread);
        for p in points.iter().filter(|p| p.count > 0) {
            let steal = cpu.and_then(|c| by_interval.get(&(c, p.index)).copied()).unwrap_or(0);
            let explained = stolen(p, steal);
            s.max_ns = s.max_ns.max(p.max);
            if !explained {
                s.outside_ns = Some(s.outside_ns.unwrap_or(0).max(p.max));
            }
            if p.max > over_ns {
                s.over += 1;
                s.over_explained += u64::from(explained);
            }
        }
    }
    Some(s)
}

/// The caveat of a run whose largest latency the hypervisor explains, or nothing.
pub fn caveat(r: &RunView) -> Option<String> {
    let s = of(r, u64::MAX).filter(Steal::explains_max)?;
    let outside = match s.outside_ns {
        Some(o) => format!("outside the intervals steal explains, its largest is {} µs", super::us(o as f64)),
        None => "steal explains every interval".into(),
    };
    Some(format!(
        "{} {}: the max {} µs fell in an interval the hypervisor took the CPU away (steal); {outside}",
        r.label(),
        super::cell(r),
        super::us(s.max_ns as f64)
    ))
}

/// What the noise classification (`noise --classify`) says of the runs over the budget: how
/// many of their gaps over it fell in time the kernel did not see, and the largest the kernel
/// is responsible for. `None` when none of them was classified.
pub fn unseen(over: &[&RunView]) -> Option<(String, u64)> {
    let classified = over
        .iter()
        .filter_map(|r| r.data.header.params.measured()?.classify.as_ref())
        .filter(|c| c.skipped.is_none() && c.budget_ns.is_some());
    let (mut n, mut k, mut kernel_max, mut runs) = (0, 0, 0, 0);
    for c in classified {
        runs += 1;
        n += NoiseClass::ALL.iter().map(|class| c.class(*class).3).sum::<u64>();
        k += c.class(NoiseClass::Hardware).3;
        let kernel = [NoiseClass::Irq, NoiseClass::Softirq, NoiseClass::Thread].map(|class| c.class(class).2);
        kernel_max = kernel_max.max(kernel.into_iter().max().unwrap_or(0));
    }
    (runs > 0).then(|| {
        let sentence = format!(
            "in the {runs} classified noise run(s), {k} of the {n} gaps over budget fell in time the kernel did not \
             see (hypervisor, SMI or hardware); the largest the kernel is responsible for is {} µs",
            super::us(kernel_max as f64)
        );
        (sentence, kernel_max)
    })
}
