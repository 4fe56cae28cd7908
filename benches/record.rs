//! Cost of recording one sample on the measuring thread's hot path.
//!
//! - `recorder_record`: `Recorder::record` (HDR histogram + exact moments + envelope + swap check),
//!   as a probe calls it, with the collector alive but idle.
//! - `stats_record`: `Stats::record` alone (moments + histogram).
//!
//! Samples advance 1000 ns apart (a 1 kHz probe, so the envelope rolls every 10⁶ samples) and
//! their latencies spread log-uniformly over 1 µs – 1 ms. Latencies come from a table filled
//! beforehand by xorshift, so the generator costs nothing in the timed loop. One iteration records
//! a block of [`BLOCK`] samples; criterion prints the time per block and the throughput, so
//! ns/sample = block time / BLOCK. Goal: ≤ 20 ns per sample.
//!
//! Run: `cargo bench --bench record` (about 10 s once built).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rtbench::recorder::{pair, Raw};
use rtbench::stats::Stats;

/// Samples recorded per criterion iteration.
const BLOCK: u64 = 1000;
/// Distinct latencies cycled through (a power of two).
const TABLE: usize = 1 << 16;
/// Time between samples, ns.
const STEP_NS: u64 = 1000;

/// `TABLE` latencies, log-uniform in 1 µs … 1 ms, from a fixed-seed xorshift64.
fn latencies() -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..TABLE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A width of 2^10 … 2^20 ns picked by the low bits, a value in it by the high bits.
            let bits = 10 + (x % 11) as u32;
            (1_000 + ((x >> 32) & ((1u64 << bits) - 1))).min(1_000_000)
        })
        .collect()
}

fn bench_record(c: &mut Criterion) {
    let lat = latencies();
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(BLOCK));

    group.bench_function("recorder_record", |b| {
        // Keep the collector alive, as the runner does, so the swap check sees an empty channel.
        let (mut rec, _collector) = pair(1_000_000_000, Raw::First(0));
        let (mut t, mut i) = (0u64, 0usize);
        b.iter(|| {
            for _ in 0..BLOCK {
                rec.record(black_box(t), black_box(lat[i]));
                t += STEP_NS;
                i = (i + 1) & (TABLE - 1);
            }
        });
        black_box(rec.finish());
    });

    group.bench_function("stats_record", |b| {
        let mut stats = Stats::default();
        let mut i = 0usize;
        b.iter(|| {
            for _ in 0..BLOCK {
                stats.record(black_box(lat[i]));
                i = (i + 1) & (TABLE - 1);
            }
        });
        black_box(&stats);
    });

    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = bench_record
}
criterion_main!(benches);
