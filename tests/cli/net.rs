//! The network probes between two hosts: two network namespaces joined by a veth pair, made
//! and removed by the test itself.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// Two namespaces, `a` (10.231.0.1) and `b` (10.231.0.2), joined by a veth pair.
pub struct Hosts {
    pub a: String,
    pub b: String,
}

pub const A_ADDR: &str = "10.231.0.1";

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl Hosts {
    /// Two namespaces joined by a veth pair (the test needs root and `ip`).
    pub fn new(tag: &str) -> Hosts {
        let id = format!("{}{tag}", std::process::id() % 100_000);
        let h = Hosts { a: format!("rtbA{id}"), b: format!("rtbB{id}") };
        let (va, vb) = (format!("va{id}"), format!("vb{id}"));
        let ok = ip(&["netns", "add", &h.a])
            && ip(&["netns", "add", &h.b])
            && ip(&["link", "add", &va, "netns", &h.a, "type", "veth", "peer", "name", &vb, "netns", &h.b])
            && ip(&["-n", &h.a, "addr", "add", "10.231.0.1/30", "dev", &va])
            && ip(&["-n", &h.b, "addr", "add", "10.231.0.2/30", "dev", &vb])
            && ip(&["-n", &h.a, "link", "set", &va, "up"])
            && ip(&["-n", &h.b, "link", "set", &vb, "up"])
            && ip(&["-n", &h.a, "link", "set", "lo", "up"])
            && ip(&["-n", &h.b, "link", "set", "lo", "up"]);
        assert!(ok, "could not make network namespaces {} and {} with iproute2", h.a, h.b);
        h
    }

    /// rtbench inside namespace `ns`.
    pub fn rtbench(&self, lab: &Lab, ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_rtbench")]).args(args).env("RTBENCH_DB", lab.db());
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

/// Stops a server with SIGTERM; returns its exit code and its last line.
fn stop(srv: Srv) -> (Option<i32>, String) {
    let Srv { mut child, lines, .. } = srv;
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let until = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "the server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = child.wait().unwrap().code();
    let last = lines.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    (code, last)
}

#[needs(root, "ip")]
#[test]
fn pingpong_crosses_a_network_between_two_hosts_on_every_transport() {
    let hosts = Hosts::new("p");
    let lab = Lab::new();
    for (i, transport) in ["udp", "tcp", "zmq"].iter().enumerate() {
        let addr = format!("{A_ADDR}:{}", 17_800 + i);
        let srv = server(hosts.rtbench(&lab, &hosts.a, &["pingpong", "--serve", &addr, "--transport", transport]));
        let out = hosts
            .rtbench(
                &lab,
                &hosts.b,
                &["pingpong", &addr, "--transport", transport, "-n", "3000", "--warmup", "200", "-q"],
            )
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{transport}: {}", text(&out.stderr));
        let (code, _) = stop(srv);
        assert_eq!(code, Some(0), "the server stops cleanly on SIGTERM");
        let doc = lab.export_json(lab.last_run());
        assert_valid_export(&doc);
        assert_eq!(doc["run"]["probe"], "pingpong");
        assert_eq!(doc["run"]["params"]["transport"], *transport);
        assert_eq!(doc["run"]["params"]["peer"], addr);
        assert_eq!(doc["total"]["count"], 3000, "{transport}: warm-up and cold round trips are not counted");
        assert_eq!(doc["run"]["params"]["thread0_warmup"]["round_trips"], 200);
        assert!(doc["run"]["params"]["thread0_cold_rtt_ns"].as_u64().unwrap() > 0);
    }
}

#[test]
fn unix_and_rtt_on_one_host() {
    let lab = Lab::new();
    let sock = lab.path("pp.sock");
    let s = sock.to_str().unwrap();
    let srv = server(lab.cmd(&["pingpong", "--serve", s, "--transport", "unix"]));
    lab.ok(&["pingpong", s, "--transport", "unix", "-n", "2000", "--rtt", "-s", "512", "-q"]);
    stop(srv);
    let doc = lab.export_json(lab.last_run());
    assert_eq!(doc["run"]["params"]["sample"], "round trip");
    assert_eq!(doc["run"]["params"]["size_bytes"], 512);
    assert_eq!(doc["total"]["count"], 2000);
    assert!(!sock.exists(), "the server removes its socket");
}

/// Issue 22: where both ends ran is stored and shown, and -a none leaves the client unpinned as
/// sockperf runs.
#[test]
fn each_end_of_a_ping_pong_says_where_it_ran() {
    let lab = Lab::new();
    let sock = lab.path("placed.sock");
    let s = sock.to_str().unwrap();
    let srv = server(lab.cmd(&["pingpong", "--serve", s, "--transport", "unix", "-a", "0"]));
    lab.ok(&["pingpong", s, "--transport", "unix", "-n", "500", "-a", "none", "-q"]);
    stop(srv);
    let id = lab.last_run();
    let params = &lab.export_json(id)["run"]["params"];
    assert_eq!(params["cpus"], serde_json::json!([null]), "the client's thread was not pinned: {params}");
    let peer = params["peer_placement"].as_str().expect("the server's placement is stored");
    assert!(peer.starts_with("pinned to CPU 0, "), "{peer}");
    let shown = lab.ok(&["show", &id.to_string()]);
    assert!(shown.contains(&format!("echo server ({}): {peer}", params["peer_host"].as_str().unwrap())), "{shown}");
}

#[needs(root, "ip")]
#[test]
fn response_measures_the_target_from_the_logger_host() {
    let hosts = Hosts::new("r");
    let lab = Lab::new();
    let addr = format!("{A_ADDR}:17810");
    let srv = server(hosts.rtbench(&lab, &hosts.a, &["response", "--target", &addr]));
    let out = hosts.rtbench(&lab, &hosts.b, &["response", "--logger", &addr, "-D", "2s", "-q"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    stop(srv);
    let doc = lab.export_json(lab.last_run());
    assert_valid_export(&doc);
    let p = &doc["run"]["params"];
    assert_eq!(p["target"], addr, "the stored run names its target");
    // The target's hello: its host, and apart from it where its thread runs.
    let host = p["target_host"].as_str().unwrap();
    assert!(!host.is_empty() && !host.contains('\n'), "{host:?}");
    assert!(p["target_placement"].as_str().is_some_and(|w| w.contains("unpinned") || w.contains("CPU")), "{p}");
    let t = &doc["threads"][0];
    let triggers = t["count"].as_u64().unwrap() + t["overruns"].as_u64().unwrap();
    // 2 s at 1 ms: every trigger is either answered or counted lost.
    assert!((1500..=2100).contains(&triggers), "{triggers} triggers in 2 s");
    assert_eq!(p["lost_triggers"].as_u64().unwrap(), t["overruns"].as_u64().unwrap());
}

#[test]
fn foreign_and_malformed_packets_are_dropped_and_counted() {
    let lab = Lab::new();
    let srv = server(lab.cmd(&["pingpong", "--serve", "127.0.0.1:0"]));
    let addr = srv.addr();
    let addr = addr.as_str();
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut ping = vec![0u8; 40];
    ping[..4].copy_from_slice(b"RTB1");
    ping[4] = 4;
    for junk in [b"hello?".to_vec(), vec![0xff; 2000], ping.clone(), vec![]] {
        sock.send_to(&junk, addr).unwrap();
    }
    let mut buf = [0u8; 4096];
    assert!(sock.recv(&mut buf).is_err(), "nothing answers a packet outside a session");
    lab.ok(&["pingpong", addr, "-n", "500", "-q"]);
    let (code, last) = stop(srv);
    assert_eq!(code, Some(0));
    assert!(last.contains("1 sessions") && last.contains("dropped 4 foreign"), "{last}");
}

#[test]
fn network_bad_input_is_rejected() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["pingpong", "127.0.0.1:1", "-n", "10", "-q"]), "cannot reach 127.0.0.1:1");
    assert_rejected(&lab.run(&["pingpong", "--transport", "tcp", "127.0.0.1:1", "-n", "10"]), "connection refused");
    assert_rejected(&lab.run(&["pingpong", "--transport", "carrier-pigeon"]), "carrier-pigeon");
    assert_rejected(&lab.run(&["pingpong", "-s", "0"]), "1 to 65536");
    assert_rejected(&lab.run(&["pingpong", "-s", "70000"]), "1 to 65536");
    assert_rejected(&lab.run(&["response", "-D", "1s"]), "--target");
    let srv = server(lab.cmd(&["pingpong", "--serve", "127.0.0.1:0", "--token", "5"]));
    let addr = srv.addr();
    assert_rejected(&lab.run(&["pingpong", &addr, "--token", "6", "-n", "10"]), "refused the session token");
    assert_rejected(&lab.run(&["pingpong", "--serve", &addr]), "address already in use");
    lab.ok(&["pingpong", &addr, "--token", "5", "-n", "100", "-q"]);
    stop(srv);
    assert_eq!(lab.runs().as_array().unwrap().len(), 1, "only the good run was stored");
}

/// Issue 29: a study whose cells panicked (here a `println!` to a closed pipe) waited for ever
/// for its own echo server, which nobody told to stop, and took no notice of SIGTERM.
#[test]
fn a_study_whose_output_pipe_closes_ends_instead_of_hanging() {
    let lab = Lab::alone();
    let report = lab.path("report");
    let tmp = lab.dir.path().to_str().unwrap().to_string();
    let args = [
        "study",
        "--no-qualify",
        "--no-split",
        "--no-classify",
        "--load",
        "none",
        "-D",
        "1s",
        "--no-sysbench",
        "-q",
        "--tmpdir",
        &tmp,
        "-o",
    ];
    let mut child = lab
        .cmd(&[&args[..], &[report.to_str().unwrap()]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("rtbench starts");
    // The reader goes away: the study's first line of output fails.
    drop(child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = child.try_wait().expect("wait");
    if ended.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let status = ended.expect("the study hung after its output failed");
    assert!(status.code().is_some(), "it exited by itself: {status:?}");
}
