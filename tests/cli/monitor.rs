//! `rtbench monitor`: windows stored as runs, retention, signals, and the /metrics endpoint.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// A monitor that is killed however the test ends.
struct Monitor(Child);

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Monitor {
    fn start(lab: &Lab, args: &[&str]) -> Monitor {
        let mut all = vec!["monitor", "-a", "0", "--label", "mon"];
        all.extend_from_slice(args);
        Monitor(lab.cmd(&all).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap())
    }

    /// The address it serves on, from its first line.
    fn address(&mut self) -> String {
        let mut line = String::new();
        BufReader::new(self.0.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
        let at = line.find("http://").unwrap_or_else(|| panic!("no address in: {line}"));
        line[at + 7..].trim_end().trim_end_matches("/metrics").to_string()
    }

    fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill").args([sig, &self.0.id().to_string()]).status().unwrap();
        assert!(ok.success(), "kill {sig}");
    }

    fn wait(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.0.try_wait().unwrap() {
                return s.code();
            }
            assert!(Instant::now() < deadline, "the monitor did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One GET (a test client: the server side is a maintained crate); (status, body).
pub fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// The value of the exposition line that starts with `series`.
pub fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
}

fn monitor_runs(lab: &Lab) -> Vec<serde_json::Value> {
    lab.runs().as_array().unwrap().iter().filter(|r| r["label"] == "mon").cloned().collect()
}

#[test]
fn windows_are_stored_as_runs_of_their_own_and_sigterm_keeps_the_current_one() {
    let lab = Lab::new();
    let mut m = Monitor::start(&lab, &["--window", "2s", "--listen", "off"]);
    lab.wait_for_runs(4, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1200));
    m.signal("-TERM");
    assert_eq!(m.wait(Duration::from_secs(20)), Some(143));
    let runs = monitor_runs(&lab);
    assert!(runs.len() >= 4, "{runs:?}");
    let (closed, last) = runs.split_at(runs.len() - 1);
    for r in closed {
        assert_eq!(r["status"], "complete", "{r}");
        let doc = lab.export_json(r["id"].as_i64().unwrap());
        let count = doc["total"]["count"].as_u64().unwrap();
        // A window holds its own samples only: about 2 000 (2 s at 1 ms, more when the runner
        // rolls it late on a busy machine), where everything since the start would be 4 000 and
        // more from the second window on.
        assert!(count > 0 && count < 3_000, "window {} holds {count} samples", r["id"]);
        assert_eq!(doc["threads"][0]["cpu"], 0);
        // Every window says how its thread ran, not only the last.
        assert_eq!(
            doc["run"]["params"]["ran"].as_array().map(Vec::len),
            Some(1),
            "window {}: {}",
            r["id"],
            doc["run"]["params"]
        );
    }
    // And all windows together hold no more than one sample per ms from the first's start to
    // the last's end: no sample is counted in two windows.
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let span_ms: f64 = c
        .query_row(
            "SELECT (julianday(max(end)) - julianday(min(start))) * 86400000 FROM runs WHERE label = 'mon'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let counts: Vec<u64> =
        runs.iter().map(|r| lab.export_json(r["id"].as_i64().unwrap())["total"]["count"].as_u64().unwrap()).collect();
    let all: u64 = counts.iter().sum();
    assert!(all as f64 <= span_ms + 1.0, "windows {counts:?} hold {all} samples in {span_ms} ms");
    // Each window's envelope counts from its own start, as a run's does (1-s intervals here).
    // Windows lie on a grid from the monitor's start, so one the runner rolled late is followed
    // by a short one, which may end before any interval of its own does: such have none.
    let mut begun = Vec::new();
    for r in &closed[1..] {
        let first: Option<i64> = c
            .query_row("SELECT min(idx) FROM envelope WHERE run_id = ?1", [r["id"].as_i64().unwrap()], |row| row.get(0))
            .unwrap();
        assert!(first.is_none_or(|f| f <= 1), "window {} begins at interval {first:?}", r["id"]);
        begun.extend(first);
    }
    assert!(!begun.is_empty(), "a window after the first has intervals of its own: {runs:?}, counts {counts:?}");
    assert_eq!(last[0]["status"], "interrupted");
    let doc = lab.export_json(last[0]["id"].as_i64().unwrap());
    assert!(doc["total"]["count"].as_u64().unwrap() > 0, "the window SIGTERM cut short is stored");

    // The report draws every window's maximum, and a user's own run of the label is no window.
    lab.ok(&["timer", "-D", "1s", "-a", "0", "--label", "mon"]);
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join("figures/monitor-mon.svg")).unwrap();
    assert_eq!(svg.matches(r#"class="window-max""#).count(), runs.len(), "one point per window on CPU 0");
    assert!(svg.contains(&format!("CPU 0: {} windows", runs.len())), "{svg}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains(r#"<figure id="monitor-mon">"#) && page.contains("Long-term watch"));
}

#[test]
fn sigkill_loses_at_most_the_last_checkpoint_of_the_window() {
    let lab = Lab::new();
    let mut m = Monitor::start(&lab, &["--window", "1m", "--listen", "off"]);
    lab.wait_for_runs(1, Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(3));
    m.signal("-KILL");
    assert_eq!(m.wait(Duration::from_secs(10)), None);
    let run = &monitor_runs(&lab)[0];
    assert_eq!(run["status"], "aborted");
    let count = lab.export_json(run["id"].as_i64().unwrap())["total"]["count"].as_u64().unwrap();
    assert!(count >= 1_000, "the checkpoints of the first seconds survive, got {count}");
}

#[test]
fn retention_deletes_old_windows_and_never_a_run_of_ones_own() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "1", "-l", "100", "-q", "--label", "mon"]);
    let own = lab.last_run();
    let mut m = Monitor::start(&lab, &["--window", "1s", "--keep", "2s", "-D", "7s", "--listen", "off"]);
    assert_eq!(m.wait(Duration::from_secs(30)), Some(0));
    let ids: Vec<i64> = monitor_runs(&lab).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert!(ids.contains(&own), "the user's own run of the label stays: {ids:?}");
    assert!(!ids.contains(&(own + 1)), "the first window ended more than 2 s before the last: {ids:?}");
    assert!(ids.len() >= 2, "the recent windows stay: {ids:?}");
}

#[test]
fn metrics_need_the_token_and_count_every_sample_of_each_cpu() {
    let lab = Lab::new();
    let mut m = Monitor::start(&lab, &["--window", "2s", "--listen", "127.0.0.1:0", "--token", "s3cret"]);
    let addr = m.address();
    assert_eq!(get(&addr, "/metrics", None).0, 401);
    assert_eq!(get(&addr, "/metrics", Some("wrong")).0, 401);
    assert_eq!(get(&addr, "/other", Some("s3cret")).0, 404);
    // After the first window closed, the last window's maximum is shown too.
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let (status, body) = get(&addr, "/metrics", Some("s3cret"));
        assert_eq!(status, 200);
        if body.contains("window=\"last\"") {
            break body;
        }
        assert!(Instant::now() < deadline, "no closed window shown: {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let count = value(&body, "rtbench_latency_seconds_count{cpu=\"0\",probe=\"timer\"}").expect("a count for CPU 0");
    assert!(count >= 1_000.0, "the count runs on across windows: {count}");
    assert_eq!(value(&body, "rtbench_latency_seconds_bucket{le=\"+Inf\",cpu=\"0\",probe=\"timer\"}"), Some(count));
    let one_ms = value(&body, "rtbench_latency_seconds_bucket{le=\"0.001\",cpu=\"0\",probe=\"timer\"}").unwrap();
    let over = value(&body, "rtbench_over_threshold_total{cpu=\"0\",probe=\"timer\",threshold=\"0.001\"}").unwrap();
    assert_eq!(one_ms + over, count, "samples over 1 ms are the ones above the 1 ms bucket");
    assert!(value(&body, "rtbench_steal_seconds_total{cpu=\"0\"}").is_some(), "{body}");
    assert!(body.trim_end().ends_with("# EOF"));
}

// --split traces the kernel's timers (root), and the machine's tracing with them.
#[needs(root, tracefs, btf)]
#[test]
fn with_split_the_metrics_hold_the_irq_latency_beside_the_wake_up_latency() {
    let lab = Lab::alone();
    let mut m = Monitor::start(&lab, &["--split", "--window", "2s", "--listen", "127.0.0.1:0"]);
    let addr = m.address();
    let series = |name: &str| format!("{name}{{cpu=\"0\",probe=\"timer\"}}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let body = get(&addr, "/metrics", None).1;
        if body.contains("window=\"last\"") {
            break body;
        }
        assert!(Instant::now() < deadline, "no closed window shown: {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let count = value(&body, &series("rtbench_latency_seconds_count")).unwrap();
    let irq = value(&body, &series("rtbench_irq_latency_seconds_count")).expect(&body);
    assert!(irq > 0.0 && irq <= count, "IRQ latencies of matched wake-ups only: {irq} of {count}");
    let inf = "rtbench_irq_latency_seconds_bucket{le=\"+Inf\",cpu=\"0\",probe=\"timer\"}";
    assert_eq!(value(&body, inf), Some(irq));
    let (irq_sum, sum) = (
        value(&body, &series("rtbench_irq_latency_seconds_sum")),
        value(&body, &series("rtbench_latency_seconds_sum")),
    );
    assert!(irq_sum.unwrap() <= sum.unwrap(), "a wake-up's IRQ part is within it");
    // Ended as a user would: a killed split run's instance would be removed (and said) by the
    // next rtbench command, another test's.
    m.signal("-TERM");
    assert_eq!(m.wait(Duration::from_secs(20)), Some(143));
    // The long-term plot draws each window's largest IRQ latency beside its largest latency.
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join("figures/monitor-mon.svg")).unwrap();
    let (windows, irq) =
        (svg.matches(r#"class="window-max""#).count(), svg.matches(r#"class="window-irq-max""#).count());
    assert!(irq >= 1 && irq <= windows, "the split windows' IRQ maxima ({irq} of {windows} windows): {svg}");
    assert!(svg.contains("CPU 0: largest IRQ latency per window (--split)"), "{svg}");
}

#[test]
fn bad_monitor_flags_are_refused_with_the_flag_named() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["monitor", "--threshold", "fast", "-D", "1s"]), "--threshold");
    assert_rejected(&lab.run(&["monitor", "--listen", "nowhere", "-D", "1s"]), "--listen");
    assert_rejected(&lab.run(&["monitor", "--noise", "-i", "500", "-D", "1s"]), "--interval");
    assert_rejected(&lab.run(&["monitor", "--noise-threshold", "5", "-D", "1s"]), "--noise");
}

#[test]
fn with_noise_the_windows_and_metrics_are_the_busy_loops_gaps() {
    let lab = Lab::alone();
    let mut m =
        Monitor::start(&lab, &["--noise", "--noise-threshold", "2", "--window", "1s", "--listen", "127.0.0.1:0"]);
    let addr = m.address();
    lab.wait_for_runs(2, Duration::from_secs(20));
    let (status, body) = get(&addr, "/metrics", None);
    assert_eq!(status, 200);
    let count = value(&body, "rtbench_latency_seconds_count{cpu=\"0\",probe=\"noise\"}").expect(&body);
    assert!(count > 0.0, "gaps of the busy loop are counted: {body}");
    assert!(!body.contains("probe=\"timer\""), "{body}");
    m.signal("-TERM");
    m.wait(Duration::from_secs(20));
    let runs = monitor_runs(&lab);
    assert!(runs.iter().all(|r| r["probe"] == "noise"), "{runs:?}");
    let first = lab.export_json(runs[0]["id"].as_i64().unwrap());
    assert_eq!(first["run"]["params"]["threshold_ns"], 2_000, "{}", first["run"]["params"]);
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn with_noise_and_classify_the_metrics_count_the_gaps_by_what_ran_in_them() {
    let (lab, before) = crate::breach::traced();
    let mut m = Monitor::start(
        &lab,
        &["--noise", "--classify", "--noise-threshold", "500", "--window", "2s", "--listen", "127.0.0.1:0"],
    );
    let addr = m.address();
    // FIFO-99 bursts of 2 ms on the watched CPU: gaps of a task the kernel ran, named.
    let mut hog = crate::breach::start_hog(&lab, "0", "4", "0.002");
    let task = "rtbench_noise_seconds_total{cpu=\"0\",class=\"thread\",name=\"python3\"}";
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        let body = get(&addr, "/metrics", None).1;
        if value(&body, task).is_some_and(|s| s > 0.0) {
            break body;
        }
        assert!(Instant::now() < deadline, "no gap of the bursts' task counted: {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    crate::breach::hog_bursts(&mut hog);
    let gaps = value(&body, "rtbench_noise_gaps_total{cpu=\"0\",class=\"thread\"}").expect(&body);
    assert!(gaps >= 1.0, "{body}");
    let all: f64 = body
        .lines()
        .filter(|l| l.starts_with("rtbench_noise_gaps_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    let count = value(&body, "rtbench_latency_seconds_count{cpu=\"0\",probe=\"noise\"}").expect(&body);
    assert!(all <= count, "only gaps the monitor measured are classified: {all} of {count}");
    assert!(body.contains("# TYPE rtbench_noise_seconds counter"), "{body}");
    m.signal("-TERM");
    assert_eq!(m.wait(Duration::from_secs(20)), Some(143));
    assert_eq!(crate::breach::tracing_state(), before, "tracing is as it was");
}

#[test]
fn classify_in_the_monitor_needs_noise() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["monitor", "--classify", "-D", "1s"]), "--noise");
}
