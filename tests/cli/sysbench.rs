//! `rtbench sysbench`: operations measured, stored per operation with their unit and direction,
//! compared across labels in %, tabled in the report.

use crate::helpers::*;

const SOME: &str = "null-call,sig-catch,fork-exit,ctx-2p-0k,lat-pipe,lat-udp,create-0k,bw-pipe,bw-mem-read";

#[test]
fn operations_are_stored_with_their_unit_and_direction() {
    let lab = Lab::new();
    let said = lab.ok(&["sysbench", "--quick", "--only", SOME, "--label", "k1"]);
    for title in ["Processor, processes", "Context switching", "Local communication latencies", "bandwidths"] {
        assert!(said.contains(title), "{title} in: {said}");
    }
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    let probes: Vec<&str> = runs.iter().map(|r| r["probe"].as_str().unwrap()).collect();
    let wanted: Vec<String> = SOME.split(',').map(|o| format!("sysbench.{o}")).collect();
    assert_eq!(probes, wanted, "one run per operation, in table order");
    for r in runs {
        let id = r["id"].as_i64().unwrap();
        let doc = lab.export_json(id);
        assert_valid_export(&doc);
        let (unit, better) = (&doc["run"]["unit"], &doc["run"]["better"]);
        if r["probe"].as_str().unwrap().starts_with("sysbench.bw-") {
            assert_eq!((unit.as_str(), better.as_str()), (Some("KB/s"), Some("bigger")), "{}", r["probe"]);
        } else {
            assert_eq!((unit.as_str(), better.as_str()), (Some("ps"), Some("smaller")), "{}", r["probe"]);
        }
        let total = &doc["total"];
        assert!(total["count"].as_u64().unwrap() >= 11, "at least 11 repetitions: {total}");
        // The statistics keep their names; their values are in the run's unit. A context switch
        // is the ring's time less the ring's own overhead (as LMbench takes it): on a loaded
        // machine one repetition's overhead can reach its time, leaving 0 (seen once in CI-like
        // load), so there the largest repetition must have measured something. A signal's
        // catch is likewise its send-and-catch less the send alone, as LMbench states it.
        let probe = r["probe"].as_str().unwrap();
        let net = probe.starts_with("sysbench.ctx-") || probe == "sysbench.sig-catch";
        let floor = if net { "max_ns" } else { "min_ns" };
        assert!(total[floor].as_u64().unwrap() > 0, "every repetition measured something: {total}");
        assert_eq!(doc["run"]["params"]["op"], r["probe"].as_str().unwrap().trim_start_matches("sysbench."));
    }
    let shown = lab.ok(&["show", &runs[0]["id"].to_string()]);
    assert!(shown.contains("µs per operation") && shown.contains("smaller is better"), "{shown}");
}

#[test]
fn every_table_says_where_the_pass_ran_and_the_run_keeps_it() {
    let lab = Lab::new();
    let pinned = lab.ok(&["sysbench", "--quick", "--only", "null-call", "--cpu", "0", "--label", "p"]);
    assert!(pinned.contains("— p, pinned to CPU 0"), "{pinned}");
    let free = lab.ok(&["sysbench", "--quick", "--only", "null-call", "--cpu", "none", "--label", "u"]);
    assert!(free.contains("— u, unpinned"), "{free}");
    let runs = lab.runs();
    let ids: Vec<String> = runs.as_array().unwrap().iter().map(|r| r["id"].to_string()).collect();
    let cpus: Vec<serde_json::Value> =
        ids.iter().map(|id| lab.export_json(id.parse().unwrap())["run"]["params"]["cpus"].clone()).collect();
    assert_eq!(cpus, [serde_json::json!([0]), serde_json::json!([null])], "stored with the run");
    assert!(lab.ok(&["show", &ids[0]]).contains("placement: pinned to CPU 0"));
    assert!(lab.ok(&["show", &ids[1]]).contains("placement: unpinned"));
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<th>placement</th>"), "the report's table has the column");
    assert!(html.contains("<td>pinned to CPU 0</td>") && html.contains("<td>unpinned</td>"), "a row each");
}

#[test]
fn labels_compare_in_percent_and_the_report_tables_them() {
    let lab = Lab::new();
    for label in ["base", "new"] {
        lab.ok(&["sysbench", "--quick", "--only", "null-call,bw-mem-read", "--label", label]);
    }
    let cmp = lab.ok(&["compare", "--baseline", "base", "new"]);
    let row = cmp.lines().find(|l| l.starts_with("sysbench.null-call")).expect("a row for null-call");
    assert!(row.contains(" % ") && row.contains("smaller is better"), "{row}");
    let row = cmp.lines().find(|l| l.starts_with("sysbench.bw-mem-read")).expect("a row for bw-mem-read");
    assert!(row.contains("MB/s, bigger is better"), "{row}");
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("The price of real time"), "the section is there");
    let tables: Vec<&str> = html.split(r#"<table class="sysbench">"#).skip(1).collect();
    assert_eq!(tables.len(), 2, "processes and bandwidths");
    for t in &tables {
        let t = t.split("</table>").next().unwrap();
        assert!(t.contains("<td>base</td>") && t.contains("<td>new</td>"), "a row per label: {t}");
    }
    let mut figures: Vec<String> = std::fs::read_dir(out.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    figures.sort();
    assert_eq!(figures, ["sysbench-costs.png", "sysbench-costs.svg"], "Figure 32's bars, no latency figures");
    let bars = std::fs::read_to_string(out.join("figures/sysbench-costs.svg")).unwrap();
    assert_eq!(bars.matches(r#"class="bar""#).count(), 4, "2 operations × 2 labels");
    assert!(bars.contains("bw-mem-read ↑"), "bigger-is-better marked");
}

#[test]
fn sysbench_bad_input_is_rejected_by_name() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["sysbench", "--only", "warp-drive"]), "warp-drive");
    assert_rejected(&lab.run(&["sysbench", "--only", ","]), "--only");
    assert_rejected(&lab.run(&["sysbench", "--cpu", "999"]), "--cpu 999");
    assert_rejected(&lab.run(&["sysbench", "--load", "cpu,warp-drive", "--only", "null-call"]), "warp-drive");
    let listed = lab.ok(&["sysbench", "--list"]);
    for name in ["processes", "context", "latency", "file-vm", "bandwidth", "null-call", "bw-mem-write"] {
        assert!(listed.contains(name), "{name} in: {listed}");
    }
    assert!(!lab.db().exists(), "nothing measured, nothing stored");
}

#[test]
fn total_time_under_each_load_is_tabled_with_a_percent_row_against_the_baseline() {
    let lab = Lab::alone();
    for label in ["k1", "k2"] {
        let said = lab.ok(&[
            "sysbench",
            "--total",
            "--quick",
            "--only",
            "null-call,lat-pipe",
            "--loads",
            "none,trigger",
            "--settle",
            "200ms",
            "--label",
            label,
            "--baseline",
            "k1",
        ]);
        assert!(said.contains("total time of 2 operations per load"), "{said}");
    }
    let runs = lab.runs();
    let totals: Vec<(&str, &str)> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["probe"] == "sysbench.total")
        .map(|r| (r["label"].as_str().unwrap(), r["load"]["profile"].as_str().unwrap()))
        .collect();
    assert_eq!(totals, [("k1", "none"), ("k1", "trigger"), ("k2", "none"), ("k2", "trigger")]);
    // The same work in every pass and on both kernels: the baseline's iteration counts.
    let work: Vec<serde_json::Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["probe"] == "sysbench.total")
        .map(|r| lab.export_json(r["id"].as_i64().unwrap())["run"]["params"]["iterations"].clone())
        .collect();
    assert!(work[0]["null-call"].as_u64().unwrap() > 0, "{}", work[0]);
    assert!(work.iter().all(|w| *w == work[0]), "{work:?}");
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let table = html
        .split(r#"<table class="sysbench-total">"#)
        .nth(1)
        .expect("the total table")
        .split("</table>")
        .next()
        .unwrap();
    assert!(table.contains("<th>none</th><th>trigger</th>"), "a column per load: {table}");
    assert_eq!(table.matches("<tr><td>").count(), 3, "k1, k2 and k2's % row: {table}");
    let pct = table.split("<tr><td>% k2 vs k1</td>").nth(1).expect("the % row");
    assert_eq!(pct.matches(" %</td>").count(), 2, "a % per load: {pct}");
}

#[test]
fn total_needs_a_baseline_and_known_loads() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["sysbench", "--total", "--only", "null-call"]), "--baseline");
    assert_rejected(
        &lab.run(&["sysbench", "--total", "--baseline", "k", "--loads", "none,warp+disk", "--only", "null-call"]),
        "warp",
    );
    assert_rejected(&lab.run(&["sysbench", "--baseline", "k", "--only", "null-call"]), "--total");
    assert!(!lab.db().exists(), "nothing measured, nothing stored");
}

#[test]
fn fork_rows_store_and_show_the_process_image_they_forked_from() {
    let lab = Lab::new();
    let said = lab.ok(&["sysbench", "--quick", "--only", "null-call,fork-exit", "--label", "k"]);
    assert!(said.contains("iterations  process image"), "the table has the column: {said}");
    let row = said.lines().find(|l| l.trim_start().starts_with("fork-exit")).expect("a fork-exit row");
    assert!(row.contains(" mappings: ") && row.contains("libc.so"), "{row}");
    // A binary whose helper lacks LMbench's -ltirpc says so on the row, and only such a one.
    let without_tirpc = env!("RTBENCH_SPAWN_TIRPC") == "missing";
    assert_eq!(row.contains("[linked without LMbench's -ltirpc"), without_tirpc, "{row}");
    let null = said.lines().find(|l| l.trim_start().starts_with("null-call")).unwrap();
    assert!(!null.contains("mappings"), "no process image where nothing forks: {null}");
    let runs = lab.runs();
    let ids: Vec<i64> = runs.as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let params: Vec<serde_json::Value> = ids.iter().map(|id| lab.export_json(*id)["run"]["params"].clone()).collect();
    assert!(params[0].get("image").is_none(), "null-call stores none: {}", params[0]);
    let image = &params[1]["image"];
    assert!(image["mappings"].as_u64().unwrap() > 0, "{image}");
    let libraries = image["libraries"].as_array().unwrap();
    assert!(libraries.iter().any(|l| l.as_str().unwrap().starts_with("libc.so")), "{image}");
    assert_eq!(image.get("mark").is_some(), without_tirpc, "the stored run carries the mark: {image}");
    let shown = lab.ok(&["show", &ids[1].to_string()]);
    assert!(shown.contains("forked from: ") && shown.contains(" mappings: "), "{shown}");
    let out = lab.path("report");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let cell = html.split(r#"<small class="image">"#).nth(1).expect("the fork cell shows its image");
    let cell = cell.split("</small>").next().unwrap();
    assert!(cell.contains(" mappings: ") && cell.contains("libc.so"), "{cell}");
    assert_eq!(html.matches(r#"<small class="image">"#).count(), 1, "fork-exit's cell alone");
}
