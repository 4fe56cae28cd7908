//! The findings in words (issue 24): computed from a store whose answer is known, so each
//! sentence can be checked for the label it names, the direction and the factor it states, and
//! its caveats; and the page that opens with them, in headless Chromium.

use crate::helpers::*;
use rtbench_testkit::needs;

/// Stores a cyclictest histogram (µs bucket, count) of one thread as a run of `label` under
/// `load`; returns its id.
fn import(lab: &Lab, label: &str, load: &str, buckets: &[(u64, u64)]) -> i64 {
    let rows: String = buckets.iter().map(|(us, n)| format!("{us:06} {n:06}\n")).collect();
    let (min, max) = (buckets[0].0, buckets[buckets.len() - 1].0);
    let file = lab.path(&format!("{label}-{load}.hist"));
    std::fs::write(&file, format!("# Histogram\n{rows}# Min Latencies: {min:05}\n# Max Latencies: {max:05}\n"))
        .unwrap();
    lab.ok(&["import", file.to_str().unwrap(), "--label", label, "--load", load]);
    lab.last_run()
}

pub(crate) fn sql(lab: &Lab, statement: &str, id: i64) {
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    c.execute(statement, [id]).unwrap();
}

/// Puts run `id`'s thread on CPU 0 with two 1-second intervals: a calm one whose largest
/// latency is `calm_us`, then one holding the run's max `max_us` while the hypervisor took
/// 10 ms of the CPU (steal), as a virtual machine's store records them.
fn stolen_max(lab: &Lab, id: i64, calm_us: u64, max_us: u64) {
    sql(lab, "UPDATE threads SET cpu = 0 WHERE run_id = ?1", id);
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    for (idx, max, steal) in [(0, calm_us * 1000, 0u64), (1, max_us * 1000, 10_000_000)] {
        c.execute(
            "INSERT INTO envelope (run_id, thread, idx, min_ns, max_ns, sum_ns, count) VALUES (?1, 0, ?2, 1000, ?3, ?3, 1)",
            rusqlite::params![id, idx, max],
        )
        .unwrap();
        c.execute(
            "INSERT INTO cpu_activity (run_id, cpu, idx, steal_ns, irq_ns, softirq_ns, interrupts, context_switches) \
             VALUES (?1, 0, ?2, ?3, 0, 0, 0, NULL)",
            rusqlite::params![id, idx, steal],
        )
        .unwrap();
    }
}

/// Two labels. k-rt, stored first and PREEMPT_RT by its snapshot, against k-std: loaded, k-rt
/// cuts the max from 445 to 72 µs while its average rises; idle, its max (500 µs) is worse than
/// k-std's (400 µs). k-std's loaded max fell in an interval the hypervisor took the CPU.
/// Returns the ids: (k-rt idle, k-rt loaded, k-std idle, k-std loaded).
fn two_kernels(lab: &Lab) -> [i64; 4] {
    let rt_idle = import(lab, "k-rt", "none", &[(15, 900), (30, 99), (500, 1)]);
    let rt_loaded = import(lab, "k-rt", "paper", &[(20, 900), (40, 95), (72, 5)]);
    sql(
        lab,
        r#"UPDATE runs SET system = json_set(system, '$.preemption.uname_v', 'PREEMPT_RT') WHERE id = ?1 OR label = 'k-rt'"#,
        rt_idle,
    );
    let std_idle = import(lab, "k-std", "none", &[(10, 900), (20, 90), (400, 10)]);
    let std_loaded = import(lab, "k-std", "paper", &[(10, 800), (20, 150), (30, 49), (445, 1)]);
    stolen_max(lab, std_loaded, 30, 445);
    [rt_idle, rt_loaded, std_idle, std_loaded]
}

fn total(lab: &Lab, id: i64, stat: &str) -> f64 {
    lab.export_json(id)["total"][stat].as_f64().unwrap_or_else(|| panic!("run {id} has no total.{stat}"))
}

fn findings_json(lab: &Lab) -> Vec<serde_json::Value> {
    let doc: serde_json::Value = serde_json::from_str(&lab.ok(&["report", "--findings", "--json"])).unwrap();
    doc["findings"].as_array().unwrap().clone()
}

#[test]
fn kernels_that_ran_on_an_emulated_cpu_are_not_ranked() {
    let lab = Lab::new();
    let [.., std_loaded] = two_kernels(&lab);
    // k-std's loaded run was made in a guest under TCG (`kernels --allow-emulated`); quoted for SQL.
    let warning = "emulated CPU (TCG): these latencies are the emulator''s, not the kernel''s";
    sql(
        &lab,
        &format!("UPDATE runs SET warnings = json_insert(warnings, '$[#]', '{warning}') WHERE id = ?1"),
        std_loaded,
    );
    let said = lab.ok(&["report", "--findings"]);
    let unranked: Vec<&str> = said.lines().filter(|l| l.contains("Not ranked: emulated (TCG)")).collect();
    assert_eq!(unranked.len(), 1, "said once:\n{said}");
    assert!(
        unranked[0].contains("— k-rt against k-std: timer loaded (paper). Those runs ran on an emulated CPU"),
        "{said}"
    );
    assert!(!said.contains("k-rt against k-std, timer loaded (paper): "), "the emulated pair is not ranked:\n{said}");
    // The idle pair, made on the host, is still ranked.
    assert!(said.contains("k-rt against k-std, timer idle: the worst case is not better"), "{said}");
}

#[test]
fn the_better_label_is_named_with_its_direction_factor_and_the_steal_caveat() {
    let lab = Lab::new();
    let [rt_idle, rt_loaded, std_idle, std_loaded] = two_kernels(&lab);
    let said = lab.ok(&["report", "--findings"]);
    let line = |start: &str| {
        said.lines().find(|l| l.contains(start)).unwrap_or_else(|| panic!("no finding starts {start:?}:\n{said}"))
    };
    // The PREEMPT_RT label is the one compared, though the other was not stored first.
    let loaded = line("k-rt against k-std, timer loaded (paper): ");
    let factor = total(&lab, std_loaded, "max_ns") / total(&lab, rt_loaded, "max_ns");
    assert!(loaded.contains(&format!("cut the max from 445 to 72 µs ({factor:.1}×)")), "{loaded}");
    let (avg_std, avg_rt) = (total(&lab, std_loaded, "mean_ns"), total(&lab, rt_loaded, "mean_ns"));
    assert!(avg_rt > avg_std, "the store is built with a higher average for k-rt");
    assert!(loaded.contains("while the average rose from"), "{loaded}");
    let idle = line("k-rt against k-std, timer idle: ");
    let worse = total(&lab, rt_idle, "max_ns") / total(&lab, std_idle, "max_ns");
    assert!(
        idle.contains(&format!("the worst case is not better: it raised the max from 400 to 500 µs ({worse:.2}×)")),
        "{idle}"
    );
    let caveat = said.lines().skip_while(|l| *l != loaded).nth(1).unwrap_or_default();
    assert!(
        caveat.contains(
            "k-std timer loaded (paper): the max 445 µs fell in an interval the hypervisor took the CPU away"
        ) && caveat.contains("its largest is 30 µs"),
        "the loaded pair carries k-std's steal caveat: {caveat:?}"
    );
    assert!(!said.lines().skip_while(|l| *l != idle).nth(1).unwrap_or_default().contains("⚠"), "idle: no steal");

    let found = findings_json(&lab);
    let pair =
        found.iter().find(|f| f["sentence"].as_str().unwrap().starts_with("k-rt against k-std, timer loaded")).unwrap();
    assert_eq!(pair["topic"], "pair");
    let number = |name: &str| pair["numbers"].as_array().unwrap().iter().find(|n| n["name"] == name).unwrap().clone();
    assert_eq!(number("max k-std")["value"].as_f64(), Some(445.0));
    assert_eq!(number("max k-rt")["unit"], "us");
    let ratio = number("max ratio")["value"].as_f64().unwrap();
    assert!((ratio - 1.0 / factor).abs() < 1e-9, "{ratio}");
    assert_eq!(pair["caveats"].as_array().unwrap().len(), 1);

    // compare with the two labels says the same in words under its table.
    let compared = lab.ok(&["compare", "--baseline", "k-std", "k-rt"]);
    assert!(
        compared.contains(loaded.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ' ')),
        "{compared}"
    );
    // Against the other baseline, the direction turns round.
    let reversed = lab.ok(&["compare", "--baseline", "k-rt", "k-std"]);
    assert!(reversed.contains("k-std against k-rt, timer loaded (paper): the worst case is not better"), "{reversed}");
}

#[test]
fn one_label_says_the_rule_of_thumb_and_the_audit_and_compares_nothing() {
    let lab = Lab::new();
    // An exponential body (mean 20 µs, some 200 000 samples) up to about 190 µs, and a 5 ms spike.
    let mut body: Vec<(u64, u64)> =
        (1..=250).map(|us| (us, (10_000.0 * (-(us as f64) / 20.0).exp()).round() as u64)).filter(|b| b.1 > 0).collect();
    body.push((5000, 1));
    let id = import(&lab, "k-one", "paper", &body);
    let top = body[body.len() - 2].0;
    stolen_max(&lab, id, top, 5000);
    // A 1 GHz CPU: 10⁵ cycles are 100 µs. The audit found RT throttling on, with its fix.
    let audit = r#"[{"check":"rt-throttling","severity":"bad","summary":"a busy FIFO thread is stopped 50 ms a second.","evidence":[],"fix":"sysctl -w kernel.sched_rt_runtime_us=-1"},{"check":"governor","severity":"warn","summary":"ondemand","evidence":[],"fix":"cpupower frequency-set -g performance"}]"#;
    sql(
        &lab,
        &format!(
            "UPDATE runs SET system = json_set(system, '$.cpu_mhz', 1000.0, '$.audit', json('{audit}')) WHERE id = ?1"
        ),
        id,
    );
    // The load fell short of its target on CPU 0, as a load's stored report says.
    let load = r#"{"profile":"paper","generators":[],"activity":{"cpu_busy_percent":[80.0,99.0],"context_switches_per_s":1.0,"interrupts_per_s":1.0,"seconds":2.0},"cpu_target_percent":95.0}"#;
    sql(&lab, &format!("UPDATE runs SET load = '{load}' WHERE id = ?1"), id);
    lab.ok(&["synthetic", "-l", "2000", "-q", "--label", "k-one"]);
    let other = lab.last_run();
    sql(
        &lab,
        &format!(
            "UPDATE runs SET system = json_set(system, '$.cpu_mhz', 1000.0, '$.audit', json('{audit}')) WHERE id = ?1"
        ),
        other,
    );
    // It ran without locked memory too, as an unprivileged run stores it.
    sql(&lab, r#"UPDATE runs SET params = json_set(params, '$.lacked', json('["memory_lock"]')) WHERE id = ?1"#, other);

    let said = lab.ok(&["report", "--findings"]);
    assert!(!said.contains(" against "), "one label: no comparison:\n{said}");
    let rule = said.lines().find(|l| l.contains("Rule of thumb, k-one: ")).unwrap_or_else(|| panic!("{said}"));
    assert!(rule.contains("not within it — timer loaded (paper) reached 5\u{202f}000 µs, 50.0× the 10⁵-cycle budget of 100 µs (1000 MHz)"), "{rule}");
    assert!(rule.contains(&format!("the hypervisor took the CPU (steal) in 1 of the 2 intervals over budget (50 %); the largest latency outside them is {top} µs, still over the budget")), "{rule}");
    assert!(
        rule.contains("the audit finds rt-throttling bad (fix: sysctl -w kernel.sched_rt_runtime_us=-1)"),
        "{rule}"
    );
    assert!(
        rule.contains(&format!("1 of 2 runs were measured at SCHED_OTHER, not at real-time priority (run {other})")),
        "{rule}"
    );
    assert!(rule.contains(&format!("1 of 2 runs lacked mlock (run {other})")), "{rule}");
    assert!(!rule.contains("lacked cpu_dma_latency"), "{rule}");
    assert!(rule.contains(&format!("load 'paper' of run {id} did not reach its 95 % target (CPU 0 80 %)")), "{rule}");
    assert!(!rule.contains("governor"), "only bad findings explain: {rule}");
    let fix = said.lines().find(|l| l.contains("Fix first (k-one): ")).unwrap_or_else(|| panic!("{said}"));
    assert!(fix.contains("rt-throttling is bad — a busy FIFO thread is stopped 50 ms a second; fix: sysctl -w kernel.sched_rt_runtime_us=-1"), "{fix}");
    let worst = said
        .lines()
        .find(|l| l.contains("Worst case, k-one timer loaded (paper): "))
        .unwrap_or_else(|| panic!("{said}"));
    let samples = total(&lab, id, "count");
    assert!(worst.contains("the latency exceeded once in 10⁹ samples is estimated at"), "{worst}");
    let next = said.lines().skip_while(|l| *l != worst).nth(1).unwrap_or_default();
    let rarer = 1e9 / samples;
    assert!(
        next.contains(&format!("an extrapolation: a 1e-9 level is {rarer:.0}× rarer than the run's {samples} samples")),
        "{next}"
    );

    let found = findings_json(&lab);
    let links: Vec<&str> = found.iter().map(|f| f["link"].as_str().unwrap()).collect();
    assert!(
        links.contains(&format!("audit-run{other}").as_str()) || links.contains(&format!("audit-run{id}").as_str()),
        "{links:?}"
    );
}

/// The ids the findings section of a page links to, and whether each is an element's id.
fn finding_links(html: &str) -> Vec<(String, bool)> {
    let start = html.find(r#"<section id="findings">"#).expect("the page has a findings section");
    let section = &html[start..start + html[start..].find("</section>").unwrap()];
    section
        .split(r##"href="#"##)
        .skip(1)
        .map(|rest| {
            let id = rest.split('"').next().unwrap().to_string();
            let present = html.contains(&format!(r#" id="{id}""#));
            (id, present)
        })
        .collect()
}

#[needs("chromium")]
#[test]
fn the_page_opens_with_the_findings_on_the_first_screen_and_every_link_lands() {
    let lab = Lab::new();
    two_kernels(&lab);
    // More cells, as a study has: two more loads per label, and an audit and a CPU clock for all.
    for (label, base) in [("k-rt", 25), ("k-std", 12)] {
        for load in ["cpu", "disk"] {
            import(&lab, label, load, &[(base, 900), (base * 2, 99), (base * 9, 1)]);
        }
    }
    let audit = r#"[{"check":"rt-throttling","severity":"bad","summary":"a busy FIFO thread is stopped 50 ms a second.","evidence":[],"fix":"sysctl -w kernel.sched_rt_runtime_us=-1"}]"#;
    sql(
        &lab,
        &format!(
            "UPDATE runs SET system = json_set(system, '$.cpu_mhz', 2000.0, '$.audit', json('{audit}')) WHERE id >= ?1"
        ),
        1,
    );
    sql(&lab, "UPDATE runs SET system = json_set(system, '$.preemption.uname_v', 'PREEMPT_RT') WHERE label = 'k-rt' AND id >= ?1", 1);
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let findings_at = html.find(r#"<section id="findings">"#).unwrap();
    assert!(findings_at < html.find("<table").unwrap(), "the findings come before every table");
    assert!(findings_at < html.find(r#"<nav class="toc">"#).unwrap(), "and before the contents");
    let links = finding_links(&html);
    assert!(links.len() >= 8, "pairs, rules, worst cases and a fix each link: {links:?}");
    assert!(html.contains("k-rt against k-std, timer loaded (cpu)"), "every load is compared");
    assert!(links.iter().all(|(_, present)| *present), "every finding links to an element of the page: {links:?}");
    assert!(links.iter().any(|(id, _)| id.starts_with("audit-run")), "the fix links to its audit: {links:?}");
    assert!(html.contains(r#"<details class="runs">"#), "each run's figures are folded");
    assert_eq!(
        html.matches("<figure").count(),
        std::fs::read_dir(out.join("figures")).unwrap().count() / 2,
        "every figure is still on the page"
    );

    let chromium = chromium().expect("chromium (the test needs it)");
    let url = format!("file://{}", out.join("index.html").display());
    let screen = "--window-size=1280,800".to_string();
    let dom =
        headless(chromium, &lab, &url, &["--dump-dom".into(), "--virtual-time-budget=3000".into(), screen.clone()]);
    let page = text(&dom.stdout);
    let bottom = page_attr(&page, "data-findings-bottom");
    assert!(bottom > 0 && bottom <= 800, "the findings end {bottom} px down: past the first 1280×800 screen");
    assert_eq!(page_attr(&page, "data-findings-links"), links.len(), "Chromium sees the same links");
    assert_eq!(page_attr(&page, "data-findings-links-resolved"), links.len(), "each lands on an element");
    let shot = lab.path("findings.png");
    let taken = headless(chromium, &lab, &url, &[format!("--screenshot={}", shot.display()), screen]);
    assert!(shot.is_file(), "screenshot taken: {}", text(&taken.stderr));
    // Kept for people, beside the report test's: the first screen a reader sees.
    let _ = std::fs::copy(&shot, std::env::temp_dir().join("rtbench-findings-screenshot.png"));
}

#[test]
fn the_price_names_the_operations_that_changed_most_in_their_direction() {
    let lab = Lab::new();
    for label in ["k-a", "k-b"] {
        lab.ok(&["sysbench", "--quick", "--only", "null-call,null-io,stat,sig-install", "--label", label]);
    }
    let found = findings_json(&lab);
    let price = found.iter().find(|f| f["topic"] == "price").unwrap_or_else(|| panic!("no price: {found:?}"));
    let sentence = price["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("The price, k-b against k-a: the operations that changed most are "), "{sentence}");
    let named: Vec<&str> = sentence.split(" are ").nth(1).unwrap().trim_end_matches('.').split(", ").collect();
    assert_eq!(named.len(), 3, "three of the four operations: {sentence}");
    for said in &named {
        // Costs: smaller is better, so a rise is worse; a median the same in both (a quick run's
        // histogram can give it) is neither.
        if said.ends_with("(unchanged)") {
            assert!(said.contains(" +0.0 %"), "{said}");
            continue;
        }
        let rose = said.contains(" +");
        assert_eq!(said.ends_with("(worse)"), rose, "{said}");
    }
    let changes: Vec<f64> =
        price["numbers"].as_array().unwrap().iter().map(|n| n["value"].as_f64().unwrap().abs()).collect();
    assert!(changes.windows(2).all(|w| w[0] >= w[1]), "largest change first: {changes:?}");
    assert!(price["numbers"].as_array().unwrap().iter().all(|n| n["unit"] == "percent"));
}

#[test]
fn a_classified_run_over_budget_says_how_much_of_it_the_kernel_did_not_see() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "2000", "-q", "--label", "k-vm"]);
    let id = lab.last_run();
    // A 10 GHz CPU: 10⁵ cycles are 10 µs, and the run is over it. Its gaps, as `noise
    // --classify` stores them: 7 of the 9 over budget the kernel did not see.
    let classify = r#"{"lost_events":0,"budget_ns":10000,"skipped":null,"threads":[{"thread":0,"totals":[
        {"class":"irq","name":"local timer","detail":null,"count":40,"ns":400000,"max_ns":60000,"over_budget":2},
        {"class":"hardware","name":"","detail":null,"count":9,"ns":9000000,"max_ns":3700000,"over_budget":7}]}]}"#;
    sql(
        &lab,
        &format!(
            "UPDATE runs SET system = json_set(system, '$.cpu_mhz', 10000.0), params = json_set(params, '$.classify', \
             json('{classify}')) WHERE id = ?1"
        ),
        id,
    );
    // Steal marks one of its two intervals; the calm one (30 µs) is over budget too.
    sql(&lab, "DELETE FROM envelope WHERE run_id = ?1", id);
    stolen_max(&lab, id, 30, 445);
    let said = lab.ok(&["report", "--findings"]);
    let rule = said.lines().find(|l| l.contains("Rule of thumb, k-vm: ")).unwrap_or_else(|| panic!("{said}"));
    // What steal misses is not called the kernel's where the classification saw it.
    assert!(rule.contains("steal time, counted by the tick, is too coarse to show the other stalls"), "{rule}");
    assert!(!rule.contains("still over the budget"), "{rule}");
    assert!(
        rule.contains(
            "What explains it: in the 1 classified noise run(s), 7 of the 9 gaps over budget fell in time the kernel \
             did not see (hypervisor, SMI or hardware); the largest the kernel is responsible for is 60 µs"
        ),
        "{rule}"
    );
}
