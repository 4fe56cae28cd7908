//! Cost of watching interference: one reading of the measured CPUs' counters (/proc/stat,
//! /proc/interrupts, /proc/schedstat), which the runner takes once per envelope interval on
//! its own thread, never on a measuring one; and one `rtbench audit`, taken when a run begins.
//!
//! Run: `cargo bench --bench interference`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let cpus: Vec<u32> = rtbench::sysinfo::online_cpus().iter().map(|c| *c as u32).collect();
    c.bench_function("cpuwatch_read_all_cpus", |b| b.iter(|| rtbench::runner::cpuwatch::read(&cpus)));
    let all = rtbench::sysinfo::online_cpus();
    c.bench_function("audit_run", |b| b.iter(|| rtbench::audit::run(&all)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3)).sample_size(20);
    targets = bench
}
criterion_main!(benches);
