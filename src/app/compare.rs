//! `rtbench compare`: prints the comparison and exits 1 when a `--fail-if` condition holds.

use anyhow::Result;

use crate::config::CompareConfig;
use crate::report::compare::compare;
use crate::store::Store;

pub fn run(a: CompareConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let runs = crate::report::select::runs(&store, &[a.baseline.clone(), a.label.clone()], &[], &super::catalog())?;
    let result = compare(&runs, &a.baseline, &a.label, &a.conditions)?;
    print!("(µs)\n{}", result.table);
    if result.failures.is_empty() {
        if !a.conditions.is_empty() {
            println!("no --fail-if condition holds");
        }
        return Ok(0);
    }
    for f in &result.failures {
        println!("FAIL: {f}");
    }
    Ok(1)
}
