//! `rtbench wcet`: the extreme-value estimate of a stored run.

use crate::helpers::*;

fn wcet_json(lab: &Lab, id: i64, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["wcet".to_string(), id.to_string(), "--json".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&lab.ok(&args)).expect("wcet --json is JSON")
}

#[test]
fn a_run_with_its_sample_log_gets_levels_inside_their_intervals() {
    let lab = Lab::new();
    let log = lab.path("s.log");
    lab.ok(&["synthetic", "-l", "300000", "-q", "--samples", log.to_str().unwrap()]);
    let id = lab.last_run();
    let e = wcet_json(&lab, id, &[]);
    assert_eq!(e["from"], "samples", "the run's own log is used: {e}");
    assert!(e["clusters"].as_u64().is_some(), "declustered: {e}");
    let checks: Vec<&str> = e["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(checks, ["independence", "stationarity"], "{e}");
    let notes = e["notes"].to_string();
    assert!(!notes.contains("under load"), "an idle run has no load note: {notes}");
    let levels = e["levels"].as_array().unwrap();
    assert!(levels.len() >= 3, "{e}");
    for l in levels {
        let (lo, ns) = (l["lo_ns"].as_f64().unwrap(), l["ns"].as_f64().unwrap());
        assert!(lo <= ns && l["hi_ns"].as_f64().is_none_or(|hi| ns <= hi), "{l}");
    }
    // Without the log, the histogram.
    std::fs::remove_file(&log).unwrap();
    let e = wcet_json(&lab, id, &[]);
    assert_eq!(e["from"], "histogram", "{e}");
    let text = lab.ok(&["wcet", &id.to_string()]);
    assert!(text.contains("thresholds tried") && text.contains("verdict"), "{text}");
    let shown = lab.ok(&["show", &id.to_string()]);
    assert!(shown.contains("worst case (extreme-value estimate") && shown.contains("1e-9: "), "{shown}");
    let doc = lab.export_json(id);
    assert_valid_export(&doc);
    assert_eq!(doc["wcet"]["from"], "histogram", "the export carries the histogram's estimate");
    assert!(!doc["wcet"]["levels"].as_array().unwrap().is_empty(), "{}", doc["wcet"]);
}

#[test]
fn a_loaded_run_is_warned_that_its_tail_mixes_load_phases() {
    let lab = Lab::alone();
    lab.ok(&["synthetic", "-l", "200000", "-q", "--load", "cpu", "--settle", "200ms"]);
    let id = lab.last_run();
    let e = wcet_json(&lab, id, &[]);
    let notes = e["notes"].to_string();
    assert!(notes.contains("under load cpu (cpu)") && notes.contains("phases"), "{notes}");
    let doc = lab.export_json(id);
    assert!(doc["wcet"]["notes"].to_string().contains("under load cpu"), "the report's estimate says so too");
}

#[test]
fn a_short_run_is_too_few_to_estimate() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "300", "-q"]);
    let e = wcet_json(&lab, lab.last_run(), &[]);
    assert_eq!(e["verdict"], "too_few", "{e}");
    assert_eq!(e["levels"], serde_json::json!([]), "no number for too few exceedances");
    let shown = lab.ok(&["show", &lab.last_run().to_string()]);
    assert!(shown.contains("worst case: too few"), "{shown}");
}

#[test]
fn wcet_rejects_what_is_not_there() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "300", "-q"]);
    assert_rejected(&lab.run(&["wcet", "999"]), "999");
    let not_a_log = lab.path("nolog");
    std::fs::write(&not_a_log, b"hello").unwrap();
    assert_rejected(&lab.run(&["wcet", "1", "--samples", not_a_log.to_str().unwrap()]), "not an rtbench sample log");
    assert_rejected(&lab.run(&["wcet", "1", "--samples", "/nonexistent/log"]), "/nonexistent/log");
}

#[test]
fn a_corrupt_sample_log_is_refused_not_fitted_in_part() {
    let lab = Lab::new();
    let log = lab.path("s.log");
    let log_arg = log.to_str().unwrap();
    lab.ok(&["synthetic", "-l", "300000", "-q", "--samples", log_arg]);
    let id = lab.last_run().to_string();
    let whole = wcet_json(&lab, lab.last_run(), &["--samples", log_arg]);
    assert_eq!(whole["from"], "samples", "the intact log is read: {whole}");
    // One byte in the middle of the file: inside a block's payload, so only its checksum sees it.
    let mut bytes = std::fs::read(&log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let out = lab.run(&["wcet", &id, "--samples", log_arg]);
    assert_rejected(&out, "is corrupt: bad block at byte");
    assert!(text(&out.stderr).contains(log_arg), "names the file: {}", text(&out.stderr));
    assert!(text(&out.stdout).is_empty(), "no estimate is printed: {}", text(&out.stdout));
    // The run's own log (no --samples) is read the same way.
    assert_rejected(&lab.run(&["wcet", &id]), "is corrupt");
}
