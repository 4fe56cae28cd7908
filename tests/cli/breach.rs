//! `--breach`: a latency breach is traced with ftrace and its culprit named, and tracing
//! leaves nothing behind however the run ends.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// A busy loop of our own at FIFO 99 on one CPU: it says "ready" once pinned at its priority;
/// once a line comes on its input, every second it spins for `busy_s` and prints when it did
/// (CLOCK_MONOTONIC ns). Bounded by its count.
pub const HOG: &str = r#"
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(99))
n, busy = int(sys.argv[2]), float(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
t = time.monotonic() + 0.5
for i in range(n):
    time.sleep(max(0.0, t - time.monotonic()))
    a = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    end = time.monotonic() + busy
    while time.monotonic() < end:
        pass
    print(a, time.clock_gettime_ns(time.CLOCK_MONOTONIC), flush=True)
    t += 1.0
"#;

/// [`HOG`] started on `cpu` for `n` bursts of `busy_s` seconds, the first half a second on.
pub fn start_hog(lab: &Lab, cpu: &str, n: &str, busy_s: &str) -> std::process::Child {
    let mut hog = held_hog(lab, cpu, n, busy_s);
    release(&mut hog);
    hog
}

/// [`start_hog`], but the bursts wait for [`release`]: Python takes its time to start on a
/// loaded machine (seconds, with a guest booting beside the test), and a test that releases
/// the bursts once its run has begun must not have that time move them out of the run. Returns
/// once the loop is pinned at FIFO 99, so a release starts its bursts on time.
pub fn held_hog(lab: &Lab, cpu: &str, n: &str, busy_s: &str) -> std::process::Child {
    let script = lab.path("hog.py");
    std::fs::write(&script, HOG).unwrap();
    let mut cmd = Command::new("python3");
    cmd.args([script.to_str().unwrap(), cpu, n, busy_s]).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut hog = cmd.spawn().unwrap();
    // Byte by byte: what follows the line is the bursts', read by `hog_bursts`.
    let mut line = Vec::new();
    let mut byte = [0u8];
    let out = hog.stdout.as_mut().unwrap();
    while line.last() != Some(&b'\n') {
        let n = std::io::Read::read(out, &mut byte).unwrap();
        assert!(n == 1, "the busy loop ended before it was ready: {}", String::from_utf8_lossy(&line));
        line.push(byte[0]);
    }
    assert_eq!(line, b"ready\n", "the busy loop's first line");
    hog
}

/// Lets a [`held_hog`]'s bursts begin, half a second from now.
pub fn release(hog: &mut std::process::Child) {
    let mut go = hog.stdin.take().expect("a held busy loop");
    std::io::Write::write_all(&mut go, b"go\n").unwrap();
}

/// When each of a hog's bursts began and ended (CLOCK_MONOTONIC ns), once it has ended.
pub fn hog_bursts(hog: &mut std::process::Child) -> Vec<(u64, u64)> {
    let bursts = BufReader::new(hog.stdout.take().unwrap())
        .lines()
        .map(|l| {
            let l = l.unwrap();
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert!(hog.wait().unwrap().success(), "the busy loop ran");
    bursts
}

/// What a person would compare: whether tracefs is mounted, the global buffer's settings, and
/// which instances exist.
pub fn tracing_state() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let mounted = mounts.lines().any(|l| l.split_whitespace().nth(2) == Some("tracefs"));
    let mut state = vec![format!("mounted={mounted}")];
    if mounted && Path::new(TRACEFS).join("instances").is_dir() {
        for f in ["tracing_on", "current_tracer", "trace_clock", "set_event", "buffer_size_kb", "tracing_cpumask"] {
            state.push(format!(
                "{f}={}",
                std::fs::read_to_string(Path::new(TRACEFS).join(f)).unwrap_or_default().trim()
            ));
        }
        let mut instances: Vec<String> = std::fs::read_dir(Path::new(TRACEFS).join("instances"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        instances.sort();
        state.push(format!("instances={instances:?}"));
    }
    state
}

/// A tracing test's start (it needs root, tracefs, python3 for the busy loop and a CPU 1 to
/// measure on: `#[needs(root, tracefs, "python3", two_cpus)]`): its lab, alone on the machine
/// — the tests here compare the machine's tracing state before and after, and run a FIFO 99
/// loop — and tracing's state before it.
pub fn traced() -> (Lab, Vec<String>) {
    let lab = Lab::alone();
    (lab, tracing_state())
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_real_time_hog_is_named_as_the_cause_of_every_breach_it_makes() {
    let (lab, before) = traced();
    let run = ["timer", "-t", "1", "-a", "1", "--breach", "2000", "--breach-max", "30", "-D", "60s"];
    let mut hog = held_hog(&lab, "1", "4", "0.005");
    let timer = measuring(&lab, lab.cmd(&run));
    // Once the run measures, four bursts a second apart; the run is ended after the last, so
    // all four fall inside it however late a loaded machine starts either (CI once saw a
    // fixed-length run end before the bursts did).
    release(&mut hog);
    let hog_pid = hog.id();
    let bursts = hog_bursts(&mut hog);
    assert_eq!(bursts.len(), 4, "four bursts of the busy loop");
    assert!(Command::new("kill").args(["-INT", &timer.id().to_string()]).status().unwrap().success());
    let out = timer.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "ended by SIGINT, saved: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("traced with ftrace"), "{}", text(&out.stdout));

    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    let breaches = doc["breaches"].as_array().cloned().unwrap_or_default();
    let mut named = 0;
    for b in &breaches {
        let (at, late) = (b["mono_ns"].as_u64().unwrap(), b["latency_ns"].as_u64().unwrap());
        let causes = b["causes"].as_array().cloned().unwrap_or_default();
        let is_hog = |c: &serde_json::Value| names_task(c, hog_pid);
        let main = &b["causes"][0];
        let blames_hog = is_hog(main);
        // A window whose start the buffer lost (a stall of many ms on a loaded machine) cannot
        // see the busy loop; it must say so rather than blame anything.
        let truncated = b["verdict"].as_str().unwrap().contains("no longer held the start");
        if truncated {
            assert!(
                !blames_hog && main["kind"] == "untraced",
                "a truncated window blames nothing it did not see: {b:#}"
            );
        } else if bursts.iter().any(|&(start, end)| at < end && at + late > start) {
            // The loop is among the causes of a breach it overlaps; first, unless something
            // else of the machine's (a stolen vCPU, a task the kernel did not preempt) took
            // longer still.
            let hog = causes.iter().find(|c| is_hog(c));
            assert!(hog.is_some(), "a breach during the busy loop names it (pid {hog_pid}): {b:#}");
            let hog_ns = hog.unwrap()["ns"].as_u64().unwrap();
            assert!(blames_hog || main["ns"].as_u64().unwrap() >= hog_ns, "the largest cause is first: {b:#}");
            if blames_hog {
                let said = b["verdict"].as_str().unwrap();
                let late_irq = said.starts_with("IRQ handler delay") && said.contains("while python3 (pid");
                assert!(said.starts_with("task python3") || late_irq, "{said}");
                named += 1;
            }
            in_timerlat_terms_names(b, hog_pid);
        } else {
            assert!(!blames_hog, "a breach outside the busy loop does not blame it: {b:#}");
        }
        assert!(!b["window"].as_array().unwrap().is_empty(), "the window is stored");
    }
    assert!(named >= 2, "most of the 4 bursts were traced as breaches: {named} of {} breaches", breaches.len());
    // The report lists them and draws the first ones.
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let id = lab.last_run();
    let table =
        html.split(r#"<table class="breaches">"#).nth(1).expect("a breach table").split("</table>").next().unwrap();
    assert_eq!(table.matches("<tr><td>").count(), breaches.len(), "a row per breach");
    assert!(table.contains("task python3"), "with the verdicts");
    let terms = table.matches(r#"<tr class="timerlat">"#).count();
    let cut = breaches.iter().filter(|b| b.get("timerlat_analysis").is_some()).count();
    assert!(cut > 0 && terms == cut, "each breakdown in timerlat's terms under its breach: {terms} of {cut}");
    let said = lab.ok(&["show", &id.to_string()]);
    assert_eq!(said.matches("in rtla timerlat's terms").count(), cut, "show gives each breakdown:\n{said}");
    let timeline = std::fs::read_to_string(out.join("figures").join(format!("run{id}-breach1.svg"))).unwrap();
    assert!(timeline.contains(r#"class="intended""#) && timeline.contains(r#"class="actual""#), "wake-ups marked");
    assert!(timeline.contains("CPU 1"), "a lane for the measured CPU");
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

/// Whether `cause` names task `pid`: the task ran, or the timer's interrupt came late while it
/// ran (under a hypervisor a busy loop is often current when the interrupt is held back).
pub fn names_task(cause: &serde_json::Value, pid: impl std::fmt::Display) -> bool {
    let detail = cause["detail"].as_str().unwrap_or("");
    (cause["kind"] == "task" || cause["kind"] == "irq_delay") && detail.contains(&format!("pid {pid},"))
}

/// A breach during the busy loop, cut as rtla timerlat's auto-analysis cuts it, names the loop
/// (as the blocking thread, or as thread interference when the timer fired into idle and the
/// loop woke with it), and its parts with what they leave out add up to the latency.
fn in_timerlat_terms_names(b: &serde_json::Value, hog_pid: u32) {
    let a = &b["timerlat_analysis"];
    assert!(a.is_object(), "the breakdown in timerlat's terms: {b:#}");
    let hog = |t: &serde_json::Value| t["name"] == "python3" && t["id"] == hog_pid;
    let blocking = hog(&a["blocking_thread"]);
    let interfering = a["interference"].as_array().is_some_and(|i| i.iter().any(|t| t["class"] == "thread" && hog(t)));
    assert!(blocking || interfering, "rtla's terms name the loop (pid {hog_pid}): {a:#}");
    let ns = |k: &str| a[k].as_u64().unwrap_or(0);
    let parts = ["irq_handler_delay_ns", "timer_irq_duration_ns", "irq_interference_ns", "softirq_interference_ns"];
    let sum = parts.iter().map(|k| ns(k)).sum::<u64>() + ns("thread_interference_ns");
    let sum = sum + a["blocking_thread"]["duration_ns"].as_u64().unwrap_or(0);
    assert_eq!(a["thread_latency_ns"], b["latency_ns"], "{a:#}");
    assert!(sum <= b["latency_ns"].as_u64().unwrap(), "the parts fit in the latency: {a:#}");
}

/// Starts a traced run that will not breach, waits until it measures, and signals it.
fn traced_run_ended_by(lab: &Lab, state_dir: &Path, sig: &str) -> u32 {
    run_ended_by(lab, state_dir, sig, &["--breach", "100000"])
}

/// Starts a one-thread timer run with `tracing` flags, waits until it measures, and signals it.
pub fn run_ended_by(lab: &Lab, state_dir: &Path, sig: &str, tracing: &[&str]) -> u32 {
    probe_ended_by(lab, state_dir, sig, &[&["timer", "-t", "1"][..], tracing].concat())
}

/// Starts `cmd`, a command that stores a run in `lab`'s store, and returns once the run has
/// begun: a loaded machine (a guest booting, FIFO loops of other tests) may take seconds to set
/// up, and what a test means to happen during the run must not happen before it. A command
/// that ends before its run begins says why.
pub fn begun(lab: &Lab, mut cmd: Command) -> Child {
    let runs = stored_runs(lab);
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&mut child, "its run began", || stored_runs(lab) > runs);
    child
}

/// [`begun`], then until the run's first checkpoint: its threads have been measuring for a
/// checkpoint's interval. On a loaded machine (a guest booting beside the test) the run's
/// threads may start seconds after its row, and a burst released before would fall before the
/// first sample. (Not its first stored sample: a noise run over a high threshold may have none
/// for seconds.)
pub fn measuring(lab: &Lab, cmd: Command) -> Child {
    let mut child = begun(lab, cmd);
    let checkpointed = || stored(lab, "SELECT COUNT(*) FROM runs WHERE checkpoint IS NOT NULL") > 0;
    wait_for(&mut child, "its first checkpoint", checkpointed);
    child
}

/// Waits up to 30 s until `done`; a `child` that ends first fails the test with its stderr.
fn wait_for(child: &mut Child, what: &str, done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !done() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            panic!("rtbench ended ({status}) before {what}: {err}");
        }
        assert!(Instant::now() < until, "not {what} within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many runs `lab`'s store holds.
fn stored_runs(lab: &Lab) -> u64 {
    stored(lab, "SELECT COUNT(*) FROM runs")
}

/// A count read from `lab`'s store file itself with `sql`: a command run to ask would take
/// seconds to start on a loaded machine, and [`begun`] would learn late. 0 while the file or
/// its schema is not there yet.
fn stored(lab: &Lab, sql: &str) -> u64 {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let count = |c: rusqlite::Connection| c.query_row(sql, [], |r| r.get::<_, u64>(0));
    let db = lab.db();
    db.exists().then(|| rusqlite::Connection::open_with_flags(&db, flags).and_then(count).ok()).flatten().unwrap_or(0)
}

/// Waits for a command [`begun`] started to end, checks it succeeded, and returns what it
/// printed.
pub fn succeeded(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "rtbench failed ({}): {}", out.status, text(&out.stderr));
    text(&out.stdout)
}

/// After `pid`, run with `--breach` and the BPF tracer `own` (`split`, `classify`), was
/// SIGKILLed: `own` traced with BPF (no instance of its own, no journal: its programs and maps
/// are fds the kernel freed with the process), the breach tracer left its instance and journal,
/// and the next command removed exactly that one.
pub fn only_the_breach_tracer_was_left(lab: &Lab, state: &Path, pid: u32, own: &str) {
    let dir = Path::new(TRACEFS).join("instances").join(format!("rtbench-{own}-{pid}"));
    assert!(!dir.exists(), "{own} traced with BPF, not an instance: {}", dir.display());
    assert!(!state.join(format!("{own}-trace-{pid}.json")).exists(), "and has no journal");
    assert!(state.join(format!("trace-{pid}.json")).is_file(), "the breach tracer's instance has one");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", state).output().unwrap();
    let said = text(&out.stderr);
    assert_eq!(said.matches("removed the trace instance").count(), 1, "{said}");
    assert!(!state.join(format!("trace-{pid}.json")).exists(), "the next command removed it");
}

/// [`run_ended_by`] for any probe's run (`run`: the probe and its flags).
pub fn probe_ended_by(lab: &Lab, state_dir: &Path, sig: &str, run: &[&str]) -> u32 {
    let args = [run, &["-D", "60s", "-q"]].concat();
    let mut cmd = lab.cmd(&args);
    cmd.env("RTBENCH_STATE_DIR", state_dir);
    let mut child = begun(lab, cmd);
    std::thread::sleep(Duration::from_millis(800));
    let pid = child.id();
    assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "rtbench did not stop after {sig}");
        std::thread::sleep(Duration::from_millis(50));
    }
    pid
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn tracing_leaves_nothing_after_sigint_and_after_sigkill_plus_one_command() {
    let (lab, before) = traced();
    let state = lab.path("state");
    traced_run_ended_by(&lab, &state, "-INT");
    assert_eq!(tracing_state(), before, "SIGINT: tracing is as it was");

    let pid = traced_run_ended_by(&lab, &state, "-KILL");
    let instance = Path::new(TRACEFS).join("instances").join(format!("rtbench-{pid}"));
    assert!(instance.is_dir(), "a killed run cannot remove its instance: {}", instance.display());
    assert!(state.join(format!("trace-{pid}.json")).is_file(), "its journal says so");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", &state).output().unwrap();
    assert!(text(&out.stderr).contains("removed the trace instance"), "{}", text(&out.stderr));
    assert!(!instance.exists(), "the next command removed it");
    assert!(!state.join(format!("trace-{pid}.json")).exists(), "and its journal");
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn at_most_breach_max_windows_are_kept_and_breach_stop_ends_the_run_at_the_first() {
    let (lab, _) = traced();
    // Every sample is over 1 µs: a breach each millisecond.
    lab.ok(&["timer", "-t", "1", "-a", "1", "--breach", "1", "--breach-max", "2", "-D", "2s", "-q"]);
    let doc = lab.export_json(lab.last_run());
    let rec = &doc["run"]["params"]["breach"];
    assert_eq!(doc["breaches"].as_array().map(Vec::len), Some(2), "{rec}");
    assert_eq!(rec["traced"], 2);
    assert!(rec["untraced"].as_u64().unwrap() > 100, "the rest are counted: {rec}");
    assert_eq!(doc["run"]["status"], "complete", "measuring went on to the end");
    assert!(doc["total"]["count"].as_u64().unwrap() > 1000, "{}", doc["total"]);

    let started = Instant::now();
    lab.ok(&["timer", "-t", "1", "-a", "1", "--breach", "1", "--breach-stop", "-D", "60s", "-q"]);
    assert!(started.elapsed() < Duration::from_secs(30), "the first breach ended the run");
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["breaches"].as_array().map(Vec::len), Some(1));
    assert_eq!(doc["run"]["status"], "complete");
}
