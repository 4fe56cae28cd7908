//! `rtbench watch`: the user's application followed from the scheduler's events for a while,
//! each of its real-time threads stored as a run of its own (probe `watch.COMM`), so `show`,
//! `report`, `compare` and `--fail-if` read them as any probe's. The runs are written every
//! second (a watch killed keeps what it saw up to its last second: its runs read as aborted).
//! Nothing of the application is changed; the threads that are not real-time are listed, and
//! measured only with `--all`.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::app::task::WatchConfig;
use crate::model::{LoadRecord, Metric, ProbeParams, RunKind, RunParams, ThreadResult, WatchParams};
use crate::report::text::watched::instead_words;
use crate::session::{Outcome, Session};
use crate::store::{RunHead, SideBySide};
use crate::watch::follow::{Account, Followed};
use crate::watch::instead::Instead;
use crate::watch::mistakes::{self, Faults, Finding};
use crate::watch::target::{self, Target, Thread};

/// How often the watch looks whether the watched processes still run, and writes its runs.
const LOOK: Duration = Duration::from_millis(100);
const WRITE: Duration = Duration::from_secs(1);

pub fn run(a: WatchConfig) -> Result<i32> {
    let threads = target::threads(&a.target)?;
    let named = target_words(&a.target);
    let mut tgids: Vec<u32> = threads.iter().map(|t| t.tgid).collect();
    tgids.sort_unstable();
    tgids.dedup();
    list(&threads, a.all);
    let mut store = super::writable_store(&a.db)?;
    let session = Session::start()?;
    let on = housekeeping(&threads);
    let mut into = Followed::default();
    into.late_above_ns = a.explain_above_ns;
    let (reader, source) = crate::watch::bpf::start("rtbench-watch", &tgids, &on, into)
        .map_err(|why| crate::invalid!("watch follows the scheduler with BPF, which cannot run here: {why}"))?;
    let started = Instant::now();
    let mut instead = explain(&a, &threads, &on);
    let mut faults = Faults::default();
    faults.read(&threads);
    let mut book = Book::new(&mut store, &a, named, format!("BPF ({source})"));
    let state = reader.state();
    // Ended: gone, or a zombie its parent has not yet reaped.
    let ended = |pid: &u32| crate::sysinfo::stat_field(*pid, 0).is_none_or(|state| state == "Z");
    let gone = || tgids.iter().all(ended);
    let mut written = Instant::now();
    let outcome = session.wait(started, Some(a.duration), LOOK, gone, || {
        faults.read(&threads);
        if written.elapsed() >= WRITE {
            written = Instant::now();
            let mut followed = crate::trace::stream::lock(&state);
            if let Some(i) = instead.as_mut() {
                i.resolve(std::mem::take(&mut followed.late), false);
            }
            book.write(&threads, &followed, &faults, instead.as_ref())?;
        }
        Ok(())
    })?;
    faults.read(&threads);
    // Dropped, the reader takes what is left and the programs go.
    drop(reader);
    let mut followed = crate::trace::stream::lock(&state);
    if let Some(i) = instead.as_mut() {
        i.resolve(std::mem::take(&mut followed.late), true);
    }
    let findings = book.write(&threads, &followed, &faults, instead.as_ref())?;
    let (named, source) = (book.named.clone(), book.source.clone());
    let ids = book.runs.finish(outcome.status())?;
    let ids: Vec<(u32, i64)> = ids.into_iter().map(|(tid, id)| (tid as u32, id)).collect();
    let (instead, findings) = (instead.as_ref(), &findings);
    let watched = Watched { config: &a, named: &named, source: &source, threads: &threads, findings, instead };
    print_accounts(&watched, &followed, &ids);
    print_findings(findings);
    if let Outcome::Interrupted(_) = outcome {
        eprintln!("rtbench: watch interrupted after {:.1} s; what it saw is kept", started.elapsed().as_secs_f64());
    }
    Ok(outcome.exit_code())
}

/// The classification's tracer on the CPUs the real-time threads may run on, for what ran in
/// their waits longer than `--explain-above`; none when not asked, or (said) when it cannot run.
fn explain(a: &WatchConfig, threads: &[Thread], on: &[usize]) -> Option<Instead> {
    let mut cpus: Vec<usize> = threads.iter().filter(|t| t.policy.real_time()).flat_map(|t| t.cpus.clone()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    if a.explain_above_ns == 0 || cpus.is_empty() {
        return None;
    }
    match Instead::arm(&cpus, on, a.explain_above_ns, crate::sys::now_ns()) {
        Ok(i) => Some(i),
        Err(why) => {
            println!("what ran in the waits over {} µs is not looked up: {why}", a.explain_above_ns / 1000);
            None
        }
    }
}

/// The CPUs none of the real-time threads may run on, where the watch reads its events (all of
/// them when there are none such: then the reader runs where the scheduler puts it); said.
fn housekeeping(threads: &[Thread]) -> Vec<usize> {
    let theirs: Vec<usize> = threads.iter().filter(|t| t.policy.real_time()).flat_map(|t| t.cpus.clone()).collect();
    let free: Vec<usize> = crate::sysinfo::online_cpus().into_iter().filter(|c| !theirs.contains(c)).collect();
    match free.is_empty() {
        true => println!("the watch reads its events on any CPU (its real-time threads may run on every one)"),
        false => println!("the watch reads its events on CPUs {}", crate::units::format_cpu_list(&free)),
    }
    free
}

/// What one watch was of.
struct Watched<'a> {
    config: &'a WatchConfig,
    named: &'a str,
    source: &'a str,
    /// The threads when it began.
    threads: &'a [Thread],
    findings: &'a [Finding],
    /// What ran in their long waits, when looked up.
    instead: Option<&'a Instead>,
}

impl Watched<'_> {
    /// Whether the thread `tid` with `account` is measured: real-time when the watch began (or,
    /// started while watched, at a real-time kernel priority), or any with `--all`.
    fn measured(&self, tid: u32, account: &Account) -> bool {
        let real_time = match self.threads.iter().find(|t| t.tid == tid) {
            Some(t) => t.policy.real_time(),
            None => account.prio.is_some_and(|p| p < 100),
        };
        self.config.all || real_time
    }
}

fn target_words(target: &Target) -> String {
    match target {
        Target::Pid(pid) => format!("--pid {pid}"),
        Target::Comm(name) => format!("--comm {name}"),
        Target::Cgroup(dir) => format!("--cgroup {}", dir.display()),
    }
}

/// The threads found, and which are measured.
fn list(threads: &[Thread], all: bool) {
    println!("{:>8} {:>8} {:<16} {:<10} CPUs", "process", "thread", "name", "policy");
    for t in threads {
        let policy = match t.policy.real_time() {
            true => format!("{}/{}", t.policy.name(), t.priority),
            false => t.policy.name().to_string(),
        };
        let cpus = crate::units::format_cpu_list(&t.cpus);
        let listed = if t.policy.real_time() || all { "" } else { "  (listed: not real-time; --all measures it)" };
        println!("{:>8} {:>8} {:<16} {:<10} {cpus}{listed}", t.tgid, t.tid, t.comm, policy);
    }
}

/// The watch's runs, written as it goes: one per measured thread, its probe `watch.COMM` (a
/// second thread of one name `watch.COMM.2`, in the order they were first written).
struct Book<'s> {
    runs: SideBySide<'s>,
    config: &'s WatchConfig,
    named: String,
    source: String,
    system: crate::model::SystemSnapshot,
    command_line: String,
}

impl<'s> Book<'s> {
    fn new(store: &'s mut crate::store::Store, config: &'s WatchConfig, named: String, source: String) -> Book<'s> {
        let command_line = std::env::args().collect::<Vec<_>>().join(" ");
        let system = crate::sysinfo::snapshot();
        Book { runs: SideBySide::new(store), config, named, source, system, command_line }
    }

    /// Every measured thread's run as `followed` has it now, with the mistakes found so far;
    /// those mistakes.
    fn write(
        &mut self,
        threads: &[Thread],
        followed: &Followed,
        faults: &Faults,
        instead: Option<&Instead>,
    ) -> Result<Vec<Finding>> {
        let findings = mistakes::find(threads, followed, faults, &|tid| instead.map(|i| i.of(tid)));
        let (config, named, source) = (self.config, &self.named, &self.source);
        let w = Watched { config, named, source, threads, findings: &findings, instead };
        let measured_now: Vec<(u32, &Account)> =
            followed.threads.iter().filter(|(&tid, a)| w.measured(tid, a)).map(|(t, a)| (*t, a)).collect();
        // Every run begun first, so each names all of the watch's runs.
        for &(tid, account) in &measured_now {
            if self.runs.id(u64::from(tid)).is_none() {
                let own = own_params(&w, tid, account, followed);
                let probe = self.probe_for(&own.comm);
                let params = RunParams::Measured(measured(&w, own));
                self.runs.begin(u64::from(tid), || head(&w, &probe, params, &self.system, &self.command_line))?;
            }
        }
        let ids = self.runs.ids();
        for (tid, account) in measured_now {
            let own = WatchParams { watch_runs: ids.clone(), ..own_params(&w, tid, account, followed) };
            let result = ThreadResult { thread: 0, cpu: account.last_cpu, stats: account.latencies.clone(), irq: None };
            self.runs.write(u64::from(tid), &RunParams::Measured(measured(&w, own)), &result)?;
        }
        Ok(findings)
    }

    /// `watch.COMM`, or `watch.COMM.N` for the Nth thread of that name.
    fn probe_for(&self, comm: &str) -> String {
        let base = format!("watch.{comm}");
        let named = |h: &&RunHead| match h.params.measured().map(|m| &m.probe) {
            Some(ProbeParams::Watch(w)) => w.comm == comm,
            _ => false,
        };
        match self.runs.heads().filter(named).count() {
            0 => base,
            n => format!("{base}.{}", n + 1),
        }
    }
}

/// A measured thread's own parameters as `account` has it now.
fn own_params(w: &Watched, tid: u32, account: &Account, followed: &Followed) -> WatchParams {
    let known = w.threads.iter().find(|t| t.tid == tid);
    let comm = known.map(|t| t.comm.clone()).or_else(|| target::comm_of(tid)).unwrap_or_else(|| format!("tid-{tid}"));
    WatchParams {
        target: w.named.to_string(),
        tid,
        pid: known.map(|t| t.tgid).or_else(|| target::tgid_of(tid)).unwrap_or(0),
        comm,
        sched_policy: known.map(|t| t.policy.name().to_string()),
        sched_priority: known.map(|t| t.priority),
        kernel_priority: account.prio,
        allowed_cpus: known.map(|t| t.cpus.clone()).unwrap_or_default(),
        runtime_ns: account.runtime_ns,
        switches_in: account.switches_in,
        preemptions: account.preemptions,
        migrations: account.migrations,
        worst_at_ns: account.worst.map(|(_, at)| at),
        lateness: account.lateness.as_ref().and_then(lateness),
        period: account.intervals.as_ref().and_then(period),
        instead: w.instead.map(|i| i.of(tid)),
        watch_runs: Vec::new(),
        events: followed.records,
        lost_events: followed.lost_events,
        source: w.source.to_string(),
        findings: w.findings.iter().filter(|f| f.tids.contains(&tid)).map(|f| f.said.clone()).collect(),
    }
}

/// The period of a thread whose times between runs after a wake-up look periodic: 10 or more,
/// the middle 80 % within a quarter of their median.
fn period(s: &crate::stats::Stats) -> Option<crate::model::Period> {
    let q = s.percentiles(&[0.01, 0.1, 0.5, 0.9, 0.99]);
    let (p1, p10, median, p90, p99) = (q[0], q[1], q[2], q[3], q[4]);
    let near = |v: u64| v.abs_diff(median) * 4 <= median;
    (s.count >= 10 && median > 0 && near(p10) && near(p90)).then_some(crate::model::Period {
        intervals: s.count,
        period_ns: median,
        p1_ns: p1,
        p99_ns: p99,
        min_ns: s.min,
        max_ns: s.max,
    })
}

fn lateness(s: &crate::stats::Stats) -> Option<crate::model::Lateness> {
    (s.count > 0).then(|| crate::model::Lateness {
        count: s.count,
        p50_ns: s.percentile(0.5),
        p99_ns: s.percentile(0.99),
        max_ns: s.max,
    })
}

/// A watched thread's run settings, as the application set them (a thread started while
/// watched: unknown).
fn measured(w: &Watched, own: WatchParams) -> crate::model::MeasuredParams {
    use crate::model::Policy;
    let policy = match own.sched_policy.as_deref() {
        Some("fifo") => Policy::Fifo,
        Some("rr") => Policy::RoundRobin,
        Some("deadline") => Policy::Deadline,
        _ => Policy::Other,
    };
    let priority = own.sched_priority.unwrap_or(0) as i32;
    let ran = vec![crate::model::ThreadRan { thread: 0, policy, priority, timer_slack_ns: None }];
    // Its pin, when the application pinned it to one CPU.
    let pin = match own.allowed_cpus[..] {
        [one] => Some(one),
        _ => None,
    };
    crate::model::MeasuredParams {
        duration_s: Some(w.config.duration.as_secs_f64()),
        ran,
        ..crate::model::MeasuredParams::one_thread(pin, policy, priority, ProbeParams::Watch(Box::new(own)))
    }
}

fn head(w: &Watched, probe: &str, params: RunParams, system: &crate::model::SystemSnapshot, line: &str) -> RunHead {
    let rt_priority = params.measured().is_some_and(|p| p.ran.iter().any(|r| r.policy != crate::model::Policy::Other));
    RunHead {
        label: w.config.label.clone(),
        probe: probe.to_string(),
        kind: RunKind::Probe,
        metric: Metric::LATENCY,
        params,
        load: LoadRecord::named("application"),
        command_line: line.to_string(),
        rt_priority,
        warnings: Vec::new(),
        system: system.clone(),
        envelope_ns: 1_000_000_000,
    }
}

/// Each measured thread's wake-up latencies, as a probe's summary shows its threads.
fn print_accounts(w: &Watched, followed: &Followed, ids: &[(u32, i64)]) {
    println!(
        "\n{:>8} {:<16} {:>8} {:>10} {:>10} {:>10} {:>12} {:>9} {:>6}  (runnable to running, µs)",
        "thread", "name", "waits", "p50", "p99", "max", "runtime ms", "preempted", "moved"
    );
    let us = |ns: u64| ns as f64 / 1000.0;
    for (tid, id) in ids {
        let a = &followed.threads[tid];
        let name = w.threads.iter().find(|t| t.tid == *tid).map_or_else(|| format!("tid-{tid}"), |t| t.comm.clone());
        let s = &a.latencies;
        let (p50, p99) = (s.percentile(0.5), s.percentile(0.99));
        println!(
            "{tid:>8} {name:<16} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>12.1} {:>9} {:>6}  run {id}",
            s.count,
            us(p50),
            us(p99),
            us(s.max),
            a.runtime_ns as f64 / 1e6,
            a.preemptions,
            a.migrations
        );
    }
    for (tid, _) in ids {
        let a = &followed.threads[tid];
        if let Some(p) = a.intervals.as_ref().and_then(period) {
            println!(
                "{tid:>8} periodic: every {:.3} µs (median of {} times between its runs after a wake-up); p1 {:.3}, \
                 p99 {:.3} µs",
                us(p.period_ns),
                p.intervals,
                us(p.p1_ns),
                us(p.p99_ns)
            );
        }
        if let Some(l) = a.lateness.as_ref().and_then(lateness) {
            println!(
                "{tid:>8} late after its absolute sleeps (its period's jitter): p50 {:.3}, p99 {:.3}, max {:.3} µs of {}",
                us(l.p50_ns),
                us(l.p99_ns),
                us(l.max_ns),
                l.count
            );
        }
        if let Some(r) = w.instead.map(|i| i.of(*tid)).filter(|r| r.count > 0) {
            let above = r.above_ns / 1000;
            println!("{tid:>8} {} waits over {above} µs; what ran instead: {}", r.count, instead_words(&r));
        }
    }
    let stored = |tid: u32| ids.iter().any(|(t, _)| *t == tid);
    let listed = w.threads.iter().filter(|t| !stored(t.tid) && !t.policy.real_time() && !w.config.all).count();
    let quiet = w.threads.iter().filter(|t| !stored(t.tid)).count() - listed;
    println!(
        "{} threads stored as runs, {quiet} without a wake-up while watched, {listed} not real-time (listed only); \
         {} scheduler events, {} lost; from {}",
        ids.len(),
        followed.records,
        followed.lost_events,
        w.source
    );
}

/// The mistakes found, at the end of the output as a probe's summary ends it.
fn print_findings(findings: &[Finding]) {
    if findings.is_empty() {
        println!("\nno mistake found in the real-time threads");
        return;
    }
    println!("\nmistakes found ({})", findings.len());
    for (i, f) in findings.iter().enumerate() {
        println!("{:>3}. [{}] {}", i + 1, f.rule, f.said);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;

    #[test]
    fn a_period_is_inferred_only_from_times_that_look_periodic() {
        let mut every = Stats::default();
        for i in 0..100u64 {
            every.record(1_000_000 + (i % 7) * 1_000);
        }
        every.record(9_000_000);
        let p = period(&every).expect("periodic");
        assert!(p.period_ns.abs_diff(1_003_000) <= 1_000, "{p:?}");
        assert_eq!((p.intervals, p.max_ns), (101, 9_000_000));
        let mut irregular = Stats::default();
        (1..=100u64).for_each(|i| irregular.record(i * 50_000));
        assert_eq!(period(&irregular), None, "times spread from 50 µs to 5 ms");
        let mut few = Stats::default();
        (0..9).for_each(|_| few.record(1_000_000));
        assert_eq!(period(&few), None, "fewer than 10");
    }
}
