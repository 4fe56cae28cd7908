//! `noise --classify`: every gap classified by what ran in it, checked against a real-time
//! busy loop of known times, and the instance never left behind.

use crate::breach::{
    begun, held_hog, hog_bursts, measuring, only_the_breach_tracer_was_left, probe_ended_by, release, succeeded,
    traced, tracing_state,
};
use crate::helpers::*;
use rtbench_testkit::needs;

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn gaps_during_a_fifo_burst_are_the_burst_s_task_never_the_hardware() {
    let (lab, before) = traced();
    // Gaps over 500 µs only, so the store keeps every one; the breach tracer beside it: its
    // window gives the run's start on CLOCK_MONOTONIC.
    let json = lab.path("run.json");
    let run = [
        "noise",
        "-a",
        "1",
        "--threshold",
        "500",
        "--classify",
        "-D",
        "60s",
        "-q",
        "--breach",
        "1500",
        "--breach-max",
        "1",
    ];
    let mut hog = held_hog(&lab, "1", "7", "0.002");
    let running = measuring(&lab, lab.cmd(&[&run[..], &["--json", json.to_str().unwrap()]].concat()));
    // Once the run measures (a busy machine may take seconds to set it up), a FIFO-99 burst
    // of 2 ms once a second on CPU 1, seven times; the run is ended after the last, so all
    // seven fall inside it however late a loaded machine starts either (CI once saw a
    // fixed-length run end before the bursts did).
    release(&mut hog);
    let bursts = hog_bursts(&mut hog);
    assert!(std::process::Command::new("kill").args(["-INT", &running.id().to_string()]).status().unwrap().success());
    let out = running.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "ended by SIGINT, saved: {}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_valid_export(&doc);
    let b = &doc["breaches"][0];
    let start = b["mono_ns"].as_u64().expect("a breach during a burst") - b["t_ns"].as_u64().unwrap();
    let csv = lab.ok(&["export", &lab.last_run().to_string(), "--format", "samples"]);
    // How much of a gap (offset into the run, length) the bursts took, and whether they took any.
    let of_bursts = |at: u64, ns: u64| -> u64 {
        bursts.iter().map(|&(a, end)| (start + at + ns).min(end).saturating_sub((start + at).max(a))).sum()
    };
    let seconds = run_seconds(&doc).ceil() as u64;
    let inside = bursts.iter().filter(|&&(a, end)| a >= start && end <= start + seconds * 1_000_000_000).count();
    assert_eq!(inside, bursts.len(), "every burst {bursts:?} inside the run from {start} ({seconds} s)");
    // The bursts' gaps, each as long as the CPU was taken: those a burst took at least half of.
    // A gap mostly another task's is that task's, rightly (in CI a compiler of a test running
    // beside this one held CPU 1 for 53 ms around a 2 ms burst).
    let overlapping: Vec<u64> = csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<u64> = l.split(',').map(|v| v.parse().unwrap()).collect();
            (of_bursts(f[1], f[2]) * 2 >= f[2]).then_some(f[2])
        })
        .collect();
    // A burst that begins while the loop pauses under RT throttling (14.5–18.1 ms of every
    // 100–104 ms here) leaves no gap: the loop measures again from when it runs, and a pause is
    // not noise. That hides about one burst in six, each on its own (the pauses are drawn at
    // random); three of four inside the run hidden at once are 1.5 %, five of six 0.05 %.
    assert!(overlapping.len() >= 2, "gaps during the bursts: {overlapping:?} ({inside} bursts inside the run)");
    let totals = doc["run"]["params"]["classify"]["threads"][0]["totals"].as_array().expect("classified").clone();
    let hog_pid = format!("pid {},", hog.id());
    let named: u64 = totals
        .iter()
        .filter(|t| t["class"] == "thread" && t["name"] == "python3")
        .filter(|t| t["detail"].as_str().is_some_and(|d| d.starts_with(&hog_pid) && d.ends_with(" 99")))
        .map(|t| t["count"].as_u64().unwrap())
        .sum();
    assert!(named * 10 >= overlapping.len() as u64 * 9, "{named} of {} named: {totals:?}", overlapping.len());
    // The bursts' gaps are among the thread's longest, kept each with its class: none of
    // them went to the hardware (a host stall elsewhere in the run may be longer still).
    let longest =
        doc["run"]["params"]["classify"]["threads"][0]["longest"].as_array().expect("the longest gaps").clone();
    // As above, a gap is the bursts' where they took at least half of it: a hypervisor stall
    // that overlaps a burst and is longer than it is the hardware's, rightly.
    let kept = |g: &serde_json::Value| {
        let (at, ns) = (g["t_ns"].as_u64().unwrap(), g["ns"].as_u64().unwrap());
        of_bursts(at, ns) * 2 >= ns
    };
    let burst_gaps: Vec<_> = longest.iter().filter(|g| kept(g)).collect();
    // The list holds the longest gaps: every burst's gap longer than its shortest is in it (in a
    // storm of hypervisor stalls, 16 of 5–17 ms were seen here, all longer than the bursts').
    let shortest = longest.iter().filter_map(|g| g["ns"].as_u64()).min().unwrap_or(0);
    let belong = overlapping.iter().filter(|&&ns| ns > shortest).count().min(2);
    assert!(burst_gaps.len() >= belong, "{belong} of the bursts' gaps among the longest: {longest:?}");
    assert!(burst_gaps.iter().all(|g| g["class"] != "hardware"), "a burst's gap went to the hardware: {burst_gaps:?}");
    assert_intervals_add_up(&doc, &totals, seconds);
    // Counted as rtla osnoise counts them: each gap put down to the busy loop holds at least one
    // time it was switched in (an IRQ in a gap over 500 µs is likely, not certain).
    let events = &doc["run"]["params"]["classify"]["threads"][0]["interference"];
    assert!(events["thread"].as_u64().is_some_and(|n| n >= named), "{named} gaps named the loop: {events}");
    // osnoise's HW, the gaps in which nothing ran, are some of the HW/hypervisor class's.
    let class_hw: u64 = totals.iter().filter(|t| t["class"] == "hardware").map(|t| t["count"].as_u64().unwrap()).sum();
    assert!(events["hw"].as_u64().is_some_and(|n| n <= class_hw), "HW/hypervisor gaps {class_hw}: {events}");
    // And their time as osnoise's events add it up: a gap put down to a task is at least half
    // that task's (less the untraced edges allowed each of its stretches, 10 µs, and a µs of
    // stamp); the gaps in which nothing ran are some of the HW/hypervisor class's time.
    let time = &events["time"];
    let of = |class: &str, field: &str| -> u64 {
        totals.iter().filter(|t| t["class"] == class).map(|t| t[field].as_u64().unwrap()).sum()
    };
    let ns = |k: &str| time[k].as_u64().unwrap_or_else(|| panic!("no {k} time: {events}"));
    assert!(ns("thread") * 2 + of("thread", "count") * 22_000 >= of("thread", "ns"), "{events}: {totals:?}");
    assert!(ns("hw") <= of("hardware", "ns") && (ns("hw") > 0) == (events["hw"].as_u64() > Some(0)), "{events}");
    // The programs' own time on the measured CPU: a run at least per record they handed on.
    let classify = &doc["run"]["params"]["classify"];
    let (runs, records) = (classify["program_runs"].as_u64(), classify["records"].as_u64());
    assert!(runs.zip(records).is_some_and(|(r, n)| r >= n && n > 0), "{classify}");
    assert!(classify["programs_ns"].as_u64().is_some_and(|ns| ns > 0), "{classify}");
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    // The thread line names the thread with the most noise: the hog, unless a load of a test
    // running beside this one (a compiler on CPU 1) took more; the hog's gaps are listed anyway.
    assert!(shown.lines().any(|l| l.starts_with("thread ")), "a thread line: {shown}");
    let hog_named = format!("python3 (pid {}, ", hog.id());
    assert!(shown.lines().filter(|l| l.starts_with("0 ")).any(|l| l.contains(&hog_named)), "{shown}");
    let kept_line = shown.lines().skip_while(|l| *l != "longest gaps").nth(2).expect("the longest gaps shown");
    assert!(kept_line.starts_with("0 "), "a line per gap, its thread first: {shown}");
    assert!(shown.lines().any(|l| l.starts_with("HW/hypervisor")), "{shown}");
    let events_line = shown.lines().find(|l| l.starts_with("interfering events/s, as rtla osnoise counts them: IRQ "));
    assert!(events_line.is_some_and(|l| l.contains("  HW ")), "{shown}");
    assert!(
        shown.lines().any(|l| l.starts_with("their time, µs/s, as osnoise's noise events add it up: IRQ ")),
        "{shown}"
    );
    let own_line = shown.lines().find(|l| l.starts_with("the classification's BPF programs ran "));
    assert!(own_line.is_some_and(|l| l.ends_with("`rtbench noise` without --classify")), "{shown}");
    // Where the events came from is said: BPF here, an ftrace instance where BPF cannot load.
    assert!(shown.lines().any(|l| l.starts_with("noise classified from BPF")), "{shown}");
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join("figures").join("noise-classes.svg")).expect("the noise-by-class bar");
    assert!(svg.contains("noise: noise by class") && svg.contains("HW/hypervisor"), "{svg}");
    // How much of each bar is the classification's own programs' is on the bar's line.
    let own = svg.split(" % its BPF's own").next().and_then(|s| s.rsplit(' ').next());
    assert!(own.is_some_and(|p| p.parse::<f64>().is_ok_and(|p| p > 0.0)), "{svg}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("share of the noise by what ran in each gap"), "the page shows it");
    let over_time = out.join("figures").join(format!("noise-classes-{}.svg", lab.last_run()));
    let svg = std::fs::read_to_string(over_time).expect("the run's noise by class over time");
    assert!(svg.contains(r#"class="noise-thread""#), "the bursts' task is drawn over time: {svg}");
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

/// The export's per-interval counts ("per class per second") add up to the run's totals of
/// each class, and every interval lies within the run of `seconds` (1 s intervals, the first 0).
fn assert_intervals_add_up(doc: &serde_json::Value, totals: &[serde_json::Value], seconds: u64) {
    let intervals = doc["noise_intervals"].as_array().expect("the gaps per interval");
    for class in ["irq", "softirq", "thread", "hardware", "unknown"] {
        let sum = |rows: &[serde_json::Value], field: &str| -> u64 {
            rows.iter().filter(|r| r["class"] == class).map(|r| r[field].as_u64().unwrap()).sum()
        };
        let want = (sum(totals, "count"), sum(totals, "ns"));
        assert_eq!((sum(intervals, "count"), sum(intervals, "ns")), want, "{class}: {intervals:?}");
    }
    let within = |r: &serde_json::Value| r["index"].as_u64().unwrap() < seconds;
    assert!(intervals.iter().all(within), "a {seconds} s run: {intervals:?}");
    assert!(intervals.iter().any(|r| r["class"] == "thread"), "the bursts' intervals: {intervals:?}");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_killed_classified_run_leaves_nothing_the_next_command_must_remove_but_the_breach_s_instance() {
    let (lab, before) = traced();
    let state = lab.path("state");
    // The classification's BPF programs and maps are fds: the kernel frees them with the process.
    let run = ["noise", "-a", "1", "--classify", "--breach", "100000"];
    let pid = probe_ended_by(&lab, &state, "-KILL", &run);
    only_the_breach_tracer_was_left(&lab, &state, pid, "classify");
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn a_killed_classified_run_keeps_what_its_gaps_were_put_down_to_so_far() {
    let (lab, before) = traced();
    let mut cmd = lab.cmd(&["noise", "-a", "1", "--classify", "--threshold", "5", "-D", "60s", "-q"]);
    cmd.env("RTBENCH_STATE_DIR", lab.path("state"));
    let mut run = begun(&lab, cmd);
    // Its checkpoints store the classification so far: wait for one with a classified gap.
    let id = lab.last_run().to_string();
    let classified = |doc: &serde_json::Value| {
        let totals = doc["run"]["params"]["classify"]["threads"][0]["totals"].as_array().cloned().unwrap_or_default();
        totals.iter().map(|t| t["count"].as_u64().unwrap()).sum::<u64>()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while classified(&lab.export_json(id.parse().unwrap())) == 0 {
        assert!(std::time::Instant::now() < until, "no checkpoint stored a classified gap within 20 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let doc = lab.export_json(id.parse().unwrap());
    assert!(classified(&doc) > 0, "the classification so far outlives the process: {}", doc["run"]["params"]);
    let shown = lab.ok(&["show", &id]);
    assert!(shown.contains("noise by class (what ran in each gap)"), "{shown}");
    assert!(shown.lines().any(|l| l.starts_with("noise classified from BPF")), "{shown}");
    lab.ok(&["runs"]);
    assert_eq!(tracing_state(), before, "SIGKILL and one more command: tracing is as it was");
}

#[test]
fn classify_is_refused_for_a_probe_without_gaps() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["timer", "--classify", "-l", "10"]), "--classify");
}

/// A stored classified run of `label`: 10 s long, its gaps `totals` (class, ns).
fn classified(lab: &Lab, label: &str, totals: &[(&str, u64)], programs_ns: u64) {
    lab.ok(&["synthetic", "-l", "2000", "-q", "--label", label]);
    let rows: Vec<String> = totals
        .iter()
        .map(|(class, ns)| {
            format!(
                r#"{{"class":"{class}","name":"","detail":null,"count":4,"ns":{ns},"max_ns":{ns},"over_budget":0}}"#
            )
        })
        .collect();
    let classify = format!(
        r#"{{"lost_events":0,"budget_ns":null,"skipped":null,"programs_ns":{programs_ns},"threads":[{{"thread":0,"totals":[{}]}}]}}"#,
        rows.join(",")
    );
    crate::findings::sql(
        lab,
        &format!("UPDATE runs SET params = json_set(params, '$.duration_s', 10.0, '$.classify', json('{classify}')) WHERE id = ?1"),
        lab.last_run(),
    );
}

#[test]
fn compare_gives_each_class_s_share_of_the_noise_and_noise_per_second_in_both_labels() {
    let lab = Lab::new();
    // k-a: 1 ms of IRQ and 3 ms nothing the kernel saw in 10 s; k-b: 2 ms of IRQ, 2 ms of a thread;
    // the classification's programs took 0.4 ms of k-a's and 0.8 ms of k-b's.
    classified(&lab, "k-a", &[("irq", 1_000_000), ("hardware", 3_000_000)], 400_000);
    classified(&lab, "k-b", &[("irq", 2_000_000), ("thread", 2_000_000)], 800_000);
    let text = lab.ok(&["compare", "--baseline", "k-a", "k-b"]);
    let section = text.split_once("noise by class").unwrap_or_else(|| panic!("no section: {text}")).1;
    let row = |class: &str| -> Vec<String> {
        let line = section
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(class))
            .unwrap_or_else(|| panic!("{class}: {text}"));
        line.split_whitespace().skip(3).map(String::from).collect()
    };
    assert_eq!(row("IRQ"), ["25.0", "50.0", "100", "200"], "{text}");
    assert_eq!(row("HW/hypervisor"), ["75.0", "0.0", "300", "0"], "{text}");
    assert_eq!(row("thread"), ["0.0", "50.0", "0", "200"], "{text}");
    assert!(!section.lines().any(|l| l.contains("softirq")), "a class neither label saw is left out: {text}");
    let own = section.lines().find(|l| l.contains("its BPF's own ")).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(own.split_whitespace().skip(5).collect::<Vec<_>>(), ["10.0", "20.0", "40", "80"], "{text}");
    assert!(text.starts_with("(µs)\n"), "the µs rows come first, as before: {text}");
    let doc: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", "--baseline", "k-a", "k-b", "--json"])).unwrap();
    assert_matches_schema(&doc, "compare.schema.json");
    let pair = &doc["noise_classes"][0];
    assert_eq!(
        (pair["probe"].as_str(), pair["load"].as_str()),
        (Some("synthetic"), Some(doc["pairs"][0]["load"].as_str().unwrap()))
    );
    let hw = pair["classes"].as_array().unwrap().iter().find(|c| c["class"] == "hardware").expect("hardware");
    assert_eq!((hw["baseline"]["share"].as_f64(), hw["baseline"]["ns_per_s"].as_f64()), (Some(0.75), Some(300_000.0)));
    assert_eq!((hw["label"]["share"].as_f64(), hw["label"]["ns_per_s"].as_f64()), (Some(0.0), Some(0.0)));
    let own = &pair["programs"];
    assert_eq!((own["baseline"]["share"].as_f64(), own["label"]["ns_per_s"].as_f64()), (Some(0.1), Some(80_000.0)));
}

#[test]
fn compare_of_runs_not_classified_has_no_noise_section() {
    let lab = Lab::new();
    for label in ["k-a", "k-b"] {
        lab.ok(&["synthetic", "-l", "2000", "-q", "--label", label]);
    }
    assert!(!lab.ok(&["compare", "--baseline", "k-a", "k-b"]).contains("noise by class"));
    let doc: serde_json::Value =
        serde_json::from_str(&lab.ok(&["compare", "--baseline", "k-a", "k-b", "--json"])).unwrap();
    assert!(doc.get("noise_classes").is_none(), "{doc}");
}

/// The run-level warning `--breach` gives any probe, recomputed from the breaches it stored:
/// a traced sample whose delay was mostly untraced is the hypervisor's or the hardware's.
fn expected_unseen(doc: &serde_json::Value, threshold_ns: u64) -> Option<(u64, u64)> {
    let budget = doc["run"]["system"]["cpu_mhz"].as_f64().map(|m| (1e8 / m) as u64);
    // A quiet run may have no breach at all: the export then has none, and no warning is due.
    let breaches = doc["breaches"].as_array().map_or(&[][..], |b| b.as_slice());
    let unseen_share = |b: &serde_json::Value| -> f64 {
        let causes = b["causes"].as_array().unwrap();
        causes.iter().filter(|c| c["kind"] == "untraced").map(|c| c["share"].as_f64().unwrap()).sum()
    };
    let (unseen, kernel): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) =
        breaches.iter().partition(|b| unseen_share(b) > 0.5);
    let latency = |b: &&serde_json::Value| b["latency_ns"].as_u64().unwrap();
    let kernel_max = kernel.iter().map(latency).max().unwrap_or(0).max(threshold_ns);
    if unseen.iter().map(latency).max().unwrap_or(0) <= kernel_max {
        return None;
    }
    let over = |bs: &[&serde_json::Value]| budget.map_or(0, |b| bs.iter().filter(|x| latency(x) > b).count() as u64);
    Some((over(&unseen), over(&unseen) + over(&kernel)))
}

/// A traced run of `probe` (with `--breach THRESHOLD_US`, its JSON export); `--breach` too.
fn breach_run(
    lab: &Lab,
    probe: &[&str],
    threshold_us: &str,
    hog: Option<&mut std::process::Child>,
) -> serde_json::Value {
    let json = lab.path("run.json");
    // Room for every breach of 5 s: in a storm of hypervisor stalls (34 a second over 1 ms, seen
    // here), 30 were all taken in the first second, before the hog's bursts began.
    let traced = ["-a", "1", "--breach", threshold_us, "--breach-max", "300", "-D", "5s", "-q", "--json"];
    let running = measuring(lab, lab.cmd(&[probe, &traced[..], &[json.to_str().unwrap()]].concat()));
    // A held busy loop's bursts begin once the run measures (its first checkpoint): a loaded
    // machine may take seconds to set the run up and start its threads, and bursts before them
    // would delay nothing measured (the split's burst test saw exactly that under the fast tier).
    if let Some(hog) = hog {
        release(hog);
    }
    succeeded(running);
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[needs(root, tracefs, "python3", two_cpus)]
#[test]
fn breached_samples_the_kernel_did_not_see_are_counted_apart_in_any_probe_s_warning() {
    let (lab, before) = traced();
    // FIFO-99 bursts of 2 ms on the timer's CPU: breaches of a task the kernel ran.
    let mut hog = held_hog(&lab, "1", "3", "0.002");
    let timer = breach_run(&lab, &["timer", "-t", "1"], "1000", Some(&mut hog));
    hog_bursts(&mut hog);
    let breaches = timer["breaches"].as_array().expect("breaches traced");
    let named = breaches.iter().filter(|b| b["causes"][0]["name"] == "python3").count();
    assert!(named >= 1, "the bursts' task delayed a wake-up: {breaches:?}");
    assert_unseen_said(&timer, 1_000_000);
    // The noise probe, not classified: its breaches over 150 µs on this VM are often stalls
    // the kernel did not see (issue 27 traced one of 1.36 ms).
    assert_unseen_said(&breach_run(&lab, &["noise"], "150", None), 150_000);
    assert_eq!(tracing_state(), before, "tracing is as it was");
}

/// The run's warnings say what its stored breaches show of time the kernel did not see.
fn assert_unseen_said(doc: &serde_json::Value, threshold_ns: u64) {
    let warnings: Vec<&str> = doc["run"]["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let said = warnings.iter().find(|w| w.contains("fell in time the kernel did not see"));
    match expected_unseen(doc, threshold_ns) {
        // On this VM the hypervisor may stall the CPU: then the warning counts those samples.
        Some((unseen, over)) => {
            let w = said.unwrap_or_else(|| panic!("samples the kernel did not see, no warning: {warnings:?}"));
            let counted = format!("{unseen} of the {over} traced samples above the rule-of-thumb budget");
            assert!(w.contains(&counted) || doc["run"]["system"]["cpu_mhz"].is_null(), "{counted}: {w}");
            assert!(w.contains("the largest the kernel is responsible for is"), "{w}");
        }
        None => assert!(said.is_none(), "the kernel made the largest traced sample: {warnings:?}"),
    }
    assert!(!warnings.iter().any(|w| w.contains("explains none")), "{warnings:?}");
}

/// Without tracing, steal time is all a run has to set the hypervisor's stalls apart: for no
/// probe may its warning call the largest latencies the kernel's because steal missed them.
#[test]
fn without_tracing_no_probe_s_warning_says_steal_explains_none() {
    let lab = Lab::alone();
    for probe in [&["timer", "-a", "1"][..], &["gtod", "-a", "1"], &["noise", "-a", "1"]] {
        lab.ok(&[probe, &["-D", "2s", "-q"]].concat());
        let doc = lab.export_json(lab.last_run());
        assert!(doc["breaches"].is_null() && doc["run"]["params"]["classify"].is_null(), "untraced: {doc}");
        for w in doc["run"]["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()) {
            // The trace's sentence needs a trace; steal's own may set stolen intervals apart.
            assert!(!w.contains("explains none") && !w.contains("the kernel did not see"), "{}: {w}", probe[0]);
            if w.contains("steal time") && w.contains("none of it in the intervals") {
                assert!(w.contains("too coarse") && w.contains("--breach"), "{}: {w}", probe[0]);
            }
        }
    }
}
