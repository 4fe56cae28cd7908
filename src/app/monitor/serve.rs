//! The `/metrics` endpoint: a thread with an HTTP server that encodes the last published
//! [`Snapshot`] (and the CPUs' steal time, read from /proc/stat at the scrape) in the
//! Prometheus/OpenMetrics text format.

use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::metrics::{NoiseSeries, Series, Shared, BOUNDS_NS};

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The running endpoint; dropping it stops the server thread.
pub struct Endpoint {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    pub addr: String,
}

impl Endpoint {
    pub fn start(listen: &str, token: Option<String>, shared: Shared, probe: &'static str) -> Result<Endpoint> {
        let server = tiny_http::Server::http(listen)
            .map_err(|e| crate::invalid!("--listen {listen}: cannot serve there: {e}"))?;
        let addr = server.server_addr().to_ip().map_or_else(|| listen.to_string(), |a| a.to_string());
        let server = Arc::new(server);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Exposition { shared, probe }));
        let serving = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("rtbench-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let _ = answer(request, &registry, token.as_deref());
                }
            })
            .context("could not start the metrics thread")?;
        Ok(Endpoint { server, thread: Some(thread), addr })
    }
}

/// How long a stopping monitor waits for the endpoint's thread: it may be writing an answer
/// to a scraper that does not read (issue 29: no wait without a bound).
const STOP_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.server.unblock();
        let Some(t) = self.thread.take() else { return };
        let until = std::time::Instant::now() + STOP_WAIT;
        while !t.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // One still writing is left behind: it ends with the process.
        if t.is_finished() {
            let _ = t.join();
        }
    }
}

fn answer(request: tiny_http::Request, registry: &Registry, token: Option<&str>) -> std::io::Result<()> {
    let reply = |code: u16, body: String| tiny_http::Response::from_string(body).with_status_code(code);
    if let Some(token) = token {
        let expected = format!("Bearer {token}");
        let given = request.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.as_str());
        if given != Some(expected.as_str()) {
            return request.respond(reply(401, "a bearer token is required\n".into()));
        }
    }
    if request.url() != "/metrics" {
        return request.respond(reply(404, "only /metrics is served here\n".into()));
    }
    let mut body = String::new();
    if prometheus_client::encoding::text::encode(&mut body, registry).is_err() {
        return request.respond(reply(500, "the metrics could not be encoded\n".into()));
    }
    let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
    request.respond(reply(200, body).with_header(header))
}

/// Encodes a copy of the snapshot taken under its lock, so the lock is held for a copy only.
/// Every latency series names the probe (`timer`, or `noise` for gaps in a busy loop).
#[derive(Debug)]
struct Exposition {
    shared: Shared,
    probe: &'static str,
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.shared.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let probe = self.probe;
        let help = "Latency since the monitor started: timer wake-ups, or gaps in a busy loop for noise";
        histogram(&mut encoder, "rtbench_latency", help, &snap.series, probe)?;
        if !snap.irq.is_empty() {
            let help = "With --split: how late the timer interrupt of each wake-up ran since the monitor started";
            histogram(&mut encoder, "rtbench_irq_latency", help, &snap.irq, probe)?;
        }
        let help = "Largest latency of the current window and of the last closed one";
        let mut family =
            encoder.encode_descriptor("rtbench_window_max", help, Some(&Unit::Seconds), MetricType::Gauge)?;
        for s in &snap.series {
            let current = [("cpu", s.cpu.as_str()), ("probe", probe), ("window", "current")];
            family.encode_family(&current)?.encode_gauge(&(s.max_current_ns as f64 / 1e9))?;
            if let Some(last) = s.max_last_ns {
                let labels = [("cpu", s.cpu.as_str()), ("probe", probe), ("window", "last")];
                family.encode_family(&labels)?.encode_gauge(&(last as f64 / 1e9))?;
            }
        }
        let help = "Samples whose latency was over the threshold (seconds)";
        let mut family = encoder.encode_descriptor("rtbench_over_threshold", help, None, MetricType::Counter)?;
        for s in &snap.series {
            for (t, n) in snap.thresholds_ns.iter().zip(&s.over) {
                let threshold = format!("{}", *t as f64 / 1e9);
                let labels = [("cpu", s.cpu.as_str()), ("probe", probe), ("threshold", threshold.as_str())];
                family.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(n, None)?;
            }
        }
        let help = "Time the hypervisor ran something else while this CPU wanted to run";
        let mut family = encoder.encode_descriptor("rtbench_steal", help, Some(&Unit::Seconds), MetricType::Counter)?;
        let per_tick = 1.0 / crate::sys::clock_ticks_per_second().max(1) as f64;
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        for c in crate::sysinfo::cpu_times(&stat) {
            let Some(cpu) = c.cpu.map(|n| n.to_string()) else { continue };
            if !snap.series.iter().any(|s| s.cpu == cpu) {
                continue;
            }
            let steal = c.get(crate::sysinfo::CpuTimes::STEAL) as f64 * per_tick;
            family.encode_family(&[("cpu", cpu.as_str())])?.encode_counter::<NoLabelSet, _, u64>(&steal, None)?;
        }
        if !snap.noise.is_empty() {
            noise_counters(&mut encoder, &snap.noise)?;
        }
        Ok(())
    }
}

/// `--noise --classify`: the gaps' time by what ran in them, and their count by class, as rtla
/// osnoise top's columns (`hardware`: nothing the kernel saw, the hypervisor's, an SMI's or the
/// hardware's).
fn noise_counters(encoder: &mut DescriptorEncoder, noise: &[NoiseSeries]) -> Result<(), std::fmt::Error> {
    let help = "With --classify: time in noise gaps by what ran in them (class irq, softirq, thread, hardware: \
                nothing the kernel saw, or unknown; name: the IRQ, softirq or task)";
    let mut family = encoder.encode_descriptor("rtbench_noise", help, Some(&Unit::Seconds), MetricType::Counter)?;
    for n in noise {
        let labels = [("cpu", n.cpu.as_str()), ("class", n.class.key()), ("name", n.name.as_str())];
        family.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&(n.ns as f64 / 1e9), None)?;
    }
    let mut gaps: std::collections::BTreeMap<(&str, &str), u64> = std::collections::BTreeMap::new();
    for n in noise {
        *gaps.entry((n.cpu.as_str(), n.class.key())).or_default() += n.count;
    }
    let help = "With --classify: noise gaps by the class of what ran in them";
    let mut family = encoder.encode_descriptor("rtbench_noise_gaps", help, None, MetricType::Counter)?;
    for ((cpu, class), count) in gaps {
        family.encode_family(&[("cpu", cpu), ("class", class)])?.encode_counter::<NoLabelSet, _, u64>(&count, None)?;
    }
    Ok(())
}

/// One latency histogram per CPU, in seconds, on the buckets of [`BOUNDS_NS`].
fn histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[Series],
    probe: &str,
) -> Result<(), std::fmt::Error> {
    let buckets: Vec<f64> = BOUNDS_NS.iter().map(|b| *b as f64 / 1e9).chain([f64::INFINITY]).collect();
    let mut family = encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for s in series {
        let pairs: Vec<(f64, u64)> = buckets.iter().copied().zip(s.buckets.iter().copied()).collect();
        let labels = [("cpu", s.cpu.as_str()), ("probe", probe)];
        family.encode_family(&labels)?.encode_histogram::<NoLabelSet>(s.sum_ns as f64 / 1e9, s.count, &pairs, None)?;
    }
    Ok(())
}
