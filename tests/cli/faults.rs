//! Faults a long run meets: the store's disk fills, another writer locks the store, the sample
//! log's disk fills. The run goes on measuring, says what failed once, keeps what it can, and
//! the store stays whole (SQLite's integrity check).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// A small tmpfs of the test's own, unmounted when dropped.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    /// Mounts one (the test needs root).
    fn mount(lab: &Lab, name: &str, size: &str) -> SmallDisk {
        let dir = lab.path(name);
        std::fs::create_dir(&dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", dir.to_str().unwrap()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not mount a {size} tmpfs on {}", dir.display());
        SmallDisk(dir)
    }

    /// Fills the disk to the last byte; returns the filler file.
    fn fill(&self) -> std::path::PathBuf {
        let filler = self.0.join("filler");
        let _ = std::process::Command::new("dd")
            .args(["if=/dev/zero", &format!("of={}", filler.display()), "bs=64k"])
            .stderr(Stdio::null())
            .status();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn integrity_ok(db: &std::path::Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

/// Waits until a file exists and is not empty.
fn wait_for(path: &std::path::Path) {
    let until = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[needs(root)]
#[test]
fn a_full_disk_under_the_store_costs_checkpoints_not_the_run() {
    let lab = Lab::new();
    let disk = SmallDisk::mount(&lab, "disk", "4m");
    let db = disk.0.join("store.db");
    let child = lab
        .cmd(&["timer", "-t", "1", "-i", "500", "-l", "8000", "-q", "--db", db.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&db);
    std::thread::sleep(Duration::from_millis(300));
    let filler = disk.fill();
    // Two seconds of checkpoints against a full disk, then room again.
    std::thread::sleep(Duration::from_secs(2));
    std::fs::remove_file(filler).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("failed:").count(), 1, "said once, not once a second: {err}");
    integrity_ok(&db);
    let run =
        serde_json::from_str::<serde_json::Value>(&lab.ok(&["export", "1", "--db", db.to_str().unwrap()])).unwrap();
    assert_eq!(run["run"]["status"], "complete");
    assert_eq!(run["total"]["count"], 8000, "no sample lost");
    let warnings = run["run"]["warnings"].to_string();
    assert!(warnings.contains("could not be written") && warnings.contains("caught up"), "{warnings}");
}

#[test]
fn a_store_locked_by_another_writer_delays_checkpoints_not_the_run() {
    let lab = Lab::new();
    let child = lab
        .cmd(&["timer", "-t", "1", "-i", "500", "-l", "8000", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lab.wait_for_runs(1, Duration::from_secs(20));
    {
        let other = rusqlite::Connection::open(lab.db()).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        // Longer than a checkpoint interval: the runner must not wait for it.
        std::thread::sleep(Duration::from_millis(2500));
        other.execute_batch("COMMIT").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("failed:").count(), 1, "{err}");
    integrity_ok(&lab.db());
    let run = lab.export_json(1);
    assert_eq!(run["total"]["count"], 8000);
    assert!(run["run"]["warnings"].to_string().contains("caught up"), "{}", run["run"]["warnings"]);
}

#[needs(root)]
#[test]
fn a_sample_log_whose_disk_fills_stops_and_the_run_goes_on() {
    let lab = Lab::new();
    let disk = SmallDisk::mount(&lab, "logdisk", "512k");
    let log = disk.0.join("samples.log");
    // A million samples at about 3 bytes each cannot fit in 512 KiB; a block of 65,536 does.
    let out = lab.run(&["synthetic", "-t", "1", "-l", "1000000", "-q", "--samples", log.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("failed:").count(), 1, "{err}");
    integrity_ok(&lab.db());
    let run = lab.export_json(lab.last_run());
    assert_eq!(run["total"]["count"], 1000000, "the statistics miss nothing");
    assert!(run["run"]["warnings"].to_string().contains("sample log"), "{}", run["run"]["warnings"]);
    // What the log holds is readable.
    let salvaged = lab.run(&["analyze", log.to_str().unwrap(), "--salvage", "--json"]);
    assert_eq!(salvaged.status.code(), Some(0), "{}", text(&salvaged.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&salvaged.stdout).unwrap();
    let kept = doc["total"]["count"].as_u64().unwrap();
    assert!(kept > 0 && kept < 1000000, "a prefix of the samples: {kept}");
}
