//! Every committed input of the fuzz targets — the seeds and the inputs that once crashed them
//! (`crash-*`) — replayed through the targets' own entry points (`fuzz/src/lib.rs`) on stable
//! Rust, as ordinary tests: an input that panics a target again fails here, named. Inputs a
//! local `fuzz/run.sh` left in `fuzz/artifacts/TARGET` are replayed too.

#[path = "../fuzz/src/lib.rs"]
mod entry;

use std::path::{Path, PathBuf};

/// The committed and the locally found inputs of `target`, in name order.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut found: Vec<PathBuf> = ["corpus", "artifacts"]
        .iter()
        .filter_map(|d| std::fs::read_dir(fuzz.join(d).join(target)).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
}

/// Runs `target`'s entry point on each of its inputs; fails naming every input that panicked.
fn replay(target: &str, run: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let files = inputs(target);
    assert!(!files.is_empty(), "fuzz/corpus/{target} holds the target's seeds");
    let crashed: Vec<String> = files
        .iter()
        .filter(|f| {
            let data = std::fs::read(f).unwrap();
            std::panic::catch_unwind(|| run(&data)).is_err()
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(crashed.is_empty(), "the {target} fuzz target panics on {crashed:?}");
}

#[test]
fn the_sample_log_target_replays_its_inputs() {
    replay("samplelog", entry::samplelog);
}

#[test]
fn the_import_target_replays_its_inputs() {
    replay("cyclictest_import", entry::cyclictest_import);
}

#[test]
fn the_fail_if_target_replays_its_inputs() {
    replay("fail_if", entry::fail_if);
}

#[test]
fn the_packet_target_replays_its_inputs() {
    replay("packet", entry::packet);
}

#[test]
fn the_flags_target_replays_its_inputs() {
    replay("flags", entry::flags);
}

#[test]
fn the_store_target_replays_its_inputs() {
    replay("store_rows", |data| entry::store_rows(data, env!("CARGO_BIN_EXE_rtbench")));
}
