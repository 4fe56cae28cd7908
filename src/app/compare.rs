//! `rtbench compare`: prints the comparison and exits 1 when a `--fail-if` condition holds.

use anyhow::Result;

use crate::cli::CompareArgs;
use crate::report::compare::{compare, parse_conditions};
use crate::store::{self, Store};

pub fn run(a: CompareArgs) -> Result<i32> {
    // The condition is checked first: a typo must not wait for the store.
    let conditions = a.fail_if.as_deref().map(parse_conditions).transpose()?.unwrap_or_default();
    let store = Store::open(&store::default_path(a.db.db.as_deref()))?;
    let runs = crate::report::select::runs(&store, &[a.baseline.clone(), a.label.clone()], &[], &super::catalog())?;
    let result = compare(&runs, &a.baseline, &a.label, &conditions)?;
    print!("(µs)\n{}", result.table);
    if result.failures.is_empty() {
        if !conditions.is_empty() {
            println!("no --fail-if condition holds");
        }
        return Ok(0);
    }
    for f in &result.failures {
        println!("FAIL: {f}");
    }
    Ok(1)
}
