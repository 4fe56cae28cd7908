//! What happened on the measured CPUs besides our threads: recorded per envelope interval with
//! every run, carried by merge, and shown in the report where the hypervisor took a CPU away.

use crate::helpers::*;

fn activity(db: &std::path::Path, run: i64) -> Vec<(i64, i64, i64)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt =
        c.prepare("SELECT cpu, idx, steal_ns FROM cpu_activity WHERE run_id = ?1 ORDER BY cpu, idx").unwrap();
    let rows = stmt.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
    rows.map(|r| r.unwrap()).collect()
}

#[test]
fn every_interval_of_every_measured_cpu_is_recorded() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "2", "-a", "0", "-i", "1000", "-D", "2500ms", "--envelope-interval", "500ms", "-q"]);
    let id = lab.last_run();
    let rows = activity(&lab.db(), id);
    // Both threads are pinned to CPU 0: only CPU 0 is watched, once per interval, from 0 on.
    assert!(rows.iter().all(|r| r.0 == 0), "{rows:?}");
    let idx: Vec<i64> = rows.iter().map(|r| r.1).collect();
    assert_eq!(idx, (0..idx.len() as i64).collect::<Vec<_>>(), "consecutive intervals from the start");
    assert!((5..=7).contains(&idx.len()), "2.5 s in 500 ms intervals: {idx:?}");
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    let last_env: i64 = c.query_row("SELECT max(idx) FROM envelope WHERE run_id = ?1", [id], |r| r.get(0)).unwrap();
    assert!(idx.contains(&last_env), "the interval of the last samples is watched too ({last_env} in {idx:?})");

    lab.ok(&["synthetic", "-l", "1000", "-q"]);
    assert!(activity(&lab.db(), lab.last_run()).is_empty(), "synthetic samples are on no real CPU's clock");

    let other = Lab::new();
    other.ok(&["merge", lab.db().to_str().unwrap()]);
    assert_eq!(activity(&other.db(), 1), activity(&lab.db(), id), "merge carries the activity");
}

#[test]
fn the_report_shades_where_the_hypervisor_took_the_cpu() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "1", "-a", "0", "-D", "2s", "--envelope-interval", "500ms", "-q"]);
    let id = lab.last_run();
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    // As a hypervisor would: a second of steal in interval 1 (more than any latency in it), a
    // nanosecond in interval 2 (less than every latency), none elsewhere (this VM's own steal,
    // which a loaded CI machine sees in any interval, is cleared first).
    c.execute("UPDATE cpu_activity SET steal_ns = 0 WHERE run_id = ?1", [id]).unwrap();
    c.execute("UPDATE cpu_activity SET steal_ns = 1000000000 WHERE run_id = ?1 AND idx = 1", [id]).unwrap();
    c.execute("UPDATE cpu_activity SET steal_ns = 1 WHERE run_id = ?1 AND idx = 2", [id]).unwrap();
    drop(c);
    let out = lab.path("rep");
    lab.ok(&["report", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join(format!("figures/run{id}-scatter.svg"))).unwrap();
    assert!(svg.contains(r#"<g class="steal">"#), "the scatter shades steal");
    assert_eq!(svg.matches("<title>steal").count(), 2, "one band per interval with steal");
    assert!(svg.contains(r#"fill-opacity="0.35"><title>steal 1000 ms"#), "dark where steal explains the max");
    assert!(svg.contains(r#"fill-opacity="0.15"><title>steal 0 ms"#), "light where it does not");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("2 intervals in which the hypervisor took a measured CPU away (1 where"), "caption says so");

    lab.ok(&["timer", "-t", "1", "-a", "0", "-D", "1s", "-q", "--label", "calm"]);
    let calm = lab.last_run();
    let out = lab.path("rep2");
    lab.ok(&["report", "--label", "calm", "-o", out.to_str().unwrap()]);
    let svg = std::fs::read_to_string(out.join(format!("figures/run{calm}-scatter.svg"))).unwrap();
    let steal = activity(&lab.db(), calm).iter().any(|r| r.2 > 0);
    assert_eq!(svg.contains("class=\"steal\""), steal, "shaded only when the hypervisor took time");
}

#[test]
fn show_lines_the_worst_intervals_up_with_their_cpus() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "2", "-D", "2s", "--envelope-interval", "250ms", "-q"]);
    let id = lab.last_run();
    let shown = lab.ok(&["show", &id.to_string()]);
    let rows: Vec<Vec<String>> = shown
        .lines()
        .skip_while(|l| !l.starts_with("worst intervals"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 5, "{shown}");
    let maxes: Vec<f64> = rows.iter().map(|r| r[3].parse().unwrap()).collect();
    assert!(maxes.windows(2).all(|w| w[0] >= w[1]), "largest first: {maxes:?}");
    let doc = lab.export_json(id);
    let run_max = doc["total"]["max_ns"].as_f64().unwrap() / 1000.0;
    assert!((maxes[0] - run_max).abs() < 0.001, "the first is the run's max: {} vs {run_max}", maxes[0]);
    for r in &rows {
        let cpu: u64 = r[2].parse().unwrap();
        let thread = r[1].parse::<usize>().unwrap();
        assert_eq!(doc["threads"][thread]["cpu"].as_u64(), Some(cpu), "each row names its thread's CPU");
        assert!(r[7].parse::<u64>().is_ok(), "interrupts on that CPU then: {r:?}");
    }
    lab.ok(&["synthetic", "-l", "5000", "-q"]);
    assert!(!lab.ok(&["show", &lab.last_run().to_string()]).contains("worst intervals"));
}
