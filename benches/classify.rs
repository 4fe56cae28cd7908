//! The noise classification's cost on the collector's CPU, per BPF record the reader takes in
//! and per gap the runner classifies, on a made trace of a CPU preempted every 50 µs (as
//! `bench/scale.sh`'s busy run), apart from this machine's noise: timed on the thread's own
//! CPU clock, so what other tasks take of the CPU does not count.
//!
//! - `classify_records`: 1 000 periods' records (3 a period, 2 more each 80th) typed from their
//!   bytes, sorted and taken into a timeline: ns/record = time / 3 026.
//! - `classify_gaps_after_records`: the same, then its 1 000 gaps classified and counted: ns/gap =
//!   (this − `classify_records`) / 1 000.
//!
//! Run: `cargo bench --bench classify`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rtbench::instrument::classify::bench::{busy, read, settle};
use rtbench::sys::thread_cpu_ns;

/// `f` run `n` times, timed on the thread's CPU clock.
fn cpu_time(n: u64, mut f: impl FnMut()) -> Duration {
    let t0 = thread_cpu_ns();
    for _ in 0..n {
        f();
    }
    Duration::from_nanos(thread_cpu_ns() - t0)
}

fn bench(c: &mut Criterion) {
    let b = busy(1_000);
    assert_eq!(b.records.len(), 3_026);
    c.bench_function("classify_records", |i| i.iter_custom(|n| cpu_time(n, || drop(read(&b)))));
    c.bench_function("classify_gaps_after_records", |i| {
        i.iter_custom(|n| cpu_time(n, || assert_eq!(settle(&b, read(&b)), 1_000)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5)).sample_size(30);
    targets = bench
}
criterion_main!(benches);
