//! The recorder's promises: a checkpoint moves every sample into exactly one buffer, envelope
//! points and raw samples come out whole and in order, and the vectors that carry them are
//! reused rather than reallocated on the measuring thread.

use std::time::Duration;

use super::*;

/// A latency that differs between neighbouring samples, so a lost or doubled sample shows up in
/// the sums and in the raw sequence.
fn latency(i: u64) -> u64 {
    i % 100_000 + 1
}

/// Merges a taken buffer the way the runner does, and gives it back.
fn merge_into(total: &mut Stats, env: &mut Vec<EnvPoint>, c: &mut Collector, buf: Box<Buffer>) {
    buf.add_to(total);
    env.extend_from_slice(&buf.envelope);
    c.recycle(buf);
}

/// Every raw sample drained so far.
fn drained(c: &mut Collector) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    c.drain_samples(|chunk| {
        out.extend_from_slice(chunk);
        Ok(())
    })
    .unwrap();
    out
}

/// The addresses of the empty chunks waiting in the pool. The pool is emptied and refilled in the
/// same order, so the recorder sees it unchanged.
fn pooled(rec: &Recorder, c: &Collector) -> Vec<*const (u64, u64)> {
    let (Some((_, pool_rx)), Some((_, pool_tx))) = (rec.chunks.as_ref(), c.chunks.as_ref()) else {
        return Vec::new();
    };
    let chunks: Vec<Chunk> = std::iter::from_fn(|| pool_rx.try_recv().ok()).collect();
    let addrs = chunks.iter().map(|ch| ch.as_ptr()).collect();
    for ch in chunks {
        assert!(ch.is_empty(), "a pooled chunk must come back empty");
        pool_tx.try_send(ch).unwrap();
    }
    addrs
}

#[test]
fn a_checkpoint_takes_exactly_the_samples_up_to_the_one_that_saw_the_request() {
    let (mut rec, mut c) = pair(1_000_000, Raw::First(0));
    for (t, lat) in [(0, 10), (1, 20), (2, 30)] {
        rec.record(t, lat);
    }
    c.request();
    // The thread swaps between samples only, so nothing is handed back until it records again.
    assert!(c.take(Duration::ZERO).is_none());
    rec.record(3, 5);
    let first = c.take(Duration::ZERO).expect("the sample after the request swaps the buffer");
    assert_eq!((first.stats().count, first.stats().min, first.stats().max, first.stats().sum), (4, 5, 30, 65));
    assert_eq!(first.last, 5);
    // The interval is still open: its point belongs to a later buffer.
    assert!(first.envelope.is_empty());

    // Until the taken buffer is recycled there is nothing to offer, so the thread keeps recording
    // into the buffer it has.
    c.request();
    rec.record(4, 100);
    rec.record(5, 200);
    assert!(c.take(Duration::ZERO).is_none());

    let mut total = Stats::default();
    let mut env = Vec::new();
    let first_addr: *const Buffer = &*first;
    merge_into(&mut total, &mut env, &mut c, first);
    c.request();
    rec.record(6, 7);
    let second = c.take(Duration::ZERO).expect("a recycled buffer makes the next request work");
    assert_eq!((second.stats().count, second.stats().min, second.stats().max, second.stats().sum), (3, 7, 200, 307));
    assert_eq!(second.last, 7);
    merge_into(&mut total, &mut env, &mut c, second);

    rec.record(7, 1000);
    rec.record(8, 1);
    let last = rec.finish();
    // Only two buffers circulate: the thread now writes into the first one taken, which must have
    // been emptied when it was recycled.
    assert_eq!(&*last as *const Buffer, first_addr);
    assert_eq!((last.stats().count, last.stats().min, last.stats().max, last.stats().sum), (2, 1, 1000, 1001));
    assert_eq!(last.last, 1);
    total.merge(&last.stats());
    env.extend_from_slice(&last.envelope);

    assert_eq!((total.count, total.min, total.max, total.sum), (9, 1, 1000, 65 + 307 + 1001));
    assert_eq!(env, [EnvPoint { index: 0, min: 1, max: 1000, sum: 65 + 307 + 1001, count: 9 }]);
}

#[test]
fn envelope_points_across_checkpoints_cover_every_interval_once_with_its_extremes() {
    const INTERVAL: u64 = 1000;
    // Not a divisor of the interval, so intervals hold 3 or 4 samples and start mid-step.
    const STEP: u64 = 300;
    const N: u64 = 200;
    let lat = |i: u64| (i * 7919) % 1000 + 1;
    let (mut rec, mut c) = pair(INTERVAL, Raw::First(0));
    let (mut total, mut env, mut taken) = (Stats::default(), Vec::new(), 0);
    for i in 0..N {
        rec.record(i * STEP, lat(i));
        if i % 7 == 3 {
            c.request();
        }
        if let Some(buf) = c.take(Duration::ZERO) {
            taken += 1;
            merge_into(&mut total, &mut env, &mut c, buf);
        }
    }
    let last = rec.finish();
    total.merge(&last.stats());
    env.extend_from_slice(&last.envelope);

    let mut expected: Vec<EnvPoint> = Vec::new();
    for i in 0..N {
        let index = i * STEP / INTERVAL;
        if expected.last().is_none_or(|p| p.index != index) {
            expected.push(EnvPoint::empty(index));
        }
        let p = expected.last_mut().unwrap();
        p.count += 1;
        p.sum += lat(i);
        p.min = p.min.min(lat(i));
        p.max = p.max.max(lat(i));
    }
    assert!(taken > 10, "without checkpoints mid-run no interval is split between buffers");
    assert_eq!(env, expected);
    assert_eq!(env.iter().map(|p| p.count).sum::<u64>(), N);
    assert!(env.windows(2).all(|w| w[1].index == w[0].index + 1));
    assert_eq!(total.count, N);
}

#[test]
fn an_interval_without_samples_leaves_no_envelope_point() {
    let (mut rec, _c) = pair(1000, Raw::First(0));
    // Starting past interval 0 checks the empty interval the recorder begins with, too.
    rec.record(2_500, 1);
    rec.record(5_500, 2);
    rec.record(5_600, 3);
    let last = rec.finish();
    assert_eq!(
        last.envelope,
        [
            EnvPoint { index: 2, min: 1, max: 1, sum: 1, count: 1 },
            EnvPoint { index: 5, min: 2, max: 3, sum: 5, count: 2 },
        ]
    );
}

#[test]
fn raw_first_n_hands_over_exactly_the_first_n_samples_in_order() {
    let (mut rec, mut c) = pair(1000, Raw::First(5));
    let (mut total, mut env, mut raw) = (Stats::default(), Vec::new(), Vec::new());
    for i in 0..20 {
        rec.record(i * 100, latency(i));
        // A checkpoint before the n-th sample sends a partial chunk; the rest must still follow.
        if i == 2 {
            c.request();
        }
        if let Some(buf) = c.take(Duration::ZERO) {
            merge_into(&mut total, &mut env, &mut c, buf);
        }
        raw.extend(drained(&mut c));
    }
    assert!(rec.chunk.is_none(), "after n samples the thread stops keeping raw samples");
    total.merge(&rec.finish().stats());
    raw.extend(drained(&mut c));
    assert_eq!(raw, (0..5).map(|i| (i * 100, latency(i))).collect::<Vec<_>>());
    assert_eq!(total.count, 20, "statistics still count every sample");
}

#[test]
fn raw_first_n_larger_than_a_chunk_stops_exactly_at_n() {
    let n = CHUNK as u64 + 3;
    let (mut rec, mut c) = pair(1000, Raw::First(n));
    let mut raw = Vec::new();
    for i in 0..2 * CHUNK as u64 {
        rec.record(i, latency(i));
    }
    raw.extend(drained(&mut c));
    rec.finish();
    raw.extend(drained(&mut c));
    assert_eq!(raw.len() as u64, n);
    assert!(raw.iter().zip(0..).all(|(&s, i)| s == (i, latency(i))));
}

#[test]
fn raw_first_zero_hands_over_nothing() {
    let (mut rec, mut c) = pair(1000, Raw::First(0));
    for i in 0..1000 {
        rec.record(i * 100, latency(i));
        if i % 100 == 0 {
            c.request();
        }
        if let Some(buf) = c.take(Duration::ZERO) {
            c.recycle(buf);
        }
    }
    assert!(rec.chunk.is_none() && rec.chunks.is_none() && c.chunks.is_none());
    rec.finish();
    assert!(drained(&mut c).is_empty());
}

#[test]
fn a_checkpoint_hands_over_the_partial_chunk_of_raw_samples() {
    let (mut rec, mut c) = pair(1000, Raw::All);
    for i in 0..10 {
        rec.record(i, latency(i));
    }
    assert!(drained(&mut c).is_empty(), "a partial chunk stays with the thread until a checkpoint");
    c.request();
    rec.record(10, latency(10));
    assert_eq!(drained(&mut c), (0..11).map(|i| (i, latency(i))).collect::<Vec<_>>());
}

/// The first hand-over, at the first checkpoint, takes a chunk made with the pair: none is
/// allocated between two samples, where faulting in a locked megabyte would be a gap of its own.
#[test]
fn the_first_hand_over_takes_a_chunk_made_before_recording() {
    for raw in [Raw::All, Raw::First(100)] {
        let (mut rec, mut c) = pair(1000, raw);
        let spare = pooled(&rec, &c);
        assert_eq!(spare.len(), 1, "{raw:?}: one empty chunk waits in the pool before the first sample");
        rec.record(0, latency(0));
        c.request();
        rec.record(1, latency(1));
        assert_eq!(drained(&mut c), [(0, latency(0)), (1, latency(1))]);
        assert_eq!(rec.chunk.as_ref().map(|ch| ch.as_ptr()), Some(spare[0]), "{raw:?}: the thread took it");
    }
}

#[test]
fn raw_all_hands_over_every_sample_once_in_order_and_reuses_the_drained_chunks() {
    let n = 3 * CHUNK as u64 + 123;
    let (mut rec, mut c) = pair(1000, Raw::All);
    let mut raw: Vec<(u64, u64)> = Vec::new();
    let mut seen: Vec<*const (u64, u64)> = Vec::new();
    for i in 0..n {
        rec.record(i * 10, latency(i));
        if (i + 1) % CHUNK as u64 == 0 {
            c.drain_samples(|chunk| {
                assert_eq!(chunk.len(), CHUNK, "only a checkpoint or the end sends a partial chunk");
                seen.push(chunk.as_ptr());
                raw.extend_from_slice(chunk);
                Ok(())
            })
            .unwrap();
            let drained_addr = *seen.last().unwrap();
            assert_eq!(pooled(&rec, &c), [drained_addr], "a drained chunk waits in the pool");
            let current = rec.chunk.as_ref().unwrap();
            assert_eq!(current.capacity(), CHUNK, "the thread never grows a chunk while recording");
            if seen.len() >= 2 {
                // The pooled chunk is still alive, so a fresh allocation could not share its address.
                assert_eq!(current.as_ptr(), seen[seen.len() - 2], "the thread took the chunk drained before");
            }
        }
    }
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0], seen[2], "two chunks take turns");
    rec.finish();
    raw.extend(drained(&mut c));
    assert_eq!(raw.len() as u64, n);
    assert!(raw.iter().zip(0..).all(|(&s, i)| s == (i * 10, latency(i))));
}

#[test]
fn a_writer_that_outruns_the_reader_waits_instead_of_dropping_chunks() {
    // One chunk more than may be in flight: handing over the last one must wait for the reader.
    let n = (CHUNKS_IN_FLIGHT as u64 + 1) * CHUNK as u64;
    let (mut rec, mut c) = pair(1000, Raw::All);
    let reached = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let reached = Arc::clone(&reached);
        std::thread::spawn(move || {
            for i in 0..n {
                reached.store(i, Ordering::Relaxed);
                rec.record(i, latency(i));
            }
            rec.finish()
        })
    };
    while reached.load(Ordering::Relaxed) < n - 1 {
        std::thread::yield_now();
    }
    // A correct writer is blocked for good here, so this cannot fail spuriously; the pause only
    // gives one that drops chunks time to finish and be caught.
    std::thread::sleep(Duration::from_millis(50));
    assert!(!writer.is_finished(), "the writer went past a full channel of chunks");
    let mut raw = Vec::new();
    while !writer.is_finished() {
        raw.extend(drained(&mut c));
    }
    writer.join().unwrap();
    raw.extend(drained(&mut c));
    assert_eq!(raw.len() as u64, n);
    assert!(raw.iter().zip(0..).all(|(&s, i)| s == (i, latency(i))));
}

#[test]
fn a_reader_checkpointing_during_full_speed_recording_loses_and_doubles_nothing() {
    const N: u64 = 5_000_000;
    const STEP: u64 = 1000;
    const INTERVAL: u64 = 1_000_000;
    let (mut rec, mut c) = pair(INTERVAL, Raw::All);
    let started = std::time::Instant::now();
    let writer = std::thread::spawn(move || {
        for i in 0..N {
            rec.record(i * STEP, latency(i));
        }
        rec.finish()
    });

    let (mut total, mut env, mut taken) = (Stats::default(), Vec::new(), 0u64);
    let mut next = 0u64;
    let mut check = |chunk: &[(u64, u64)]| {
        for &s in chunk {
            assert_eq!(s, (next * STEP, latency(next)), "raw sample {next} lost, doubled or out of order");
            next += 1;
        }
        Ok(())
    };
    while !writer.is_finished() {
        c.request();
        if let Some(buf) = c.take(Duration::from_millis(1)) {
            taken += 1;
            merge_into(&mut total, &mut env, &mut c, buf);
        }
        // Draining also keeps the writer from waiting on a full channel of chunks.
        c.drain_samples(&mut check).unwrap();
    }
    let last = writer.join().unwrap();
    if let Some(buf) = c.drain() {
        merge_into(&mut total, &mut env, &mut c, buf);
    }
    total.merge(&last.stats());
    env.extend_from_slice(&last.envelope);
    c.drain_samples(&mut check).unwrap();
    eprintln!("{N} samples, {taken} buffers taken mid-run, {:?}", started.elapsed());

    let (sum, sumsq) = (0..N).map(latency).fold((0u128, 0u128), |(s, q), x| (s + x as u128, q + (x as u128).pow(2)));
    assert!(taken > 1, "the reader must have swapped buffers while the writer ran");
    assert_eq!(next, N);
    assert_eq!((total.count, total.min, total.max, total.sum, total.sumsq), (N, 1, 100_000, sum, sumsq));
    assert_eq!(total.hist.len(), N);
    let per_interval = INTERVAL / STEP;
    assert_eq!(env.len() as u64, N / per_interval);
    for (k, p) in env.iter().enumerate() {
        let k = k as u64;
        let first = k * per_interval;
        let expected_sum: u64 = (first..first + per_interval).map(latency).sum();
        assert_eq!((p.index, p.count, p.sum), (k, per_interval, expected_sum), "envelope interval {k}");
    }
}

#[test]
fn overruns_travel_with_the_buffer_they_were_counted_into() {
    let (mut rec, mut c) = pair(1000, Raw::First(0));
    let mut total = Stats::default();
    let mut env = Vec::new();
    let mut overruns_per_buffer = Vec::new();
    // Three checkpoints, so the first buffer comes round again and must not keep its count.
    for (k, overruns) in [2u64, 3, 4].into_iter().enumerate() {
        for _ in 0..overruns {
            rec.overrun();
        }
        rec.record(k as u64, 1);
        c.request();
        rec.record(k as u64, 2);
        let buf = c.take(Duration::ZERO).unwrap();
        overruns_per_buffer.push(buf.stats().overruns);
        merge_into(&mut total, &mut env, &mut c, buf);
    }
    // Overruns after the last sample still reach the runner, in a buffer with no samples at all.
    rec.overrun();
    let last = rec.finish();
    overruns_per_buffer.push(last.stats().overruns);
    total.merge(&last.stats());
    assert_eq!(last.stats().count, 0);
    assert_eq!(overruns_per_buffer, [2, 3, 4, 1]);
    assert_eq!((total.overruns, total.count), (10, 6));
}

/// More samples between two collections than a buffer keeps as taken go into its own
/// histogram: the runner's totals are the same as recording each one directly.
#[test]
fn samples_past_what_a_buffer_keeps_as_taken_are_counted_all_the_same() {
    let (mut rec, _c) = pair(1_000_000, Raw::First(0));
    let mut direct = Stats::default();
    let n = 3 * PENDING as u64 + 5;
    for i in 0..n {
        rec.record(i * 1000, latency(i * 7));
        direct.record(latency(i * 7));
    }
    let buf = rec.finish();
    assert_eq!(buf.count(), n);
    assert!(buf.overflow.count > 0, "the overflow was used");
    let mut total = Stats::default();
    buf.add_to(&mut total);
    assert_eq!(
        (total.count, total.min, total.max, total.sum, total.sumsq),
        (direct.count, direct.min, direct.max, direct.sum, direct.sumsq)
    );
    assert_eq!(total.summary().percentiles_ns, direct.summary().percentiles_ns);
}

/// A thread that pauses hands its buffer over when asked, at once, not when the pause ends.
#[test]
fn a_pausing_thread_hands_over_its_buffer_when_asked() {
    let (mut rec, mut c) = pair(1_000_000, Raw::First(0));
    let thread = std::thread::spawn(move || {
        for (t, lat) in [(0, 10), (1, 20)] {
            rec.record(t, lat);
        }
        // A first short pause makes the thread known; then one far longer than the wait below.
        rec.pause_until(crate::sys::now_ns());
        let start = std::time::Instant::now();
        rec.pause_until(crate::sys::now_ns() + 1_500_000_000);
        (rec, start.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    c.request();
    let buf = c.take(Duration::from_millis(500)).expect("the paused thread woke and handed its buffer over");
    assert_eq!(buf.stats().count, 2);
    let (_, paused) = thread.join().unwrap();
    // Woken, it still paused to its deadline.
    assert!(paused >= Duration::from_millis(1_490), "{paused:?}");
}
