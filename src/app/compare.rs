//! `rtbench compare`: prints the comparison (a table, or JSON), writes the checks as JUnit,
//! and exits 1 when a `--fail-if` condition holds.

use std::path::Path;

use anyhow::Result;

use super::task::{CompareConfig, StudyGate};
use crate::report::findings;
use crate::report::formats::junit::Errored;
use crate::report::text::compare::{compare, Comparison};
use crate::store::Store;

pub fn run(a: CompareConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let mut results = Vec::new();
    for label in &a.labels {
        let runs =
            crate::report::select::runs(&store, &[a.baseline.clone(), label.clone()], &[], &super::catalog().probes)?;
        let result = compare(&runs, &a.baseline, label, &a.conditions)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&crate::report::text::compare::document(&result))?);
            // stdout stays one JSON document; the verdict lines go where CI logs show them.
            for f in result.failures() {
                eprintln!("FAIL: {}", f.message);
            }
        } else {
            if a.labels.len() > 1 {
                println!("compare: label {label} against baseline {}", a.baseline);
            }
            print_table(&result, !a.conditions.is_empty());
            // The same comparison in words, so a CI log says it too (issue 24).
            let (latency, costs) = crate::report::select::split(runs);
            print!("\n{}", findings::text(&findings::of_pair(&latency, &costs, &a.baseline, label)));
        }
        results.push(result);
    }
    // One file for every label: a lab's CI reads one suite per host (issue 39).
    if let Some(path) = &a.junit {
        crate::config::write_atomic(path, crate::report::formats::junit::render(&results, &[]).as_bytes())?;
    }
    if a.lava {
        print!("{}", crate::report::formats::lava::render(&results, &[]));
    }
    let failed = results.iter().any(|r| r.failures().next().is_some());
    Ok(if failed { 1 } else { 0 })
}

fn print_table(result: &Comparison, gated: bool) {
    print!("(µs)\n{}", result.table);
    print!("{}", crate::report::text::compare_noise::table(&result.classes, &result.baseline, &result.label));
    let mut failures = result.failures().peekable();
    if failures.peek().is_none() && gated {
        println!("no --fail-if condition holds");
    }
    for f in failures {
        println!("FAIL: {}", f.message);
    }
}

/// Before a study's first cell: its --baseline must name stored runs and its --junit file be
/// writable, or the study would end, minutes later, on a typo.
pub fn check_gate(gate: Option<&StudyGate>, db: &Path) -> Result<()> {
    let Some(gate) = gate else { return Ok(()) };
    let known = if db.exists() { Store::open(db)?.runs()? } else { Vec::new() };
    if !known.iter().any(|r| r.label == gate.baseline) {
        return Err(crate::invalid!("--baseline: no stored run has the label '{}'", gate.baseline));
    }
    gate.junit.as_deref().map_or(Ok(()), crate::config::check_writable)
}

/// After a study's cells: each of its labels (one per preemption pass) against the baseline,
/// printed as `compare` prints it, the checks written as JUnit; 1 when a condition holds. A
/// study stopped by a signal is not compared: its code stands. One whose cells failed (code 1)
/// is compared over the cells that ran, and its failed cells are said and written as JUnit
/// errors: a CI job sees which cells failed beside the checks (issue 29). It exits 1.
pub fn gate_study(gate: Option<&StudyGate>, db: &Path, labels: &[&str], code: i32, errored: &[Errored]) -> Result<i32> {
    let compared = code == 0 || (code == 1 && !errored.is_empty());
    let Some(gate) = gate.filter(|_| compared) else { return Ok(code) };
    let store = Store::open(db)?;
    let mut results = Vec::new();
    for label in labels {
        let failed: Vec<&Errored> = errored.iter().filter(|e| e.label == *label).collect();
        let result = match compare_label(&store, gate, label) {
            Ok(result) => result,
            // Every cell that would pair failed: the suite holds only their errors.
            Err(e) if !failed.is_empty() => {
                let table = format!("{e:#}\n");
                let (baseline, label, pairs, classes) = (gate.baseline.clone(), label.to_string(), vec![], vec![]);
                Comparison { baseline, label, pairs, table, classes }
            }
            Err(e) => return Err(e),
        };
        println!("\nstudy: label {label} against baseline {}", gate.baseline);
        print_table(&result, !gate.conditions.is_empty());
        for e in failed {
            println!("ERROR: {} {}: the cell failed: {}", e.probe, e.load, e.reason);
        }
        results.push(result);
    }
    if let Some(path) = &gate.junit {
        crate::config::write_atomic(path, crate::report::formats::junit::render(&results, errored).as_bytes())?;
    }
    if gate.lava {
        print!("{}", crate::report::formats::lava::render(&results, errored));
    }
    let failed = results.iter().any(|r| r.failures().next().is_some()) || !errored.is_empty();
    Ok(if failed { 1 } else { 0 })
}

/// One of a study's labels against its baseline.
fn compare_label(store: &Store, gate: &StudyGate, label: &str) -> Result<Comparison> {
    let wanted = [gate.baseline.clone(), label.to_string()];
    let runs = crate::report::select::runs(store, &wanted, &[], &super::catalog().probes)?;
    compare(&runs, &gate.baseline, label, &gate.conditions)
}
