//! A lab of machines for real (issue 39): two "hosts", each a network namespace reached from
//! the root namespace through its own veth pair and running its own sshd, studied by the
//! collection's real playbook with ansible-playbook over SSH, in copy mode.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::*;
use rtbench_testkit::needs;

/// The collection in the repository.
fn collection() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible")
}

/// A tool of the virtual environment `scripts/setup.sh` makes (ansible-core and ansible-lint,
/// pinned in the collection's requirements.txt; `#[needs(ansible)]` checked it is there).
fn venv_tool(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ansible-venv/bin").join(name)
}

fn run_quiet(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// One host: a namespace, the veth pair from the root namespace into it, and its sshd.
struct Host {
    name: &'static str,
    ns: String,
    veth: String,
    addr: String,
    sshd: Option<Child>,
}

impl Host {
    /// Makes the namespace and its link: `root_addr` on the root side, `addr` inside (a /30).
    fn new(name: &'static str, tag: &str, root_addr: &str, addr: &str) -> Option<Host> {
        let ns = format!("rtbL{tag}{name}");
        let veth = format!("vl{tag}{}", &name[..1]);
        let host = Host { name, ns, veth, addr: addr.to_string(), sshd: None };
        let inner = format!("{}i", host.veth);
        let ip = |args: &[&str]| run_quiet("ip", args);
        let ok = ip(&["netns", "add", &host.ns])
            && ip(&["link", "add", &host.veth, "type", "veth", "peer", "name", &inner, "netns", &host.ns])
            && ip(&["addr", "add", &format!("{root_addr}/30"), "dev", &host.veth])
            && ip(&["link", "set", &host.veth, "up"])
            && ip(&["-n", &host.ns, "addr", "add", &format!("{addr}/30"), "dev", &inner])
            && ip(&["-n", &host.ns, "link", "set", &inner, "up"])
            && ip(&["-n", &host.ns, "link", "set", "lo", "up"]);
        ok.then_some(host)
    }

    /// Starts its sshd: key-only, root's login with `authorized`, its own host key, on its address.
    fn start_sshd(&mut self, dir: &Path, authorized: &Path) {
        let key = dir.join(format!("host-key-{}", self.name));
        if !key.exists() {
            let made = run_quiet("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f", key.to_str().unwrap()]);
            assert!(made, "ssh-keygen makes a host key");
        }
        let config = dir.join(format!("sshd-{}.conf", self.name));
        let text = format!(
            "ListenAddress {}\nPort 22\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\n",
            self.addr,
            key.display(),
            authorized.display(),
            dir.join(format!("sshd-{}.pid", self.name)).display()
        );
        std::fs::write(&config, text).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("sshd-{}.log", self.name))).unwrap())
            .spawn()
            .unwrap();
        self.sshd = Some(child);
        // Listening once a TCP connection to port 22 is accepted.
        let until = Instant::now() + Duration::from_secs(10);
        let addr: std::net::SocketAddr = format!("{}:22", self.addr).parse().unwrap();
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < until, "sshd of {} does not listen on {addr}", self.name);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop_sshd(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop_sshd();
        // Removing the namespace removes both ends of its veth pair.
        run_quiet("ip", &["netns", "del", &self.ns]);
        run_quiet("ip", &["link", "del", &self.veth]);
    }
}

/// `/run/sshd`, sshd's privilege separation directory: made when missing, and then removed.
struct PrivsepDir(bool);

impl PrivsepDir {
    fn ensure() -> PrivsepDir {
        let dir = Path::new("/run/sshd");
        PrivsepDir(!dir.exists() && std::fs::create_dir(dir).is_ok())
    }
}

impl Drop for PrivsepDir {
    fn drop(&mut self) {
        if self.0 {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

/// Everything a playbook run needs: the hosts, the client key, the inventory, the collection
/// installed with ansible-galaxy, and the controller's campaign directory.
/// Fields drop in order: the sshds and namespaces first, then what they used.
struct Campaign {
    hosts: Vec<Host>,
    _privsep: PrivsepDir,
    lab: Lab,
    playbook: PathBuf,
    /// What the hosts get: the test build without its debug information (a sixth of its size).
    binary: PathBuf,
}

impl Campaign {
    /// What it needs: root, `ip`, sshd, ssh and the virtual environment (the test's #[needs]).
    fn new() -> Campaign {
        let galaxy = venv_tool("ansible-galaxy");
        let lab = Lab::alone();
        let tag = format!("{}", std::process::id() % 10_000);
        // A private /30 per host, picked by the process id so two test runs do not meet.
        let net = std::process::id() % 250;
        let alpha = Host::new("alpha", &tag, &format!("10.239.{net}.1"), &format!("10.239.{net}.2"));
        let beta = Host::new("beta", &tag, &format!("10.239.{net}.5"), &format!("10.239.{net}.6"));
        let (alpha, beta) = (alpha.expect("network namespace alpha"), beta.expect("network namespace beta"));
        let privsep = PrivsepDir::ensure();
        let client_key = lab.path("client-key");
        assert!(run_quiet("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f", client_key.to_str().unwrap()]));
        let authorized = lab.path("authorized_keys");
        std::fs::copy(lab.path("client-key.pub"), &authorized).unwrap();
        let mut hosts = vec![alpha, beta];
        for h in &mut hosts {
            h.start_sshd(lab.dir.path(), &authorized);
            std::fs::create_dir(lab.path(&format!("tmp-{}", h.name))).unwrap();
        }
        let inventory: String = hosts.iter().map(|h| format!("{} ansible_host={}\n", h.name, h.addr)).collect();
        std::fs::write(
            lab.path("inventory.ini"),
            format!(
                "[lab]\n{inventory}\n[lab:vars]\nansible_user=root\nansible_ssh_private_key_file={}\n\
                 ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5'\n\
                 ansible_python_interpreter=/usr/bin/python3\n",
                client_key.display()
            ),
        )
        .unwrap();
        // Installed as a user would: ansible-galaxy from the collection's directory.
        let mut install = Command::new(&galaxy);
        install.args(["collection", "install", "--force", "-p"]).arg(lab.path("collections")).arg(collection());
        let out = ansible_env(&mut install, &lab).output().unwrap();
        assert!(out.status.success(), "ansible-galaxy collection install: {}", text(&out.stderr));
        let playbook = lab.path("collections/ansible_collections/rtbench/lab/playbooks/lab-study.yml");
        assert!(playbook.exists(), "the installed collection has its playbook");
        // The release build in the full tier, as the guests run: a host's study and the
        // controller's report (PNG figures) take seconds longer with a debug build.
        let (built, stripped) = (guest_binary(), lab.path("rtbench"));
        let binary = if run_quiet("strip", &["-o", stripped.to_str().unwrap(), &built]) {
            stripped
        } else {
            PathBuf::from(built)
        };
        Campaign { hosts, _privsep: privsep, lab, playbook, binary }
    }

    /// Runs the playbook with `extra` variables (JSON); its output, with the study kept short.
    fn play(&self, extra: serde_json::Value) -> Output {
        let mut vars = serde_json::json!({
            "rtbench_binary": self.binary,
            "rtbench_controller": guest_binary(),
            "rtbench_campaign_dir": self.lab.path("campaign"),
            // Short, one load generator, no tracing: what is checked is the campaign, not the
            // cells (the study's own tests check those).
            "rtbench_study_args": ["-D", "1s", "--no-sysbench", "--no-qualify", "--settle", "1s", "--load", "cpu", "--no-split", "--no-classify"],
        });
        vars.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let mut c = Command::new(venv_tool("ansible-playbook"));
        c.arg("-i").arg(self.lab.path("inventory.ini")).arg("-e").arg(vars.to_string()).arg(&self.playbook);
        // Each host's temporary directory goes under a directory of the test's, so what is left
        // there is what the roles left.
        c.arg("-e").arg(format!("rtbench_tmp_parent={}", self.lab.path("tmp-{{ inventory_hostname }}").display()));
        ansible_env(&mut c, &self.lab).current_dir(self.lab.dir.path()).stdin(Stdio::null()).output().unwrap()
    }

    fn host(&mut self, name: &str) -> &mut Host {
        self.hosts.iter_mut().find(|h| h.name == name).unwrap()
    }

    /// The campaign's merged store as a lab of its own.
    fn store(&self) -> Lab {
        let lab = Lab::new();
        std::fs::copy(self.lab.path("campaign/rtbench.db"), lab.db()).unwrap();
        lab
    }
}

/// Ansible's settings for a test: its temporary files, collections and SSH control sockets in
/// the test's directory, no SSH connection kept open after the play, no colour.
fn ansible_env<'a>(c: &'a mut Command, lab: &Lab) -> &'a mut Command {
    c.env("ANSIBLE_COLLECTIONS_PATH", lab.path("collections"))
        .env("ANSIBLE_LOCAL_TEMP", lab.path("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", lab.path("ansible-remote"))
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_PIPELINING", "True")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_FORCE_COLOR", "0")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "False")
        .env("ANSIBLE_HOME", lab.path("ansible-home"))
        .env_remove("RTBENCH_DB")
}

/// The recap line of `host` in a play's output.
fn recap<'a>(out: &'a str, host: &str) -> &'a str {
    let at = out.find("PLAY RECAP").expect("the play has a recap");
    out[at..].lines().find(|l| l.starts_with(host)).unwrap_or_else(|| panic!("{host} is not in the recap: {out}"))
}

/// The labels of the stored runs whose label starts with `prefix`.
fn labels_of(runs: &serde_json::Value, prefix: &str) -> Vec<String> {
    let mut labels: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["label"].as_str())
        .filter(|l| l.starts_with(prefix))
        .map(String::from)
        .collect();
    labels.sort();
    labels.dedup();
    labels
}

#[needs(
    full = "an Ansible campaign over SSH between network namespaces",
    root,
    ansible,
    "ip",
    "/usr/sbin/sshd",
    "ssh",
    "ssh-keygen"
)]
#[test]
fn the_playbook_studies_two_hosts_over_ssh_and_keeps_one_when_the_other_is_unreachable() {
    let mut campaign = Campaign::new();
    let started = Instant::now();
    // A baseline in the controller's store, as an earlier campaign would have left it: idle cells
    // only, so the hosts' idle cells are checked against it (and the seed takes seconds).
    std::fs::create_dir(campaign.lab.path("campaign")).unwrap();
    let seed = Command::new(guest_binary())
        .args([
            "study",
            "--no-qualify",
            "-D",
            "1s",
            "--no-sysbench",
            "--load",
            "none",
            "--no-report",
            "-q",
            "--label",
            "baseline",
        ])
        .args(["--no-split", "--no-classify"])
        .arg("--db")
        .arg(campaign.lab.path("campaign/rtbench.db"))
        .env("RTBENCH_STATE_DIR", campaign.lab.path("state"))
        .output()
        .unwrap();
    assert_eq!(seed.status.code(), Some(0), "the baseline study: {}", text(&seed.stderr));

    eprintln!("ansible: the baseline seeded in {:.0} s", started.elapsed().as_secs_f64());
    let out = campaign.play(serde_json::json!({ "rtbench_baseline": "baseline", "rtbench_fail_if": "p99 > 1000x" }));
    eprintln!("ansible: the first campaign done at {:.0} s", started.elapsed().as_secs_f64());
    let log = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "the playbook: {log}\n{}", text(&out.stderr));
    for host in ["alpha", "beta"] {
        assert!(recap(&log, host).contains("unreachable=0") && recap(&log, host).contains("failed=0"), "{log}");
    }
    let kernel = text(&Command::new("uname").arg("-r").output().unwrap().stdout).trim().to_string();
    let store = campaign.store();
    let runs = store.runs();
    let first: Vec<Vec<String>> =
        ["alpha", "beta"].iter().map(|h| labels_of(&runs, &format!("{h}/{kernel}/"))).collect();
    for (host, labels) in ["alpha", "beta"].iter().zip(&first) {
        assert_eq!(labels.len(), 1, "{host}: one label, host/kernel/date: {runs}");
        let date = labels[0].rsplit('/').next().unwrap();
        assert!(date.len() == 20 && date.ends_with('Z') && date.contains('T'), "a UTC date: {}", labels[0]);
    }
    check_fetched(&campaign, &["alpha", "beta"]);
    let page = std::fs::read_to_string(campaign.lab.path("campaign/report/index.html")).unwrap();
    for labels in &first {
        assert!(page.contains(&labels[0]), "the report has {}", labels[0]);
    }
    let junit = std::fs::read_to_string(campaign.lab.path("campaign/junit.xml")).unwrap();
    for labels in &first {
        let suite = format!("<testsuite name=\"{} vs baseline\"", labels[0]);
        assert!(junit.contains(&suite), "the JUnit file has a suite for {}: {junit}", labels[0]);
    }
    assert!(junit.matches("<testcase").count() >= 2, "{junit}");
    assert_nothing_left(&campaign);

    // beta's sshd stops: the play names it unreachable, alpha's results are merged and reported.
    campaign.host("beta").stop_sshd();
    // Idle cells only: what is checked here is who is merged, not the loaded cells again.
    let out = campaign.play(serde_json::json!({
        "rtbench_label": "{host}/{kernel}/second",
        "rtbench_study_args": ["-D", "1s", "--no-sysbench", "--no-qualify", "--load", "none", "--no-split", "--no-classify"],
    }));
    let log = text(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "a host was unreachable: {log}");
    assert!(recap(&log, "beta").contains("unreachable=1"), "{log}");
    assert!(recap(&log, "alpha").contains("failed=0") && recap(&log, "alpha").contains("unreachable=0"), "{log}");
    let runs = campaign.store().runs();
    assert!(!labels_of(&runs, &format!("alpha/{kernel}/second")).is_empty(), "alpha's second campaign is merged");
    assert!(labels_of(&runs, &format!("beta/{kernel}/second")).is_empty(), "{runs}");
    for labels in &first {
        assert_eq!(labels_of(&runs, &labels[0]), *labels, "the first campaign is kept");
    }
    let page = std::fs::read_to_string(campaign.lab.path("campaign/report/index.html")).unwrap();
    assert!(page.contains(&format!("alpha/{kernel}/second")), "the report has alpha");
    assert!(page.contains("beta: unreachable"), "the report's caveats name beta");
    assert_nothing_left(&campaign);
    eprintln!("ansible: two campaigns in {:.0} s", started.elapsed().as_secs_f64());
}

/// Each host's fetched store is whole and holds only that host's runs.
fn check_fetched(campaign: &Campaign, hosts: &[&str]) {
    let fetched = campaign.lab.path("campaign/hosts");
    let campaigns: Vec<PathBuf> = std::fs::read_dir(&fetched).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(campaigns.len(), 1, "one campaign's directory: {campaigns:?}");
    for host in hosts {
        let db = campaigns[0].join(format!("{host}.db"));
        let conn = rusqlite::Connection::open(&db).unwrap();
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok", "{}", db.display());
        let lab = Lab::new();
        std::fs::copy(&db, lab.db()).unwrap();
        let runs = lab.runs();
        let labels = labels_of(&runs, "");
        assert!(labels.len() == 1 && labels[0].starts_with(&format!("{host}/")), "{host}'s store: {labels:?}");
        assert!(campaigns[0].join(format!("{host}.audit.json")).exists(), "{host}'s audit came back");
    }
}

/// Nothing of rtbench is left where the roles worked on the hosts: no binary, store or journal.
fn assert_nothing_left(campaign: &Campaign) {
    for h in &campaign.hosts {
        let dir = campaign.lab.path(&format!("tmp-{}", h.name));
        let left: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "{} has files left: {left:?}", h.name);
    }
}

#[needs(ansible)]
#[test]
fn the_collection_passes_ansible_lint_and_a_syntax_check() {
    let (lint, playbook) = (venv_tool("ansible-lint"), venv_tool("ansible-playbook"));
    let lab = Lab::new();
    let mut c = Command::new(lint);
    c.args(["--offline", "--nocolor"]).current_dir(collection());
    let out = ansible_env(&mut c, &lab).output().unwrap();
    assert!(out.status.success(), "ansible-lint: {}{}", text(&out.stdout), text(&out.stderr));
    let mut c = Command::new(playbook);
    c.args(["--syntax-check", "-i", "localhost,"]).arg(collection().join("playbooks/lab-study.yml"));
    let out = ansible_env(&mut c, &lab).output().unwrap();
    assert!(out.status.success(), "--syntax-check: {}{}", text(&out.stdout), text(&out.stderr));
}
