//! A store written by an earlier rtbench reads as that rtbench read it. The fixture
//! (`tests/fixtures/store-today.sql`, made by `tests/fixtures/store-today.sh`) holds a run of
//! every probe and instrument that runs here, a monitor's windows, sysbench and an import;
//! `tests/fixtures/store-today/` holds what that rtbench printed of it: the run list, each
//! run's `show` and JSON export, and the report's outline. This rtbench must print the same,
//! but for the probe's tag its exports now write before a run's own parameters.
//!
//! The expected files were written by the rtbench that made the store (this test at that
//! head, with `RTBENCH_BLESS=1`); bless them again only on purpose, and read their diff.

use std::path::{Path, PathBuf};

use crate::helpers::*;
use crate::snapshot::{mask, outline};

fn expected(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-today").join(name)
}

/// Compares `now` with the expected file `name`, or writes it when blessing.
fn same(name: &str, now: &str) {
    if std::env::var_os("RTBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(expected(name), now).unwrap();
        return;
    }
    let then = std::fs::read_to_string(expected(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    if then != now {
        let at = then.lines().zip(now.lines()).position(|(a, b)| a != b).unwrap_or(then.lines().count());
        panic!(
            "{name} differs from what the rtbench that wrote the store printed, first at line {}:\n  then: {:?}\n  now:  {:?}",
            at + 1,
            then.lines().nth(at),
            now.lines().nth(at)
        );
    }
}

/// The probe each measured run's parameters are tagged with, by the run's stored probe name;
/// an imported run's parameters are the import's, with no tag.
fn tag(probe: &str, params: &serde_json::Value) -> Option<&'static str> {
    Some(match probe {
        _ if params.get("imported_from").is_some() => return None,
        "timer" | "timerlat" | "gtod" | "pingpong" | "response" | "noise" | "synthetic" => {
            rtbench::probe::info(probe).unwrap().name
        }
        _ if params.get("op").is_some() => "sysbench-op",
        _ if params.get("load_item").is_some() => "sysbench-total",
        _ => return None,
    })
}

#[test]
fn a_store_of_the_last_release_s_shape_reads_as_that_release_read_it() {
    let lab = Lab::new();
    let sql = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-today.sql"));
    rusqlite::Connection::open(lab.db()).unwrap().execute_batch(&sql.unwrap()).unwrap();
    let blessing = std::env::var_os("RTBENCH_BLESS").is_some_and(|v| v == "1");
    let masks = [(lab.dir.path().display().to_string(), "[LAB]".to_string())];

    same("runs.txt", &lab.ok(&["runs"]));
    let runs = lab.runs();
    let runs = runs.as_array().unwrap();
    assert!(runs.len() >= 12, "the fixture's runs: {}", runs.len());
    let mut tagged = 0;
    for run in runs {
        let id = run["id"].as_i64().unwrap();
        same(&format!("show-{id}.txt"), &lab.ok(&["show", &id.to_string()]));
        let mut doc = lab.export_json(id);
        let params = doc["run"]["params"].as_object_mut().unwrap();
        let written = params.shift_remove("probe");
        let want = tag(doc["run"]["probe"].as_str().unwrap(), &doc["run"]["params"]);
        if !blessing {
            assert_eq!(written.as_ref().and_then(|t| t.as_str()), want, "run {id}'s parameters say whose they are");
        }
        tagged += usize::from(written.is_some());
        same(&format!("export-{id}.json"), &(serde_json::to_string_pretty(&doc).unwrap() + "\n"));
    }
    assert!(blessing || tagged >= 11, "{tagged} runs tagged");

    let out = lab.path("report");
    lab.ok(&["report", "--label", "today", "-o", out.to_str().unwrap()]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    same("report-outline.txt", &mask(&outline(&html), &masks));
}
