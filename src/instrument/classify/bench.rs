//! The classification's two costs on the collector's CPU, apart from the machine's noise, for
//! `cargo bench --bench classify`: the reader's per record (typed and taken into the
//! timeline) and the runner's per gap (classified and counted), on a made trace of one CPU
//! busy as `bench/scale.sh` makes it: the noise thread preempted every 50 µs by a FIFO task
//! its timer wakes, and the tick with its TIMER softirq every 4 ms.

use std::sync::{Arc, Mutex, OnceLock};

use super::bpf::take;
use super::flow::ClassifyFlow;
use super::record::{IrqNames, Record, RECORD};
use super::timeline::Timeline;
use crate::trace::stream::Lines;

/// The measured CPU, and the noise thread on it.
const CPU: u32 = 1;
const OURS: i32 = 500;
/// The FIFO task that preempts it, at kernel priority 0 (FIFO 99).
const HOG: i32 = 77;
const PERIOD_NS: u64 = 50_000;
const TICK_EVERY: u64 = 80;
/// The run's start on CLOCK_MONOTONIC.
const START_NS: u64 = 10_000_000_000;

/// A made trace: the BPF records as the ring buffer hands them over, and the gaps the noise
/// thread saw (offset from the start, length).
pub struct Busy {
    pub records: Vec<[u8; RECORD]>,
    pub gaps: Vec<(u64, u64)>,
}

/// One record's bytes, laid out as the programs write them.
fn record(ts: u64, kind: u32, (pid, comm): (i32, &str), next: Option<(i32, i32, &str)>, arg: u32) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    b[0..8].copy_from_slice(&ts.to_ne_bytes());
    let (next_pid, next_prio, next_comm) = next.unwrap_or((0, 0, ""));
    for (at, v) in [(8, CPU), (12, kind), (16, pid as u32), (20, arg), (24, next_pid as u32), (28, next_prio as u32)] {
        b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }
    b[32..32 + comm.len()].copy_from_slice(comm.as_bytes());
    b[48..48 + next_comm.len()].copy_from_slice(next_comm.as_bytes());
    b
}

/// `periods` of 50 µs: in each the timer's interrupt (the local timer vector, kind 6: its exit's
/// record with its entry's time), the switch to the hog and back 4 µs later; every 80th also
/// the TIMER softirq (kinds 2, 3).
pub fn busy(periods: u64) -> Busy {
    let (ours, hog) = ((OURS, "rtbench-0"), (HOG, "rtbench-1"));
    let mut records = Vec::new();
    let mut gaps = Vec::new();
    for i in 0..periods {
        let t = START_NS + (i + 1) * PERIOD_NS;
        let mut vector = record(t + 1_000, 6, ours, None, 236);
        vector[24..32].copy_from_slice(&t.to_ne_bytes());
        records.push(vector);
        let mut back = t + 1_500;
        if i % TICK_EVERY == 0 {
            records.push(record(back, 2, ours, None, 1));
            records.push(record(back + 3_000, 3, ours, None, 1));
            back += 3_500;
        }
        records.push(record(back, 4, ours, Some((HOG, 0, "rtbench-1")), 0));
        records.push(record(back + 4_000, 4, hog, Some((OURS, 9, "rtbench-0")), 0));
        gaps.push((t - 300 - START_NS, back + 4_500 - t));
    }
    Busy { records, gaps }
}

/// The reader's part: every record typed from its bytes and taken into a fresh timeline, which
/// is then caught up past the last gap.
pub fn read(b: &Busy) -> Timeline {
    let mut timeline = Timeline::new(&[CPU as usize]);
    let mut batch: Vec<Record> = b.records.iter().map(Record::from).collect();
    take(&mut batch, 0, &mut timeline, &mut IrqNames::default());
    let end = b.records.last().map_or(START_NS, |r| Record::from(r).ts);
    timeline.caught_up(end + 1_000_000_000);
    timeline
}

/// The runner's part: every gap of `b` classified in `timeline` and counted, as a run's flow
/// does; returns how many gaps went to the hog (all of them, when it works).
pub fn settle(b: &Busy, timeline: Timeline) -> u64 {
    settled(b, timeline).to(HOG)
}

/// The flow after [`settle`]'s work, its intervals 10 ms long.
fn settled(b: &Busy, timeline: Timeline) -> ClassifyFlow {
    let tid = Arc::new(OnceLock::new());
    tid.set(OURS).expect("set once");
    let read = (Arc::new(Mutex::new(timeline)), "made".to_string(), Some("ringbuf".to_string()));
    let mut flow = ClassifyFlow::new(read, vec![(0, Some(CPU), tid)], (Some(20_000), 10_000_000));
    flow.push(0, &b.gaps);
    flow.resolve(0, START_NS, false);
    flow
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NoiseClass;

    /// The made trace reads as the real one would: each gap is the hog's, none left waiting.
    #[test]
    fn every_gap_of_the_made_trace_goes_to_the_hog() {
        let b = busy(400);
        assert_eq!(b.records.len(), 400 * 3 + 5 * 2);
        assert_eq!(settle(&b, read(&b)), 400);
    }

    /// Per interval, the gaps add up to the run's: 200 periods of 50 µs in each 10 ms.
    #[test]
    fn the_gaps_per_interval_add_up() {
        let b = busy(400);
        let intervals = settled(&b, read(&b)).take_intervals();
        let by: Vec<(u64, NoiseClass, u64)> = intervals.iter().map(|c| (c.index, c.class, c.count)).collect();
        assert_eq!(by, [(0, NoiseClass::Thread, 200), (1, NoiseClass::Thread, 200)]);
    }
}
