//! A fleet for real: two monitors in two network namespaces ("hosts") scraped by a real
//! Prometheus server, whose answers are checked against what the monitors stored.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use crate::net::Hosts;
use rtbench_testkit::needs;

/// A process that is killed however the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Asks the Prometheus in namespace `ns` for an instant query; the first result's value.
fn query(ns: &str, promql: &str) -> Vec<(String, f64)> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "curl", "-s", "-G", "--max-time", "5", "http://127.0.0.1:9090/api/v1/query"])
        .arg("--data-urlencode")
        .arg(format!("query={promql}"))
        .output()
        .unwrap();
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else { return Vec::new() };
    doc["data"]["result"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    let host = r["metric"]["host"].as_str().unwrap_or_default().to_string();
                    (host, r["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Samples per exported bucket of one stored run (one thread), from its 1-µs histogram, twice:
/// with the rows just under each bound counted below it, and above it. The monitor counts an HDR
/// bin by its highest value and the export by its lowest, so a bin that straddles a bound (its
/// width is the HDR precision: 32 ns at 50 µs, 4 µs at 10 ms) may fall on either side; the truth lies between.
fn stored_buckets(lab: &Lab, id: i64, bounds_us: &[u64]) -> ([Vec<u64>; 2], u64) {
    let total = lab.export_json(id)["total"]["count"].as_u64().unwrap();
    let top = bounds_us.last().unwrap().to_string();
    let hist = lab.ok(&["export", &id.to_string(), "--format", "cyclictest-hist", "--buckets", &top]);
    let mut below = vec![0u64; bounds_us.len() + 1];
    let mut above = vec![0u64; bounds_us.len() + 1];
    for line in hist.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split_whitespace();
        let (Some(us), Some(n)) = (f.next(), f.next()) else { continue };
        let (us, n): (u64, u64) = (us.parse().unwrap(), n.parse().unwrap());
        // Row `us` holds [us, us + 1) µs: within the bucket whose bound is above it.
        let at = bounds_us.iter().position(|b| us < *b).unwrap_or(bounds_us.len());
        below[at] += n;
        // An HDR bin is at most 1/1024 of its value wide: the rows within 0.1 % under a bound.
        let straddles = bounds_us.get(at).is_some_and(|b| b - us <= 1 + b / 1000);
        above[if straddles { at + 1 } else { at }] += n;
    }
    for per in [&mut below, &mut above] {
        let counted: u64 = per.iter().sum();
        per[bounds_us.len()] += total - counted;
    }
    ([below, above], total)
}

/// Prometheus's `histogram_quantile` on classic buckets: linear within the bucket the rank
/// falls in, from 0 for the first; the highest finite bound when it falls in +Inf.
fn bucket_quantile(q: f64, bounds_s: &[f64], per: &[u64]) -> f64 {
    let total: u64 = per.iter().sum();
    let rank = q * total as f64;
    let mut below = 0u64;
    for (i, n) in per.iter().enumerate() {
        if (below + n) as f64 >= rank && *n > 0 {
            let Some(upper) = bounds_s.get(i) else { return *bounds_s.last().unwrap() };
            let lower = if i == 0 { 0.0 } else { bounds_s[i - 1] };
            return lower + (upper - lower) * (rank - below as f64) / *n as f64;
        }
        below += n;
    }
    f64::NAN
}

#[needs(full = "two monitors scraped by Prometheus between network namespaces", root, "ip", "prometheus", "curl")]
#[test]
fn prometheus_scrapes_two_hosts_and_its_quantile_matches_the_stored_window() {
    let prometheus = "prometheus";
    let hosts = Hosts::new("f");
    let lab = Lab::new();
    let config = lab.path("prometheus.yml");
    std::fs::write(
        &config,
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n\
         scrape_configs:\n  - job_name: rtbench\n    static_configs:\n\
         \x20     - {targets: ['10.231.0.1:9464'], labels: {host: a}}\n\
         \x20     - {targets: ['10.231.0.2:9464'], labels: {host: b}}\n",
    )
    .unwrap();
    let _server = Killed(
        Command::new("ip")
            .args(["netns", "exec", &hosts.a, prometheus])
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", lab.path("tsdb").display()))
            .arg("--web.listen-address=127.0.0.1:9090")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let second_cpu = if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 { "1" } else { "0" };
    // One window each (longer than the run): what Prometheus last scraped is that whole window.
    let monitor = |ns: &str, addr: &str, cpu: &str, label: &str| {
        let listen = format!("{addr}:9464");
        let args = ["monitor", "-a", cpu, "--label", label, "--window", "1h", "-D", "8s", "--linger", "40s"];
        let mut cmd = hosts.rtbench(&lab, ns, &args);
        let said = std::fs::File::create(lab.path(&format!("{label}.err"))).unwrap();
        Killed(cmd.args(["--listen", &listen]).stdout(Stdio::null()).stderr(said).spawn().unwrap())
    };
    let _a = monitor(&hosts.a, "10.231.0.1", "0", "host-a");
    let _b = monitor(&hosts.b, "10.231.0.2", second_cpu, "host-b");
    // Generous: in a full suite on two loaded CPUs (the stop test's loaded studies beside it)
    // both monitors once took longer than 15 s to store their first window.
    let runs = match std::panic::catch_unwind(|| lab.wait_for_runs(2, Duration::from_secs(45))) {
        Ok(runs) => runs,
        Err(_) => {
            let said = |l: &str| std::fs::read_to_string(lab.path(&format!("{l}.err"))).unwrap_or_default();
            panic!(
                "both monitors' windows not begun after 45 s; host-a said: {}; host-b said: {}",
                said("host-a"),
                said("host-b")
            )
        }
    };
    let id_of = |label: &str| {
        runs.as_array().unwrap().iter().find(|r| r["label"] == label).map(|r| r["id"].as_i64().unwrap()).unwrap()
    };
    let ids = [("a", id_of("host-a")), ("b", id_of("host-b"))];
    // Wait until both windows are stored whole and Prometheus has scraped their final numbers.
    let deadline = Instant::now() + Duration::from_secs(40);
    let totals: Vec<u64> = loop {
        let done: Vec<bool> = ids.iter().map(|(_, id)| lab.export_json(*id)["run"]["status"] == "complete").collect();
        if done.iter().all(|d| *d) {
            let totals: Vec<u64> =
                ids.iter().map(|(_, id)| lab.export_json(*id)["total"]["count"].as_u64().unwrap()).collect();
            let counts = query(&hosts.a, "rtbench_latency_seconds_count");
            let scraped = |h: &str| counts.iter().find(|(host, _)| host == h).map(|(_, v)| *v as u64);
            if scraped("a") == Some(totals[0]) && scraped("b") == Some(totals[1]) {
                break totals;
            }
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw both stored windows whole: {:?}",
            query(&hosts.a, "rtbench_latency_seconds_count")
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let bounds_us: Vec<u64> = [1u64, 2, 5].iter().flat_map(|m| (0..7).map(move |e| m * 10u64.pow(e))).collect();
    let mut bounds_us: Vec<u64> = bounds_us.into_iter().filter(|b| *b <= 10_000_000).collect();
    bounds_us.sort_unstable();
    let bounds_s: Vec<f64> = bounds_us.iter().map(|b| *b as f64 / 1e6).collect();
    for ((host, id), total) in ids.iter().zip(&totals) {
        let promql = format!("histogram_quantile(0.99, rtbench_latency_seconds_bucket{{host=\"{host}\"}})");
        let got = query(&hosts.a, &promql);
        assert_eq!(got.len(), 1, "one series for host {host}: {got:?}");
        let ([below, above], stored_total) = stored_buckets(&lab, *id, &bounds_us);
        assert_eq!(stored_total, *total);
        // A classic histogram knows only its bucket counts, so the stored HDR histogram is put
        // through the same buckets and interpolation. Moving samples up a bucket only raises
        // the quantile, so Prometheus's must lie between the two countings (and a float's
        // rounding of them).
        let (low, high) = (bucket_quantile(0.99, &bounds_s, &below), bucket_quantile(0.99, &bounds_s, &above));
        let prom = got[0].1;
        assert!(
            prom >= low * (1.0 - 1e-9) && prom <= high * (1.0 + 1e-9),
            "host {host}: Prometheus p99 {prom} s, stored between {low} s and {high} s"
        );
    }
}
