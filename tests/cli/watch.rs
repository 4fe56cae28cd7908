//! `rtbench watch` on a real application: the demonstration program (tests/apps/rtdemo.c)
//! built with the machine's C compiler, its real-time threads followed from the scheduler's
//! events and stored as runs; what names no thread refused.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{assert_rejected, assert_valid_export, Lab};
use rtbench_testkit::needs;

/// rtdemo built into `lab`, started with `args`, and the ids of the threads it said it
/// started (name → tid), read from its output.
fn start_rtdemo(lab: &Lab, args: &[&str], threads: usize) -> (Child, Vec<(String, u32)>) {
    let bin = lab.path("rtdemo");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/rtdemo.c");
    let built = Command::new("cc").args(["-O2", "-Wall", "-pthread", "-o"]).arg(&bin).arg(source).status();
    assert!(built.unwrap().success(), "rtdemo builds");
    let mut app = Command::new(&bin).args(args).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(app.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), format!("ready {}", app.id()));
    let said: Vec<(String, u32)> = (0..threads)
        .map(|_| {
            let line = lines.next().unwrap().unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            (words[2].to_string(), words[1].parse().unwrap())
        })
        .collect();
    (app, said)
}

#[test]
fn what_names_no_thread_is_refused_in_one_line() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["watch"]), "--pid");
    assert_rejected(&lab.run(&["watch", "--pid", "4000000000"]), "watch --pid 4000000000: no such process");
    assert_rejected(&lab.run(&["watch", "--comm", "no-such-app-x"]), "no process of that name");
    assert_rejected(&lab.run(&["watch", "--comm", "bin/app"]), "without '/'");
    assert_rejected(&lab.run(&["watch", "--cgroup", "/no/such/group"]), "not a cgroup v2 directory");
    assert_rejected(&lab.run(&["watch", "--pid", "1", "--comm", "init"]), "--comm");
    assert_rejected(&lab.run(&["watch", "--pid", "1", "-D", "0"]), "must be greater than zero");
    assert_rejected(&lab.run(&["watch", "--pid", "1", "--explain-above", "soon"]), "--explain-above");
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing stored");
}

/// A cgroup without threads is refused, not watched for nothing.
#[needs(root)]
#[test]
fn an_empty_cgroup_is_refused() {
    let lab = Lab::new();
    let mount = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let Some(root) = mount.lines().find(|l| l.contains(" - cgroup2 ")).and_then(|l| l.split_whitespace().nth(4)) else {
        return eprintln!("no cgroup v2 mounted here");
    };
    let dir = std::path::Path::new(root).join(format!("rtbench-watch-empty-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    let out = lab.run(&["watch", "--cgroup", dir.to_str().unwrap()]);
    std::fs::remove_dir(&dir).unwrap();
    assert_rejected(&out, "it holds no thread");
}

/// The application's two FIFO threads become two runs, its main thread (not real-time) is
/// listed only; a Ctrl-C keeps what was seen (runs interrupted); a watch longer than the
/// application ends with it, its runs complete.
#[needs(root, btf, native, "cc")]
#[test]
fn the_demonstration_application_s_real_time_threads_become_runs() {
    let lab = Lab::alone();
    let (mut app, threads) = start_rtdemo(&lab, &["-D", "4", "share"], 2);
    let pid = app.id().to_string();
    let mut watch = lab.cmd(&["watch", "--pid", &pid, "-D", "60s"]);
    let watch = watch.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&watch);
    let said = watch.wait_with_output().unwrap();
    assert_eq!(said.status.code(), Some(130), "{}", String::from_utf8_lossy(&said.stdout));
    assert!(String::from_utf8_lossy(&said.stderr).contains("what it saw is kept"));
    let interrupted = lab.runs();
    let interrupted = interrupted.as_array().unwrap();
    assert_eq!(interrupted.len(), 2, "{interrupted:?}");
    assert!(interrupted.iter().all(|r| r["status"] == "interrupted"), "{interrupted:?}");

    let started = Instant::now();
    let said = lab.ok(&["watch", "--pid", &pid, "-D", "60s", "--explain-above", "100"]);
    let took = started.elapsed();
    assert!(app.wait().unwrap().success());
    assert!(took < Duration::from_secs(20), "the watch ends with the application: {took:?}");
    let main = said.lines().find(|l| l.split_whitespace().nth(1) == Some(pid.as_str())).unwrap();
    assert!(main.contains("listed: not real-time"), "{said}");
    let runs = lab.runs();
    let runs: Vec<_> = runs.as_array().unwrap().iter().skip(2).collect();
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    assert_eq!(probes, ["watch.rt-periodic", "watch.rt-twin"], "{said}");
    for (r, (name, tid)) in runs.iter().zip(&threads) {
        assert_eq!(r["status"], "complete");
        let doc = lab.export_json(r["id"].as_i64().unwrap());
        assert_valid_export(&doc);
        let params = &doc["run"]["params"];
        assert_eq!((params["comm"].as_str(), params["tid"].as_u64()), (Some(name.as_str()), Some(u64::from(*tid))));
        assert_eq!((params["sched_policy"].as_str(), params["sched_priority"].as_u64()), (Some("fifo"), Some(80)));
        assert_eq!(params["allowed_cpus"], serde_json::json!([0]), "{params}");
        assert_eq!(params["kernel_priority"], 19, "{params}");
        assert!(doc["threads"][0]["count"].as_u64() > Some(100), "its wake-ups, timed: {doc}");
    }
    let show = lab.ok(&["show", &runs[0]["id"].to_string()]);
    assert!(show.contains("P:fifo/80"), "{show}");
    let whose = format!("watched (--pid {pid}): thread {} rt-periodic of process {pid}, fifo/80, CPUs 0", threads[0].1);
    assert!(show.contains(&whose), "{show}");
    assert!(show.contains("mistake 1: rt-periodic") && show.contains("share CPU 0"), "{show}");
    // Its absolute sleeps timed to the time they asked; its long waits looked up (or none).
    assert!(show.contains("late after its absolute sleeps (its period's jitter), µs: p50 "), "{show}");
    let every = show.split("periodic: every ").nth(1).and_then(|r| r.split(' ').next()?.parse::<f64>().ok());
    assert!(every.is_some_and(|us| (900.0..1100.0).contains(&us)), "a 1 ms period inferred: {show}");
    assert!(show.contains("no wait over 100 µs") || show.contains("waits over 100 µs; what ran instead: "), "{show}");
    let both = format!("one watch with runs {}, {} (a thread each)", runs[0]["id"], runs[1]["id"]);
    assert!(show.contains(&both), "{show}");
}

/// A watch killed (SIGKILL: nothing of it runs after) keeps what it saw up to its last second:
/// its runs, begun when it began and written each second, read as aborted with their samples.
#[needs(root, btf, native, "cc")]
#[test]
fn a_killed_watch_keeps_what_it_saw_up_to_its_last_second() {
    let lab = Lab::alone();
    let (mut app, threads) = start_rtdemo(&lab, &["-D", "5"], 1);
    let mut watch = lab.cmd(&["watch", "--pid", &app.id().to_string(), "-D", "60s"]);
    let mut watch = watch.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2600));
    watch.kill().unwrap();
    watch.wait().unwrap();
    assert!(app.wait().unwrap().success());
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((runs[0]["probe"].as_str(), runs[0]["status"].as_str()), (Some("watch.rt-periodic"), Some("aborted")));
    let doc = lab.export_json(runs[0]["id"].as_i64().unwrap());
    assert_eq!(doc["run"]["params"]["tid"].as_u64(), Some(u64::from(threads[0].1)));
    // A second or two of a 1 ms period.
    assert!(doc["threads"][0]["count"].as_u64() > Some(500), "its wake-ups to its last write: {doc}");
}

/// SIGINT to `child`, as a Ctrl-C sends it.
fn interrupt(child: &Child) {
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
}

/// A watch's findings: each rule, with the names of the threads it names.
type Found = Vec<(String, Vec<String>)>;

/// Watches rtdemo with `mistake` (none: clean) `times` times, a second each (three for
/// throttling), under a label of the mode; what each watch found.
fn findings_of(lab: &Lab, mistake: Option<&str>, times: usize) -> Vec<Found> {
    (0..times)
        .map(|_| {
            // Throttling comes about 950 ms after the spinning begins (the RT runtime, or the
            // fair server's deferral): that watch is longer.
            let (lasts, watched) = match mistake {
                Some("throttle") => ("3.5", "3s"),
                _ => ("2", "1s"),
            };
            let mut args = vec!["-D", lasts];
            args.extend(mistake);
            let threads = match mistake {
                Some("share" | "block" | "throttle") => 2,
                Some("migrate" | "inversion") => 3,
                _ => 1,
            };
            let (mut app, _) = start_rtdemo(lab, &args, threads);
            let label = format!("rtdemo-{}", mistake.unwrap_or("clean"));
            let pid = app.id().to_string();
            let said = lab.ok(&["watch", "--pid", &pid, "-D", watched, "--label", &label, "--explain-above", "100"]);
            assert!(app.wait().unwrap().success());
            let from = said.find("\nmistakes found").map_or(said.len(), |at| at);
            said[from..]
                .lines()
                .filter_map(|l| {
                    let (rule, text) = l.split_once("] ")?;
                    let rule = rule.rsplit_once('[')?.1.to_string();
                    let names = [
                        "rt-periodic",
                        "rt-twin",
                        "intruder-0",
                        "intruder-1",
                        "pipe-feeder",
                        "lock-holder",
                        "cpu-hog",
                        "starved",
                    ];
                    Some((rule, names.iter().filter(|n| text.contains(*n)).map(|n| n.to_string()).collect()))
                })
                .collect()
        })
        .collect()
}

/// A mode of the demonstration application and the one finding it must give, if any.
struct Mode {
    mistake: Option<&'static str>,
    finding: Option<(&'static str, &'static [&'static str])>,
}

const MODES: [Mode; 8] = [
    Mode { mistake: None, finding: None },
    Mode { mistake: Some("fault"), finding: Some(("pagefault", &["rt-periodic"])) },
    Mode { mistake: Some("migrate"), finding: Some(("migration", &["rt-periodic"])) },
    Mode { mistake: Some("share"), finding: Some(("shared-priority", &["rt-periodic", "rt-twin"])) },
    Mode { mistake: Some("sleep"), finding: Some(("sleep", &["rt-periodic"])) },
    Mode { mistake: Some("block"), finding: Some(("block", &["rt-periodic", "pipe-feeder"])) },
    // The middle thread that kept the holder from running is named from its long waits.
    Mode { mistake: Some("inversion"), finding: Some(("inversion", &["rt-periodic", "lock-holder", "cpu-hog"])) },
    // The tasks that ran instead are named: the application's own starved thread among them.
    Mode { mistake: Some("throttle"), finding: Some(("throttle", &["rt-periodic", "starved"])) },
];

/// Each mistake of the demonstration application is found with the threads it concerns, in
/// every watch; the clean application has none.
fn each_mistake_is_found_every_time(times: usize) {
    let lab = Lab::alone();
    for mode in MODES {
        let want: Found = mode
            .finding
            .iter()
            .map(|(rule, names)| (rule.to_string(), names.iter().map(|n| n.to_string()).collect()))
            .collect();
        for (i, found) in findings_of(&lab, mode.mistake, times).iter().enumerate() {
            assert_eq!(found, &want, "{:?}, watch {} of {times}", mode.mistake, i + 1);
        }
    }
    // The report's findings say the mistakes (a label for each mode), each once though two runs
    // name the shared CPU.
    let said = lab.ok(&["report", "--findings"]);
    let shared = said.lines().filter(|l| l.contains("Mistake in the watched application") && l.contains("share CPU"));
    assert_eq!(shared.count(), 1, "{said}");
    assert!(said.contains("page faults while watched") && said.contains("moved between CPUs"), "{said}");
}

#[needs(root, btf, native, two_cpus, "cc")]
#[test]
fn each_mistake_of_the_demonstration_application_is_found_and_the_clean_one_has_none() {
    each_mistake_is_found_every_time(1);
}

#[needs(
    full = "ten watches of each of eight modes of the demonstration application",
    root,
    btf,
    native,
    two_cpus,
    "cc"
)]
#[test]
fn each_mistake_is_found_in_ten_of_ten_watches() {
    each_mistake_is_found_every_time(10);
}
