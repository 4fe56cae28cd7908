//! The rule every skip in this suite follows (testkit's `#[needs]`), shown on a crate of its own
//! built the three ways it can be: on a developer's machine, under CI with the missing need
//! unlisted, and under CI with it listed in `tests/cannot-here.txt`. Each build runs the crate's
//! tests with cargo and reads the runner's own lines and summary.

use std::path::{Path, PathBuf};
use std::process::Command;

const TESTS: &str = r#"
use rtbench_testkit::needs;

#[needs("rtbench-test-no-such-tool")]
#[test]
fn wants_a_tool_no_machine_has() {}

#[needs(full = "stands for a slow one")]
#[test]
fn slow() {}

#[test]
fn plain() {}
"#;

struct Crate {
    dir: tempfile::TempDir,
    target: PathBuf,
}

impl Crate {
    fn new() -> Crate {
        let dir = tempfile::tempdir().unwrap();
        let testkit = Path::new(env!("CARGO_MANIFEST_DIR")).join("testkit");
        let manifest = format!(
            "[package]\nname = \"skips\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dev-dependencies]\nrtbench-testkit = {{ path = {:?} }}\n\n[workspace]\n",
            testkit.display().to_string()
        );
        std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(dir.path().join("tests/skips.rs"), TESTS).unwrap();
        // Kept between runs of this test, so testkit is compiled once.
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skip-rule");
        let krate = Crate { dir, target };
        // As in this repository the list is there from the start: cargo rebuilds on a change to
        // it only when the build that came before had read it.
        krate.list("# what this kind of machine cannot do\n");
        krate
    }

    fn list(&self, text: &str) {
        std::fs::write(self.dir.path().join("tests/cannot-here.txt"), text).unwrap();
    }

    /// `cargo test` of the crate with CI set or not: whether it passed, and what it printed.
    fn test(&self, ci: bool, extra: &[&str]) -> (bool, String) {
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(["test", "--offline", "--test", "skips", "--"]).args(extra);
        cargo.current_dir(self.dir.path()).env("CARGO_TARGET_DIR", &self.target).env_remove("CI");
        if ci {
            cargo.env("CI", "true");
        }
        let out = cargo.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }
}

fn line<'a>(output: &'a str, test: &str) -> &'a str {
    output
        .lines()
        .find(|l| l.starts_with(&format!("test {test} ")))
        .unwrap_or_else(|| panic!("no line for {test} in:\n{output}"))
}

#[test]
fn a_missing_tool_is_a_skip_with_its_reason_here_a_failure_under_ci_and_a_skip_again_when_listed() {
    let _machine = rtbench_testkit::machine!(shared);
    let krate = Crate::new();

    let (passed, out) = krate.test(false, &[]);
    assert!(passed, "{out}");
    assert_eq!(
        line(&out, "wants_a_tool_no_machine_has"),
        "test wants_a_tool_no_machine_has ... ignored, cannot run here: \
         `rtbench-test-no-such-tool` is not installed (scripts/setup.sh installs it)"
    );
    assert_eq!(line(&out, "slow_full_tier"), "test slow_full_tier ... ignored, full tier: stands for a slow one");
    assert!(out.contains("test result: ok. 1 passed; 0 failed; 2 ignored"), "{out}");

    let (passed, out) = krate.test(true, &[]);
    assert!(!passed, "under CI an unlisted missing need fails: {out}");
    assert_eq!(line(&out, "wants_a_tool_no_machine_has"), "test wants_a_tool_no_machine_has ... FAILED");
    assert!(
        out.contains(
            "CI lacks what this test needs (rtbench-test-no-such-tool), and tests/cannot-here.txt does not list it"
        ),
        "{out}"
    );
    assert!(out.contains("test result: FAILED. 1 passed; 1 failed; 1 ignored"), "{out}");

    krate.list("# what this kind of machine cannot do\nrtbench-test-no-such-tool: no machine has it\n");
    let (passed, out) = krate.test(true, &[]);
    assert!(passed, "{out}");
    assert!(
        line(&out, "wants_a_tool_no_machine_has").starts_with(
            "test wants_a_tool_no_machine_has ... ignored, this kind of machine cannot (tests/cannot-here.txt): "
        ),
        "{out}"
    );
    assert!(out.contains("test result: ok. 1 passed; 0 failed; 2 ignored"), "{out}");

    // What the full tier's filter picks among the ignored tests: the full tier's, not the skip.
    let (passed, out) = krate.test(true, &["--ignored", "--list"]);
    assert!(passed, "{out}");
    let ignored: Vec<&str> = out.lines().filter_map(|l| l.strip_suffix(": test")).collect();
    assert_eq!(ignored.iter().filter(|t| t.ends_with("_full_tier")).collect::<Vec<_>>(), [&"slow_full_tier"]);
    assert!(ignored.contains(&"wants_a_tool_no_machine_has"), "{out}");
}
