//! What every CLI test needs: a private store, a way to run rtbench, and JSON helpers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub struct Lab {
    pub dir: tempfile::TempDir,
    /// The machine, shared with other tests that measure, or alone (see `Lab::alone`); None
    /// for a second lab of a test that already holds it.
    _machine: Option<std::fs::File>,
    /// The rtbench it runs: this build's, or for guests [`guest_binary`].
    bin: String,
}

thread_local! {
    /// Whether this test (its thread) holds the machine already: a second lock would wait for
    /// the first when one of them is alone.
    static HOLDS_MACHINE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Lab {
    /// A private store for a test that measures beside other such tests, never beside one that
    /// takes the machine.
    pub fn new() -> Lab {
        Lab::holding(|| rtbench_testkit::machine!(shared))
    }

    /// A private store for a test that takes the whole machine (FIFO hogs on every CPU, TCG
    /// guests, the host's preemption model, system-wide cpusets, the load's cgroup): it waits
    /// until no other test measures, and none starts until it ends.
    pub fn alone() -> Lab {
        Lab::holding(|| rtbench_testkit::machine!(alone))
    }

    /// [`Lab::alone`] for a test that boots guests: its commands run [`guest_binary`], which
    /// `kernels` copies into each guest.
    pub fn for_guests() -> Lab {
        Lab::alone_release()
    }

    /// [`Lab::alone`] whose commands run [`guest_binary`] (the release build in the full tier),
    /// for a full-tier test whose time goes into rtbench's own work (a whole study, its PNG
    /// figures) rather than into what it checks; the fast tier runs the same code debug-built.
    pub fn alone_release() -> Lab {
        let mut lab = Lab::alone();
        lab.bin = guest_binary();
        lab
    }

    fn holding(lock: impl FnOnce() -> std::fs::File) -> Lab {
        let machine = (HOLDS_MACHINE.get() == 0).then(lock);
        HOLDS_MACHINE.set(HOLDS_MACHINE.get() + 1);
        let bin = env!("CARGO_BIN_EXE_rtbench").to_string();
        Lab { dir: tempfile::tempdir().expect("temp dir"), _machine: machine, bin }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("rtbench.db")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// rtbench with this lab's store, no terminal, and no inherited store settings.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args).env("RTBENCH_DB", self.db()).env_remove("XDG_DATA_HOME");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("rtbench runs")
    }

    /// Runs and insists on exit 0.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        // What it printed goes with the failure: `kernels` says why a guest failed on stdout.
        let (said, err) = (text(&out.stdout), text(&out.stderr));
        let lines: Vec<&str> = said.lines().collect();
        let tail = lines[lines.len().saturating_sub(60)..].join("\n");
        assert_eq!(out.status.code(), Some(0), "rtbench {args:?} failed: {err}\nits output ended:\n{tail}");
        said
    }

    /// The id of the newest stored run.
    pub fn last_run(&self) -> i64 {
        let runs = self.runs();
        runs.as_array().and_then(|a| a.last()).map(|r| r["id"].as_i64().unwrap()).expect("a stored run")
    }

    /// Waits until the store holds at least `n` runs (another process is writing them).
    pub fn wait_for_runs(&self, n: usize, timeout: std::time::Duration) -> serde_json::Value {
        let until = std::time::Instant::now() + timeout;
        loop {
            if self.db().exists() {
                let runs = self.runs();
                if runs.as_array().is_some_and(|a| a.len() >= n) {
                    return runs;
                }
            }
            assert!(std::time::Instant::now() < until, "fewer than {n} runs after {timeout:?}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn runs(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["runs", "--json"])).expect("runs --json is JSON")
    }

    pub fn export_json(&self, id: i64) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["export", &id.to_string(), "--format", "json"])).expect("export is JSON")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        HOLDS_MACHINE.set(HOLDS_MACHINE.get().saturating_sub(1));
    }
}

/// The rtbench a guest (or a lab host) runs: `$RTBENCH_GUEST_BIN` (the full tier's command sets it to the
/// release build), else this build's. Under TCG a debug binary's every start costs tens of
/// seconds more than a release one's (55 s against 17 s for `timer -D 1s`: the BPF split's BTF
/// and symbol look-ups above all).
pub fn guest_binary() -> String {
    let bin = std::env::var("RTBENCH_GUEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rtbench").to_string());
    // A guest runs it from another directory.
    std::fs::canonicalize(&bin).map_or(bin, |p| p.to_string_lossy().into_owned())
}

/// Seconds from a run's start to its end (`start`, `end` of its export: ISO 8601 times of
/// day), across midnight too: the runs of these tests are shorter than a day.
pub fn run_seconds(doc: &serde_json::Value) -> f64 {
    let secs = |at: &str| -> f64 {
        let s = doc["run"][at].as_str().unwrap();
        let part = |a: usize, b: usize| s[a..b].parse::<f64>().unwrap();
        part(11, 13) * 3600.0 + part(14, 16) * 60.0 + part(17, 23)
    };
    (secs("end") - secs("start")).rem_euclid(86_400.0)
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// Asserts the output of a bad invocation: exit 2, one line on stderr naming `needle`, no panic.
pub fn assert_rejected(out: &Output, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "expected exit 2, stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "expected one line, got: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.to_lowercase().contains(&needle.to_lowercase()), "'{needle}' not in: {err}");
}

/// Validates `doc` against the committed JSON Schema of the export.
pub fn assert_valid_export(doc: &serde_json::Value) {
    assert_matches_schema(doc, "run.schema.json");
}

/// Validates `doc` against a committed JSON Schema in `schema/`.
pub fn assert_matches_schema(doc: &serde_json::Value, file: &str) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema").join(file);
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).expect("schema compiles");
    let msgs: Vec<String> = match compiled.validate(doc) {
        Ok(()) => return,
        Err(errors) => errors.map(|e| format!("{} at {}", e, e.instance_path)).collect(),
    };
    panic!("the document does not match {file}: {msgs:?}");
}

/// The headless Chromium installed here, if any.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| std::process::Command::new(c).arg("--version").output().map(|o| o.status.success()).unwrap_or(false))
}

/// Opens `url` in headless `chromium` with a profile of its own under `lab`, offline, with
/// `extra` flags (--dump-dom, --screenshot=…, --window-size=…).
pub fn headless(chromium: &str, lab: &Lab, url: &str, extra: &[String]) -> Output {
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let mut c = Command::new(chromium);
    c.args(flags).arg(format!("--user-data-dir={}", lab.path("chromium-profile").display())).args(extra).arg(url);
    c.stdin(std::process::Stdio::null());
    c.output().expect("chromium runs")
}

/// A number the page's script wrote as an attribute of `<body>` in a `--dump-dom`.
pub fn page_attr(page: &str, name: &str) -> usize {
    let key = format!("{name}=\"");
    let at = page.find(&key).unwrap_or_else(|| panic!("the page script did not run: no {name}"));
    page[at + key.len()..].split('"').next().unwrap().parse().unwrap()
}

/// A running server and the lines it prints.
pub struct Srv {
    pub child: Child,
    pub lines: std::sync::mpsc::Receiver<String>,
    /// Its first line: "serving … on ADDR; …".
    pub serving: String,
}

impl Srv {
    /// The address it serves on, as it said: the port the kernel chose for `127.0.0.1:0`.
    pub fn addr(&self) -> String {
        let on = self.serving.split(" on ").nth(1).and_then(|a| a.split(';').next()).expect("serving … on ADDR;");
        on.trim_end_matches(" (fixed token)").to_string()
    }
}

/// Starts a child whose stdout lines come through a channel as it prints them.
pub fn spawn_lines(mut cmd: Command) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Starts a server and waits until it says it is serving.
pub fn server(cmd: Command) -> Srv {
    let (child, rx) = spawn_lines(cmd);
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("the server says it is serving");
    assert!(line.starts_with("serving"), "{line}");
    Srv { child, lines: rx, serving: line }
}
