//! `rtbench compare`: prints the comparison (a table, or JSON), writes the checks as JUnit,
//! and exits 1 when a `--fail-if` condition holds.

use std::path::Path;

use anyhow::Result;

use crate::config::{CompareConfig, StudyGate};
use crate::report::compare::{compare, Comparison};
use crate::report::findings;
use crate::store::Store;

pub fn run(a: CompareConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let runs = crate::report::select::runs(&store, &[a.baseline.clone(), a.label.clone()], &[], &super::catalog())?;
    let result = compare(&runs, &a.baseline, &a.label, &a.conditions)?;
    if let Some(path) = &a.junit {
        crate::config::write_atomic(path, crate::report::junit::render(std::slice::from_ref(&result)).as_bytes())?;
    }
    let failed = result.failures().next().is_some();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&crate::report::compare::document(&result))?);
        // stdout stays one JSON document; the verdict lines go where CI logs show them.
        for f in result.failures() {
            eprintln!("FAIL: {}", f.message);
        }
    } else {
        print_table(&result, !a.conditions.is_empty());
        // The same comparison in words, so a CI log says it too (issue 24).
        let (latency, costs) = crate::report::select::split(runs);
        print!("\n{}", findings::text(&findings::of_pair(&latency, &costs, &a.baseline, &a.label)));
    }
    Ok(if failed { 1 } else { 0 })
}

fn print_table(result: &Comparison, gated: bool) {
    print!("(µs)\n{}", result.table);
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
/// study that did not finish (`code` not 0) is not compared: its code stands.
pub fn gate_study(gate: Option<&StudyGate>, db: &Path, labels: &[&str], code: i32) -> Result<i32> {
    let Some(gate) = gate.filter(|_| code == 0) else { return Ok(code) };
    let store = Store::open(db)?;
    let mut results = Vec::new();
    for label in labels {
        let wanted = [gate.baseline.clone(), label.to_string()];
        let runs = crate::report::select::runs(&store, &wanted, &[], &super::catalog())?;
        let result = compare(&runs, &gate.baseline, label, &gate.conditions)?;
        println!("\nstudy: label {label} against baseline {}", gate.baseline);
        print_table(&result, !gate.conditions.is_empty());
        results.push(result);
    }
    if let Some(path) = &gate.junit {
        crate::config::write_atomic(path, crate::report::junit::render(&results).as_bytes())?;
    }
    Ok(if results.iter().any(|r| r.failures().next().is_some()) { 1 } else { 0 })
}
