//! `rtbench sysbench`: what real time costs in throughput, measured as LMbench's summary
//! tables lay it out (processes, context switching, local communication latency, file and VM,
//! bandwidths) — our own clean implementation of the same measurements.
//!
//! Every operation is measured the same way: a warm-up that also sizes the number of
//! iterations so one repetition lasts at least a minimum time, then at least 11 repetitions
//! whose median is the result and whose min and max are its spread.

mod ipc;
mod memfile;
mod procs;
mod spawn;

use std::io;
use std::time::{Duration, Instant};

/// The table an operation belongs to: the model's, which the stored rows and the report read.
pub use crate::model::OpGroup as Group;
use crate::model::{Better, ForkImage, Metric, Unit};

/// What one timed repetition did: its time and how many operations (or bytes) it covered.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    pub ns: u64,
    pub units: u64,
}

/// An operation set up and ready to repeat; dropping it tears down what it made.
pub trait Bench {
    /// Does the operation `n` times (or moves `n` blocks) and says how long that took.
    fn iterate(&mut self, n: u64) -> io::Result<Timed>;

    /// The process image the operation forks from, where it forks (the fork rows).
    fn image(&self) -> Option<ForkImage> {
        None
    }
}

/// One operation of the table.
pub struct Op {
    pub name: &'static str,
    pub group: Group,
    /// Latency ops store picoseconds per operation; bandwidth ops kilobytes per second.
    pub bandwidth: bool,
    pub help: &'static str,
    pub make: fn() -> io::Result<Box<dyn Bench>>,
}

impl Op {
    pub fn metric(&self) -> Metric {
        if self.bandwidth {
            Metric { unit: Unit::KilobytesPerSecond, better: Better::Bigger }
        } else {
            Metric { unit: Unit::Picoseconds, better: Better::Smaller }
        }
    }

    /// The stored value of one repetition: ps per operation, or KB/s.
    fn value(&self, t: Timed) -> u64 {
        let ns = t.ns.max(1) as u128;
        if self.bandwidth {
            (t.units as u128 * 1_000_000 / ns) as u64
        } else {
            (ns * 1000 / (t.units.max(1) as u128)) as u64
        }
    }
}

/// Every operation, in table order.
pub fn ops() -> Vec<Op> {
    let mut all = procs::ops();
    all.extend(ipc::ops());
    all.extend(memfile::ops());
    // Stable: within a group, the order each file gives.
    all.sort_by_key(|o| Group::ALL.iter().position(|g| *g == o.group));
    all
}

/// How long one repetition lasts at least, and how many there are.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    pub min_rep: Duration,
    pub reps: usize,
}

impl Method {
    pub const FULL: Method = Method { min_rep: Duration::from_millis(20), reps: 11 };
    pub const QUICK: Method = Method { min_rep: Duration::from_millis(2), reps: 11 };
}

/// One operation's result: every repetition's value, in the op's stored unit.
#[derive(Clone, Debug)]
pub struct Measured {
    pub iterations: u64,
    pub values: Vec<u64>,
    /// What the operation forked from, read once its repetitions were done.
    pub image: Option<ForkImage>,
}

impl Measured {
    pub fn median(&self) -> u64 {
        let mut v = self.values.clone();
        v.sort_unstable();
        v[v.len() / 2]
    }
    pub fn min(&self) -> u64 {
        self.values.iter().copied().min().unwrap_or(0)
    }
    pub fn max(&self) -> u64 {
        self.values.iter().copied().max().unwrap_or(0)
    }
}

/// The iterations that make one repetition last at least `min`, found while warming up. Sized
/// on the wall time of a repetition, not on what it reports: a context switch reports the ring's
/// time less its overhead, which can come out near zero and would grow `n` without end.
///
/// One iteration first, untimed: the cold one (fresh buffers' page faults, a file's first
/// read) can alone outlast the minimum, and a 16 MB copy was then sized to one iteration and
/// its repetitions ran from 1.8 to 35 GB/s.
fn size(bench: &mut dyn Bench, min: Duration) -> io::Result<u64> {
    bench.iterate(1)?;
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        bench.iterate(n)?;
        let wall = since(t);
        if wall >= min.as_nanos() as u64 || n >= 1 << 32 {
            return Ok(n);
        }
        // Aim 20 % past the minimum, at most 100× at a time (the first, cold round is slow).
        let grow = (min.as_nanos() as f64 * 1.2 / wall.max(1) as f64).clamp(2.0, 100.0);
        n = ((n as f64) * grow).ceil() as u64;
    }
}

/// The iterations that make one repetition of `op` last `min` here.
pub fn size_op(op: &Op, min: Duration) -> io::Result<u64> {
    size((op.make)()?.as_mut(), min)
}

/// Measures `op` by `method`: `iterations` per repetition when given (a fixed amount of work,
/// as `--total` needs to compare passes), else as many as fill the minimum time.
pub fn measure(op: &Op, method: Method, iterations: Option<u64>) -> io::Result<Measured> {
    let mut bench = (op.make)()?;
    let iterations = match iterations {
        Some(n) => {
            // Warmed up all the same.
            bench.iterate(n.div_ceil(10))?;
            n
        }
        None => size(bench.as_mut(), method.min_rep)?,
    };
    let mut values = Vec::with_capacity(method.reps);
    for _ in 0..method.reps.max(1) {
        values.push(op.value(bench.iterate(iterations)?));
    }
    Ok(Measured { iterations, values, image: bench.image() })
}

/// `total` less `overhead`, never below zero: an operation's time with the cost of what carries
/// it taken off (a ring's pipe traffic, a fault's remapping, a signal's sending).
fn less(total: u64, overhead: u64) -> u64 {
    total.saturating_sub(overhead)
}

/// Nanoseconds since `t`.
fn since(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// The CPU sysbench pins to unless told: the last online one.
pub fn default_cpu() -> usize {
    *crate::sysinfo::online_cpus().last().unwrap_or(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench whose every iteration takes at least a known time (longer when the machine
    /// takes the CPU away), remembering how long its last repetition took.
    struct Spinning(Duration, Duration);

    impl Bench for Spinning {
        fn iterate(&mut self, n: u64) -> io::Result<Timed> {
            let t = Instant::now();
            while t.elapsed() < self.0 * n as u32 {
                std::hint::spin_loop();
            }
            self.1 = t.elapsed();
            Ok(Timed { ns: since(t), units: n })
        }
    }

    #[test]
    fn iterations_are_sized_to_the_minimum_time_and_values_come_per_operation() {
        let mut bench = Spinning(Duration::from_micros(200), Duration::ZERO);
        let n = size(&mut bench, Duration::from_millis(5)).unwrap();
        assert!(bench.1 >= Duration::from_millis(5), "the sized repetition fills 5 ms: {:?}", bench.1);
        // A step short of 5 ms had fewer than 25 iterations of at least 200 µs, and a step at
        // most doubles one that came within 1.2×: never 50; fewer when a stall stretched a step
        // (no magnitude of this machine assumed).
        assert!((1..50).contains(&n), "a step past 5 ms grows from fewer than 25 iterations: {n}");
        let op = Op { name: "x", group: Group::Processes, bandwidth: false, help: "", make: || unreachable!() };
        assert_eq!(op.value(Timed { ns: 1_000, units: 8 }), 125_000, "125 ns per operation, in ps");
        let bw = Op { bandwidth: true, ..op };
        assert_eq!(bw.value(Timed { ns: 1_000_000_000, units: 5_000_000 }), 5_000, "5 MB in 1 s is 5000 KB/s");
        let m = Measured { iterations: 1, values: vec![5, 1, 9, 3, 7], image: None };
        assert_eq!((m.median(), m.min(), m.max()), (5, 1, 9));
    }

    /// Takes real time but reports none, as a ring whose overhead equals its time does.
    struct Cancelled;

    impl Bench for Cancelled {
        fn iterate(&mut self, n: u64) -> io::Result<Timed> {
            std::thread::sleep(Duration::from_micros(100) * n as u32);
            Ok(Timed { ns: 0, units: n })
        }
    }

    /// Its first iteration is slow (cold), every later one takes 100 µs.
    struct Cold(bool);

    impl Bench for Cold {
        fn iterate(&mut self, n: u64) -> io::Result<Timed> {
            let t = Instant::now();
            if !self.0 {
                self.0 = true;
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_micros(100) * n as u32);
            Ok(Timed { ns: since(t), units: n })
        }
    }

    #[test]
    fn sizing_is_not_fooled_by_a_cold_first_iteration() {
        let n = size(&mut Cold(false), Duration::from_millis(5)).unwrap();
        assert!(n >= 10, "5 ms of 100 µs iterations, not the one cold 20 ms iteration: {n}");
    }

    #[test]
    fn sizing_follows_wall_time_even_when_the_net_time_is_zero() {
        let n = size(&mut Cancelled, Duration::from_millis(3)).unwrap();
        assert!(n <= 100, "sized on the 100 µs each iteration takes, not on the zero it reports: {n}");
    }

    #[test]
    fn every_operation_has_a_unique_name_in_a_group() {
        let ops = ops();
        for (i, a) in ops.iter().enumerate() {
            assert!(ops[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
            assert_eq!(a.bandwidth, a.group == Group::Bandwidth, "{}", a.name);
        }
        for g in Group::ALL {
            assert!(ops.iter().any(|o| o.group == g), "{} has operations", g.name());
        }
    }
}
