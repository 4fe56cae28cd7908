//! The study, the report, and the ways runs are compared: labels, import, merge, compare.

use std::process::Stdio;
use std::time::Duration;

use crate::helpers::*;
use rtbench_testkit::needs;

/// Synthetic runs under two labels, a loaded-looking one per label, so reports have content.
fn two_labels(lab: &Lab) {
    for (label, median) in [("k-base", "5000"), ("k-new", "6500")] {
        lab.ok(&["synthetic", "-t", "2", "-l", "200000", "-q", "--label", label, "--median", median]);
        lab.ok(&["synthetic", "-l", "100000", "-q", "--label", label, "--median", median, "--seed", "3"]);
    }
}

pub fn figures_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn report_writes_every_figure_as_svg_and_png_and_an_offline_page() {
    let lab = Lab::new();
    two_labels(&lab);
    let out = lab.path("rep");
    let said = lab.ok(&["report", "--label", "k-base", "--label", "k-new", "-o", out.to_str().unwrap()]);
    assert!(said.contains("index.html"), "{said}");
    let figs = figures_in(&out);
    let svgs: Vec<_> = figs.iter().filter(|f| f.ends_with(".svg")).collect();
    let pngs: Vec<_> = figs.iter().filter(|f| f.ends_with(".png")).collect();
    assert_eq!(svgs.len(), pngs.len(), "{figs:?}");
    // 2 labels × 1 probe: 3 probe figures and the tails overlaid per label, 3 per run
    // (histogram, scatter, tail) for 2 runs (newest per label), 1 per label.
    assert_eq!(svgs.len(), 4 + 3 * 2 + 2, "{figs:?}");
    let overlay =
        std::fs::read_to_string(out.join("figures").join(svgs.iter().find(|f| f.contains("-tails-")).unwrap()))
            .unwrap();
    for label in ["k-base", "k-new"] {
        assert!(overlay.contains(&format!("{label}: observed")), "the overlay names {label} in its legend");
    }
    assert_eq!(overlay.matches(r#"class="observed""#).count(), 2, "one observed tail per label");
    let tail =
        std::fs::read_to_string(out.join("figures").join(svgs.iter().find(|f| f.ends_with("-tail.svg")).unwrap()))
            .unwrap();
    assert!(
        tail.contains(r#"class="observed""#) && tail.contains(r#"class="max""#),
        "the tail figure draws the samples"
    );
    for p in &pngs {
        let bytes = std::fs::read(out.join("figures").join(p)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{p} is a PNG");
        assert!(bytes.len() > 2000, "{p} has content");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("<figure").count(), svgs.len(), "every figure is in the page");
    assert!(
        !html.contains("http://")
            || html.matches("http://").count() == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no network references"
    );
    assert!(!html.contains("<script src"), "no external script");
    for needle in ["Appendix III", "p99.9999", "Rule of thumb", "k-base", "k-new", "StdDev", "Aver"] {
        assert!(html.contains(needle), "page lacks {needle}");
    }
    assert!(html.contains("⚠"), "the synthetic runs' caveats (SCHED_OTHER) are shown");
}

#[needs("chromium")]
#[test]
fn report_renders_in_headless_chromium_without_errors() {
    let chromium = chromium().expect("chromium (the test needs it)");
    let lab = Lab::new();
    two_labels(&lab);
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let url = format!("file://{}", out.join("index.html").display());
    let shot = lab.path("shot.png");
    let run = |extra: &[String]| headless(chromium, &lab, &url, extra);
    let dom = run(&["--dump-dom".to_string(), "--virtual-time-budget=3000".to_string()]);
    let page = text(&dom.stdout);
    let figures = page.matches("<figure").count();
    assert!(figures >= 9, "the page has its figures: {figures}");
    let attr = |name: &str| page_attr(&page, name);
    assert_eq!(attr("data-figures"), figures, "every figure is an inline SVG");
    assert_eq!(attr("data-figures-drawn"), figures, "every figure was laid out with a size");
    let log = text(&dom.stderr);
    let console_errors: Vec<&str> =
        log.lines().filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught"))).collect();
    assert!(console_errors.is_empty(), "the page logged errors: {console_errors:?}");
    let shot_run = run(&[format!("--screenshot={}", shot.display()), "--window-size=1300,2400".to_string()]);
    assert!(shot.is_file(), "screenshot taken: {}", text(&shot_run.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.len() > 20_000, "the screenshot shows something ({} bytes)", png.len());
    // Keep the picture for people: CI artifacts and the report reviewer look at it.
    let _ = std::fs::copy(&shot, std::env::temp_dir().join("rtbench-report-screenshot.png"));
}

#[test]
fn report_rejects_bad_selections_and_writes_nothing() {
    let lab = Lab::new();
    let out = lab.path("rep");
    let o = out.to_str().unwrap();
    assert_rejected(&lab.run(&["report", "-o", o]), "holds no runs");
    lab.ok(&["synthetic", "-l", "1000", "-q", "--label", "only"]);
    assert_rejected(&lab.run(&["report", "--label", "nope", "-o", o]), "unknown label 'nope'");
    assert_rejected(&lab.run(&["report", "--run", "77", "-o", o]), "no run with id 77");
    assert!(!out.exists(), "no report directory after an error");
    let leftovers: Vec<_> = std::fs::read_dir(lab.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn compare_prints_ratios_and_gates_on_fail_if() {
    let lab = Lab::new();
    two_labels(&lab);
    let table = lab.ok(&["compare", "--baseline", "k-base", "k-new"]);
    assert!(table.contains("p99.9999") && table.contains("ratio"), "{table}");
    // The new label's body is 30 % slower by construction.
    let fail = lab.run(&["compare", "--baseline", "k-base", "k-new", "--fail-if", "p50 > 1.2x"]);
    assert_eq!(fail.status.code(), Some(1), "{}", text(&fail.stdout));
    assert!(text(&fail.stdout).contains("FAIL: synthetic idle: p50"), "{}", text(&fail.stdout));
    let pass = lab.run(&["compare", "--baseline", "k-base", "k-new", "--fail-if", "p50 > 1.5x, max > 10s"]);
    assert_eq!(pass.status.code(), Some(0), "{}", text(&pass.stdout));
    assert_rejected(&lab.run(&["compare", "--baseline", "k-base", "k-new", "--fail-if", "p99 bigger 2"]), "--fail-if");
    assert_rejected(&lab.run(&["compare", "--baseline", "k-base", "nope"]), "unknown label 'nope'");
}

#[test]
fn exports_in_cyclictest_formats_import_back_with_the_same_counts() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-t", "2", "-l", "100000", "-q", "--label", "orig"]);
    let id = lab.last_run().to_string();
    let doc = lab.export_json(lab.last_run());
    for (format, file) in [("cyclictest-json", "ct.json"), ("cyclictest-hist", "ct.hist")] {
        let path = lab.path(file);
        lab.ok(&["export", &id, "--format", format, "--buckets", "400", "-o", path.to_str().unwrap()]);
        lab.ok(&["import", path.to_str().unwrap(), "--label", format]);
        let back = lab.export_json(lab.last_run());
        assert_valid_export(&back);
        assert_eq!(back["run"]["label"], format);
        for t in 0..2 {
            assert_eq!(back["threads"][t]["count"], doc["threads"][t]["count"], "{format}: every sample comes back");
            assert_eq!(
                back["threads"][t]["max_ns"].as_u64().unwrap() / 1000,
                doc["threads"][t]["max_ns"].as_u64().unwrap() / 1000,
                "{format}: the max survives to the µs"
            );
        }
        assert!(back["run"]["warnings"].to_string().contains("imported"), "an import says so");
    }
}

#[needs("cyclictest")]
#[test]
fn real_cyclictest_output_imports() {
    let lab = Lab::new();
    let json = lab.path("c.json");
    let hist = lab.path("c.hist");
    let out = std::process::Command::new("cyclictest")
        .args(["-t1", "-l", "500", "-i", "1000", "-q", "-h", "3000"])
        .arg(format!("--json={}", json.display()))
        .arg(format!("--histfile={}", hist.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for f in [&json, &hist] {
        lab.ok(&["import", f.to_str().unwrap(), "--label", "ct"]);
        assert_eq!(lab.export_json(lab.last_run())["total"]["count"], 500);
    }
}

#[test]
fn imports_of_the_wrong_thing_are_rejected() {
    let lab = Lab::new();
    let junk = lab.path("junk.txt");
    std::fs::write(&junk, "hello world\n").unwrap();
    assert_rejected(&lab.run(&["import", junk.to_str().unwrap(), "--label", "x"]), "not a cyclictest histogram");
    let other_json = lab.path("other.json");
    std::fs::write(&other_json, r#"{"a": 1}"#).unwrap();
    assert_rejected(&lab.run(&["import", other_json.to_str().unwrap(), "--label", "x"]), "not cyclictest --json");
    let broken = lab.path("broken.json");
    std::fs::write(&broken, "{ not json").unwrap();
    assert_rejected(&lab.run(&["import", broken.to_str().unwrap(), "--label", "x"]), "not valid JSON");
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty());
}

#[test]
fn merge_brings_another_stores_runs_once() {
    let (a, b) = (Lab::new(), Lab::new());
    a.ok(&["synthetic", "-l", "1000", "-q", "--label", "machine-a"]);
    b.ok(&["synthetic", "-l", "2000", "-q", "--label", "machine-b"]);
    b.ok(&["synthetic", "-l", "3000", "-q", "--label", "machine-b"]);
    let other = b.db();
    assert!(a.ok(&["merge", other.to_str().unwrap()]).contains("merged 2 runs"));
    assert!(a.ok(&["merge", other.to_str().unwrap()]).contains("merged 0 runs"), "merging twice adds nothing");
    let runs = a.runs();
    let labels: Vec<_> = runs.as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap().to_string()).collect();
    assert_eq!(labels, ["machine-a", "machine-b", "machine-b"]);
    assert_eq!(runs[2]["samples"], 3000, "results come along");
    assert_rejected(&a.run(&["merge", "/nonexistent.db"]), "does not exist");
}

#[needs(full = "a whole study with its loaded cells and sysbench (lab.rs holds a shorter one in the fast tier)")]
#[test]
fn a_short_study_stores_every_cell_and_reports_it() {
    let lab = Lab::alone_release();
    let out = lab.path("study-report");
    let tmp = lab.dir.path().to_str().unwrap();
    let said = lab.ok(&[
        "study",
        "--no-split",
        "--no-classify",
        "-D",
        "1s",
        "--settle",
        "500ms",
        "--label",
        "st",
        "-q",
        "--load",
        "cpu",
        "--tmpdir",
        tmp,
        "-o",
        out.to_str().unwrap(),
    ]);
    // The study's cells come from the probe registry: every probe with a study entry that can
    // run here, idle and loaded; timerlat only where the kernel has the tracer.
    let entries: Vec<&str> = rtbench::probe::REGISTRY.iter().filter(|p| p.in_study()).map(|p| p.name).collect();
    assert_eq!(
        entries,
        ["timer", "timerlat", "gtod", "pingpong", "response", "noise", "deadline", "ipc", "migrate", "pi"],
        "the probes the study runs"
    );
    let runnable = rtbench::probe::REGISTRY.iter().filter(|p| p.in_study() && (p.supported)().is_ok());
    let probes: Vec<&str> = runnable.map(|p| p.name).collect();
    let n = 2 * probes.len();
    assert!(said.contains(&format!("cell {n} of {n}")), "{said}");
    assert!(said.contains("Appendix III"), "{said}");
    let runs = lab.runs();
    let cells: Vec<(String, String)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["probe"].as_str().unwrap().into(), r["load"]["profile"].as_str().unwrap().into()))
        .collect();
    let mut want: Vec<(String, String)> =
        probes.iter().flat_map(|p| [(p.to_string(), "none".to_string()), (p.to_string(), "cpu".to_string())]).collect();
    // The last cell: every sysbench operation, idle.
    let ops = rtbench::sysbench::ops();
    want.extend(ops.iter().map(|o| (format!("sysbench.{}", o.name), "none".to_string())));
    assert_eq!(cells, want);
    assert!(runs.as_array().unwrap().iter().all(|r| r["label"] == "st" && r["status"] == "complete"));
    assert!(said.contains("== last cell: sysbench --quick, idle"), "{said}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("The price of real time"), "the report tables the throughput price");
    for probe in &probes {
        // A probe of several measurements draws each (`ipc-mutex`).
        let drawn = |f: &String| f.starts_with(&format!("{probe}-")) && f.ends_with("-nines.png");
        assert!(figures_in(&out).iter().any(drawn), "{probe} is in the report");
    }
}

#[test]
fn an_interrupted_study_keeps_its_cells_and_says_what_is_missing() {
    let lab = Lab::alone();
    let out = lab.path("study-report");
    let child = lab
        .cmd(&[
            "study",
            "--no-qualify",
            "--no-split",
            "--no-classify",
            "-D",
            "3s",
            "--settle",
            "500ms",
            "-q",
            "--load",
            "cpu",
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop it inside its second cell, whatever the start-up took.
    lab.wait_for_runs(2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(800));
    assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let result = child.wait_with_output().unwrap();
    let said = text(&result.stdout);
    assert_eq!(result.status.code(), Some(130), "{said}");
    assert!(said.contains("missing cells: gtod idle, gtod load cpu"), "{said}");
    let runs = lab.runs();
    let statuses: Vec<_> = runs.as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap().to_string()).collect();
    assert_eq!(statuses, ["complete", "interrupted"]);
    assert!(out.join("index.html").is_file(), "the report covers what was measured");
    // Within the 2 s a stop may take: the page and its SVGs, not the PNG copies (issue 29).
    assert!(said.contains("without their PNG copy: stopped by a signal"), "{said}");
    let figures = std::fs::read_dir(out.join("figures")).unwrap().flatten().map(|e| e.file_name());
    let names: Vec<String> = figures.map(|n| n.to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.ends_with(".svg")) && !names.iter().any(|n| n.ends_with(".png")), "{names:?}");
    // The page says what is there, not what a whole report would have had.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(!html.contains("as SVG and PNG"), "the page promises PNGs that were skipped");
    assert!(html.contains("as SVG; their PNG copies were skipped when the command was stopped"), "{html}");
}

#[test]
fn short_runs_are_drawn_sample_by_sample_and_long_ones_from_the_envelope() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-t", "2", "-l", "1500", "-q", "--label", "short"]);
    lab.ok(&["synthetic", "-l", "50000", "-q", "--label", "long", "--interval", "1000"]);
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let short = std::fs::read_to_string(out.join("figures/run1-scatter.svg")).unwrap();
    assert!(short.contains("every sample"), "a short run is drawn sample by sample");
    assert_eq!(short.matches("<circle").count(), 3000, "one dot per sample of both threads");
    let long = std::fs::read_to_string(out.join("figures/run2-scatter.svg")).unwrap();
    assert!(long.contains("band min–max"), "a long run is drawn from its envelope");
    assert!(long.matches("<circle").count() <= 1200, "its dots are per envelope column");
}

/// A study of two preemption models, `full` and `lazy`, labelled `pd`: what it printed, its
/// runs' labels, and the debugfs mounts before and after it.
fn preempt_study(lab: &Lab) -> (String, Vec<String>, (usize, usize)) {
    assert_rejected(&lab.run(&["study", "--preempt", "full,turbo", "-D", "1s"]), "'turbo' is not a preemption model");
    let before = debugfs_mounts();
    // Its report is not read: not drawn.
    let said = lab.ok(&[
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "--preempt",
        "full,lazy",
        "-D",
        "500ms",
        "--load",
        "none",
        "--no-sysbench",
        "--label",
        "pd",
        "-q",
        "--no-report",
    ]);
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    assert!(
        runs.iter().all(|r| !r["probe"].as_str().unwrap().starts_with("sysbench.")),
        "--no-sysbench skips the last cell"
    );
    let labels = runs.iter().map(|r| r["label"].as_str().unwrap().to_string()).collect();
    (said, labels, (before, debugfs_mounts()))
}

fn debugfs_mounts() -> usize {
    std::fs::read_to_string("/proc/mounts").unwrap().lines().filter(|l| l.contains("debugfs")).count()
}

#[needs(root, preempt_switch)]
#[test]
fn a_study_across_preemption_models_switches_and_leaves_the_system_as_it_was_even_when_killed() {
    let lab = Lab::alone();
    let (said, labels, (before, after)) = preempt_study(&lab);
    assert_eq!(after, before, "debugfs is mounted as it was");
    assert!(labels.iter().any(|l| l == "pd preempt=full") && labels.iter().any(|l| l == "pd preempt=lazy"), "{said}");
    // Where debugfs was mounted before, the model in force can be read back (else the study
    // unmounted it again, as checked above).
    if before > 0 {
        let was = said.lines().find_map(|l| l.strip_prefix("preemption model now '")?.split('\'').next()).unwrap();
        let now = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").unwrap_or_default();
        assert!(now.contains(&format!("({was})")), "the model in force is back: {now}");
    }
    killed_mid_study_the_model_is_put_back_by_the_next_command(&lab, before, &debugfs_mounts);
}

/// Where the model cannot be switched (not PREEMPT_DYNAMIC, or the kernel refuses its file, as
/// this kind of machine's does), the study says why in one line and makes one plain pass.
#[needs(root, no_preempt_switch)]
#[test]
fn a_study_that_cannot_switch_the_preemption_model_says_why_and_makes_one_plain_pass() {
    let lab = Lab::alone();
    let (said, labels, (before, after)) = preempt_study(&lab);
    assert_eq!(after, before, "debugfs is mounted as it was");
    let line = said.lines().find(|l| l.starts_with("study: skipping --preempt:"));
    let line = line.unwrap_or_else(|| panic!("the study says why it does not switch: {said}"));
    assert!(line.len() > "study: skipping --preempt: ".len(), "the reason is given: {line}");
    assert!(labels.iter().all(|l| l == "pd"), "{labels:?}");
}

/// A study killed while it had switched the model leaves a journal; the next command (with the
/// same state directory, so no other test's command does it first) switches back and unmounts.
fn killed_mid_study_the_model_is_put_back_by_the_next_command(
    lab: &Lab,
    mounts_before: usize,
    mounts: &dyn Fn() -> usize,
) {
    let state = lab.path("state");
    let model = || {
        let text = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok()?;
        Some(text.split_once('(')?.1.split_once(')')?.0.to_string())
    };
    let args = [
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "--preempt",
        "lazy,none",
        "-D",
        "2s",
        "--load",
        "none",
        "--no-sysbench",
        "-q",
        "--label",
        "k",
    ];
    let mut study = lab.cmd(&args).env("RTBENCH_STATE_DIR", &state).stdout(Stdio::null()).spawn().unwrap();
    let journal = state.join(format!("preempt-{}.json", study.id()));
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let original = loop {
        if let Ok(text) = std::fs::read_to_string(&journal) {
            let j: serde_json::Value = serde_json::from_str(&text).unwrap();
            break j["original"].as_str().unwrap().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no journal at {}", journal.display());
        std::thread::sleep(Duration::from_millis(50));
    };
    while model().as_deref() == Some(original.as_str()) || model().is_none() {
        assert!(std::time::Instant::now() < deadline, "the study never switched away from '{original}'");
        std::thread::sleep(Duration::from_millis(50));
    }
    study.kill().unwrap();
    study.wait().unwrap();
    assert_ne!(model().as_deref(), Some(original.as_str()), "SIGKILL left the model switched");
    let out = lab.cmd(&["runs"]).env("RTBENCH_STATE_DIR", &state).output().unwrap();
    let said = text(&out.stderr);
    assert!(said.contains(&format!("put the preemption model back to '{original}'")), "{said}");
    assert!(!journal.exists(), "the journal is gone once done");
    assert_eq!(mounts(), mounts_before, "debugfs is unmounted again if the study mounted it");
}

/// The elements named `tag` under `node`, at any depth.
pub fn elements<'a, 'i>(node: roxmltree::Node<'a, 'i>, tag: &str) -> Vec<roxmltree::Node<'a, 'i>> {
    node.descendants().filter(|n| n.has_tag_name(tag)).collect()
}

pub fn count_attr(node: roxmltree::Node, attr: &str) -> usize {
    node.attribute(attr).unwrap_or_else(|| panic!("<{}> lacks {attr}", node.tag_name().name())).parse().unwrap()
}

#[test]
fn compare_writes_junit_that_names_the_failing_condition_and_json_ratios() {
    let lab = Lab::new();
    two_labels(&lab);
    let junit = lab.path("compare.xml");
    let gate = ["compare", "--baseline", "k-base", "k-new", "--fail-if", "p50 > 1.2x, max > 10s"];
    let out = lab.run(&[&gate[..], &["--junit", junit.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("FAIL: synthetic idle: p50 > 1.2x"), "{}", text(&out.stdout));

    let json = lab.run(&[&gate[..], &["--json"]].concat());
    assert_eq!(json.status.code(), Some(1), "--json gates too: {}", text(&json.stderr));
    let doc: serde_json::Value = serde_json::from_str(&text(&json.stdout)).expect("--json prints one JSON document");
    assert_matches_schema(&doc, "compare.schema.json");
    assert_eq!(doc["failed"], true);
    let pairs = doc["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty());
    for pair in pairs {
        let p50 = pair["stats"].as_array().unwrap().iter().find(|s| s["stat"] == "p50").unwrap();
        let ratio = p50["ratio"].as_f64().unwrap();
        assert!((ratio - p50["label"].as_f64().unwrap() / p50["baseline"].as_f64().unwrap()).abs() < 1e-9);
        assert!(ratio > 1.2, "the new label's body is 30 % slower by construction: {ratio}");
    }

    let xml = std::fs::read_to_string(&junit).expect("--junit writes the file");
    let parsed = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("JUnit is not XML ({e}):\n{xml}"));
    let root = parsed.root_element();
    assert!(root.has_tag_name("testsuites"), "{xml}");
    let suites = elements(root, "testsuite");
    assert_eq!(suites.len(), 1, "{xml}");
    let cases = elements(suites[0], "testcase");
    let failures = elements(suites[0], "failure");
    // One case per probe × load × condition; only the p50 condition holds, on every pair.
    assert_eq!(cases.len(), pairs.len() * 2, "{xml}");
    assert_eq!(failures.len(), pairs.len(), "{xml}");
    for node in [root, suites[0]] {
        assert_eq!(count_attr(node, "tests"), cases.len(), "{xml}");
        assert_eq!(count_attr(node, "failures"), failures.len(), "{xml}");
        assert_eq!(count_attr(node, "errors"), 0);
    }
    for failure in &failures {
        let case = failure.parent_element().unwrap();
        assert!(case.has_tag_name("testcase"));
        assert_eq!(case.attribute("name"), Some("synthetic idle: p50 > 1.2x"), "{xml}");
        let message = failure.attribute("message").unwrap();
        assert!(message.contains("p50 > 1.2x") && message.contains("µs vs"), "the numbers: {message}");
    }
    let passed: Vec<_> = cases.iter().filter(|c| c.children().all(|n| !n.is_element())).collect();
    assert_eq!(passed.len(), pairs.len(), "{xml}");
    assert!(passed.iter().all(|c| c.attribute("name").unwrap().starts_with("synthetic idle: max > ")), "{xml}");

    assert_rejected(&lab.run(&["compare", "--baseline", "k-base", "k-new", "--junit", "x.xml"]), "--fail-if");
    // Under a regular file: no directory can be made there, root or not.
    let nowhere = junit.join("x.xml");
    assert_rejected(&lab.run(&[&gate[..], &["--junit", nowhere.to_str().unwrap()]].concat()), "x.xml");
}

#[test]
fn a_study_gates_on_its_baseline_in_the_same_command() {
    let lab = Lab::alone();
    let (junit, out) = (lab.path("study.xml"), lab.path("rep"));
    let study = [
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "-D",
        "1s",
        "--load",
        "none",
        "--no-sysbench",
        "-q",
        "--label",
        "new",
        "-o",
    ];
    let study = [&study[..], &[out.to_str().unwrap(), "--baseline", "base"]].concat();
    // A typo in the baseline is refused before the first cell, not after the study.
    assert_rejected(&lab.run(&[&study[..], &["--fail-if", "p99 > 2x"]].concat()), "'base'");
    assert!(!lab.db().exists() && !out.exists(), "nothing ran");
    assert_rejected(&lab.run(&["study", "-D", "1s", "--fail-if", "p99 > 2x"]), "--baseline");

    lab.ok(&["timer", "-D", "1s", "-q", "--label", "base"]);
    // One condition that always holds, one that never does: the gate must fail on the first.
    let gate = ["--fail-if", "max >= 0ns, max < 0ns", "--junit", junit.to_str().unwrap()];
    let run = lab.run(&[&study[..], &gate].concat());
    assert_eq!(run.status.code(), Some(1), "{}{}", text(&run.stdout), text(&run.stderr));
    let stdout = text(&run.stdout);
    assert!(stdout.contains("study: label new against baseline base"), "{stdout}");
    assert!(stdout.contains("FAIL: timer idle: max >= 0 µs"), "{stdout}");
    assert!(out.join("index.html").is_file(), "the report is written before the gate");
    let xml = std::fs::read_to_string(&junit).expect("--junit writes the file");
    let parsed = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let cases = elements(parsed.root_element(), "testcase");
    let names: Vec<_> = cases.iter().map(|c| c.attribute("name").unwrap()).collect();
    // Only the timer ran under label base, so only its idle cell pairs.
    assert_eq!(names, ["timer idle: max >= 0 µs", "timer idle: max < 0 µs"], "{xml}");
    assert_eq!(elements(parsed.root_element(), "failure").len(), 1, "{xml}");
    assert_eq!(count_attr(parsed.root_element(), "failures"), 1, "{xml}");
}

/// Issue 22: the run's section in the report says where both ends of a ping-pong ran (CPU,
/// policy), as `show` does: sockperf's placement here, the client unpinned and both at
/// SCHED_OTHER, the echo server pinned.
#[test]
fn a_ping_pong_run_in_the_report_says_where_both_ends_ran() {
    let lab = Lab::new();
    let sock = lab.path("ends.sock");
    let s = sock.to_str().unwrap();
    let mut srv = server(lab.cmd(&["pingpong", "--serve", s, "--transport", "unix", "-a", "0", "--policy", "other"]));
    lab.ok(&["pingpong", s, "--transport", "unix", "-n", "300", "-a", "none", "--policy", "other", "-q"]);
    let _ = srv.child.kill();
    let _ = srv.child.wait();
    let params = lab.export_json(lab.last_run())["run"]["params"].clone();
    let host = params["peer_host"].as_str().unwrap();
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let line = html.split(r#"<p class="note placement">"#).nth(1).expect("the run says where it ran");
    let line = &line[..line.find("</p>").unwrap()];
    // The client floats, so its collector does too, on whatever CPUs this machine has.
    let collector: rtbench::model::CollectorRecord = serde_json::from_value(params["collector"].clone()).unwrap();
    assert_eq!(collector.chosen, rtbench::model::CollectorChoice::Floating);
    let collector = format!("collector (main thread, trace readers, store writes): {}", collector.describe());
    assert_eq!(
        line,
        format!("where it ran: thread 0: unpinned, other · echo server ({host}): pinned to CPU 0, other · {collector}")
    );
}
