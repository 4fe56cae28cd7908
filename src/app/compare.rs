//! `rtbench compare`: prints the comparison (a table, or JSON), writes the checks as JUnit,
//! and exits 1 when a `--fail-if` condition holds.

use anyhow::Result;

use crate::config::CompareConfig;
use crate::report::compare::{compare, Comparison};
use crate::store::Store;

pub fn run(a: CompareConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let runs = crate::report::select::runs(&store, &[a.baseline.clone(), a.label.clone()], &[], &super::catalog())?;
    let result = compare(&runs, &a.baseline, &a.label, &a.conditions)?;
    if let Some(path) = &a.junit {
        crate::config::write_atomic(path, crate::report::junit::render(&result).as_bytes())?;
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
