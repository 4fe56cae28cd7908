//! `rtbench audit`: every check with its evidence, JSON to a committed schema, stored with runs.

use crate::helpers::*;

fn validate(doc: &serde_json::Value) {
    assert_matches_schema(doc, "audit.schema.json");
}

#[test]
fn the_audit_names_each_setting_with_evidence_and_the_strict_exit_follows_the_bad_ones() {
    let lab = Lab::new();
    let out = lab.run(&["audit", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&doc);
    let findings = doc["findings"].as_array().unwrap();
    let checks: Vec<&str> = findings.iter().map(|f| f["check"].as_str().unwrap()).collect();
    for must in ["preemption", "rt-throttling", "virtualization", "clocksource", "cpuidle", "irq-affinity", "isolation"]
    {
        assert!(checks.contains(&must), "{must} not in {checks:?}");
    }
    let text = lab.ok(&["audit"]);
    for f in findings {
        let (check, summary) = (f["check"].as_str().unwrap(), f["summary"].as_str().unwrap());
        assert!(text.contains(check) && text.contains(summary), "the table shows {check}");
        let evidence = &f["evidence"][0];
        assert!(text.contains(&format!(
            "{}: {}",
            evidence["source"].as_str().unwrap(),
            evidence["value"].as_str().unwrap()
        )));
    }
    let any_bad = findings.iter().any(|f| f["severity"] == "bad");
    assert_eq!(lab.run(&["audit", "--strict"]).status.code(), Some(if any_bad { 1 } else { 0 }));
    assert!(!lab.db().exists(), "auditing writes no store");
}

#[test]
fn bad_cpu_lists_are_rejected() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["audit", "--cpus", "4096"]), "not online");
    assert_rejected(&lab.run(&["audit", "--cpus", "one"]), "not a CPU list");
}

#[test]
fn every_measuring_run_stores_the_audit_of_its_cpus() {
    let lab = Lab::new();
    lab.ok(&["timer", "-t", "1", "-a", "0", "-l", "100", "-q"]);
    let run = lab.export_json(lab.last_run());
    assert_valid_export(&run);
    let stored: Vec<&str> =
        run["run"]["system"]["audit"].as_array().unwrap().iter().map(|f| f["check"].as_str().unwrap()).collect();
    let now: serde_json::Value = serde_json::from_str(&lab.ok(&["audit", "--cpus", "0", "--json"])).unwrap();
    let checks: Vec<&str> = now["findings"].as_array().unwrap().iter().map(|f| f["check"].as_str().unwrap()).collect();
    assert_eq!(stored, checks);
    validate(&serde_json::json!({ "cpus": [0], "findings": run["run"]["system"]["audit"] }));
    lab.ok(&["synthetic", "-l", "100", "-q"]);
    let synthetic = lab.export_json(lab.last_run());
    assert!(synthetic["run"]["system"].get("audit").is_none(), "synthetic samples audit no machine");
}
