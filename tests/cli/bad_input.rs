//! Bad input: one line naming what is wrong, exit 2, no panic, nothing half-written.

use crate::helpers::*;

#[test]
fn invalid_flag_values_are_rejected_by_name() {
    let lab = Lab::new();
    let cases: &[(&[&str], &str)] = &[
        (&["timer", "-i", "0"], "interval"),
        (&["timer", "--interval=-5"], "interval"),
        (&["timer", "-p", "0"], "priority"),
        (&["timer", "-p", "100"], "1 to 99"),
        (&["timer", "--policy", "deadline"], "policy"),
        (&["timer", "-D", "10x"], "duration"),
        (&["timer", "-D", "0s"], "greater than zero"),
        (&["timer", "-l", "0"], "at least 1"),
        (&["timer", "-a", "99"], "not online"),
        (&["timer", "-a", "x-y"], "CPU list"),
        (&["timer", "-t", "5000"], "too many"),
        (&["timer", "--main-affinity", "4095"], "--main-affinity 4095: CPU 4095 is not online"),
        (&["timer", "--main-affinity", "0-x"], "--main-affinity '0-x' is not a CPU list"),
        (&["timer", "--main-affinity", ""], "--main-affinity '' is not a CPU list"),
        (&["timer", "-h", "0"], "histogram"),
        (&["gtod", "-n", "0"], "at least 1"),
        (&["timer", "--bogus"], "--bogus"),
        (&["timer", "--breach", "0"], "--breach"),
        (&["timer", "--breach", "10x"], "--breach"),
        (&["timer", "--breach-max", "3"], "--breach"),
        (&["timer", "--breach", "100", "--breach-max", "0"], "--breach-max"),
        (&["synthetic", "--breach", "100", "-l", "10"], "--breach"),
        (&["nonsense"], "nonsense"),
    ];
    for (args, needle) in cases {
        let out = lab.run(args);
        assert_rejected(&out, needle);
    }
    assert!(!lab.db().exists(), "rejected input must not create a store");
}

#[test]
fn every_probe_is_a_command_that_rejects_bad_run_flags() {
    let lab = Lab::new();
    let help = lab.ok(&["--help"]);
    for info in rtbench::probe::REGISTRY {
        assert_eq!(help.contains(&format!("  {} ", info.name)), !info.synthetic, "--help lists {}", info.name);
        let own = lab.ok(&[info.name, "--help"]);
        let flags = (info.flags.command)(clap::Command::new(info.name));
        for arg in flags.get_arguments() {
            let name =
                arg.get_long().map(|l| format!("--{l}")).unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            assert!(own.contains(&name), "{} --help shows {name}", info.name);
        }
        assert_rejected(&lab.run(&[info.name, "--bogus"]), "--bogus");
        assert_rejected(&lab.run(&[info.name, "-l", "0"]), "at least 1");
        assert_rejected(&lab.run(&[info.name, "-D", "soon"]), "duration");
    }
    assert!(!lab.db().exists(), "rejected input must not create a store");
}

#[test]
fn unwritable_outputs_are_rejected_before_measuring() {
    let lab = Lab::new();
    for flag in ["--json", "--samples"] {
        let out = lab.run(&["timer", "-l", "10", flag, "/nonexistent-dir/x.out"]);
        assert_rejected(&out, "cannot write '/nonexistent-dir/x.out'");
    }
    let out = lab.run(&["timer", "-l", "10", "-h", "10", "--histfile", lab.dir.path().to_str().unwrap()]);
    assert_rejected(&out, "is a directory");
    let out = lab.run(&["export", "1", "-o", "/nonexistent-dir/x.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "nothing was measured");
}

#[test]
fn broken_stores_are_rejected() {
    let lab = Lab::new();
    let corrupt = lab.path("corrupt.db");
    std::fs::write(&corrupt, vec![0x5Au8; 8192]).unwrap();
    assert_rejected(&lab.run(&["runs", "--db", corrupt.to_str().unwrap()]), "not a readable rtbench database");
    let before = std::fs::read(&corrupt).unwrap();
    assert_eq!(before, vec![0x5Au8; 8192], "a corrupt store is never rewritten");

    assert_rejected(&lab.run(&["runs", "--db", lab.dir.path().to_str().unwrap()]), "is a directory");

    let newer = lab.path("newer.db");
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute_batch("CREATE TABLE runs (id INTEGER); PRAGMA user_version = 99;").unwrap();
    }
    assert_rejected(&lab.run(&["show", "1", "--db", newer.to_str().unwrap()]), "newer than this rtbench");

    let foreign = lab.path("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE t (x); PRAGMA user_version = 1;").unwrap();
    }
    assert_rejected(&lab.run(&["runs", "--db", foreign.to_str().unwrap()]), "not an rtbench database");
}

#[test]
fn unknown_runs_are_rejected() {
    let lab = Lab::new();
    assert_rejected(&lab.run(&["show", "42"]), "no run with id 42");
    assert_rejected(&lab.run(&["export", "42", "--format", "csv"]), "no run with id 42");
    assert_rejected(&lab.run(&["export", "1", "--format", "pdf"]), "pdf");
    assert_rejected(&lab.run(&["show", "abc"]), "abc");
}

#[test]
fn cpu_lists_past_any_cpu_are_rejected_not_allocated() {
    // Found by fuzzing: the range was expanded, all three trillion entries of it.
    let lab = Lab::new();
    assert_rejected(&lab.run(&["timer", "-l", "10", "-a", "2-3011112111133"]), "not a CPU list");
    assert_rejected(&lab.run(&["audit", "--cpus", "0-99999999999"]), "not a CPU list");
}

#[test]
fn a_shield_must_name_online_cpus_and_leave_one_for_the_system() {
    let lab = Lab::new();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_rejected(&lab.run(&["timer", "--shield", "4095", "-D", "1s"]), "not online");
    assert_rejected(&lab.run(&["timer", "--shield", online.trim(), "-D", "1s"]), "every online CPU");
    assert_rejected(&lab.run(&["timer", "--shield", "1-x", "-D", "1s"]), "not a CPU list");
    assert_rejected(&lab.run(&["study", "--shield", "", "-D", "1s"]), "not a CPU list");
}

#[test]
fn a_reader_that_goes_away_ends_a_printing_command_quietly() {
    let lab = Lab::new();
    lab.ok(&["synthetic", "-l", "1000", "-q"]);
    for args in [&["show", "1"][..], &["runs"], &["wcet", "1"]] {
        // Like `rtbench show 1 | head -0`: the reader is gone before the first write.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = lab.cmd(args).stdout(writer).output().unwrap();
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "rtbench {args:?}: {err}");
        assert_ne!(out.status.code(), Some(101), "rtbench {args:?} did not panic: {err}");
    }
}

/// Each latency flag, with what it must say once its value is accepted: a later check fails on
/// purpose (`-a 4095` is no online CPU), so nothing measures.
const LATENCY_FLAGS: &[(&[&str], &str)] = &[
    (&["timer", "-a", "4095", "--interval"], "not online"),
    (&["timer", "-a", "4095", "--distance"], "not online"),
    (&["timer", "-a", "4095", "-h"], "not online"),
    (&["timer", "-a", "4095", "--breach"], "not online"),
    (&["noise", "-a", "4095", "--threshold"], "not online"),
    (&["monitor", "-a", "4095", "--interval"], "not online"),
    (&["monitor", "-a", "4095", "--noise", "--noise-threshold"], "not online"),
    (&["monitor", "-a", "4095", "--threshold"], "not online"),
    (&["export", "1", "--buckets"], "no run with id 1"),
];

#[test]
fn every_latency_flag_reads_the_same_latencies() {
    let lab = Lab::new();
    for value in ["2ms", "250us", "250µs", "0.5ms"] {
        for (args, said) in LATENCY_FLAGS {
            let out = lab.run(&[args, &[value][..]].concat());
            assert_rejected(&out, said);
        }
        let condition = format!("max > {value}");
        let out = lab.run(&["compare", "--baseline", "a", "b", "--fail-if", &condition]);
        assert_rejected(&out, "holds no runs");
    }
    for value in ["2 fortnights", "1e3us", "ms"] {
        for (args, _) in LATENCY_FLAGS {
            let flag = args.last().unwrap();
            assert_rejected(&lab.run(&[args, &[value][..]].concat()), flag);
        }
        let condition = format!("max > {value}");
        assert_rejected(&lab.run(&["compare", "--baseline", "a", "b", "--fail-if", &condition]), "--fail-if");
    }
}

#[test]
fn every_duration_flag_reads_the_same_durations() {
    let lab = Lab::new();
    let flags: &[&[&str]] = &[
        &["timer", "-a", "4095", "-D"],
        &["timer", "-a", "4095", "--settle"],
        &["timer", "-a", "4095", "--envelope-interval"],
        &["response", "-a", "4095", "--period"],
        &["monitor", "-a", "4095", "--window"],
        &["monitor", "-a", "4095", "--keep"],
        &["monitor", "-a", "4095", "-D", "1s", "--linger"],
    ];
    for value in ["1500ms", "1.5s", "90", "2m", "250us"] {
        for args in flags {
            assert_rejected(&lab.run(&[args, &[value][..]].concat()), "not online");
        }
    }
    for value in ["soon", "0s", "10y"] {
        for args in flags {
            let out = lab.run(&[args, &[value][..]].concat());
            assert_rejected(&out, args.last().unwrap());
            assert_rejected(&out, "duration");
        }
    }
}

#[test]
fn a_bad_cpu_list_is_refused_the_same_way_by_every_flag() {
    let lab = Lab::new();
    let flags: &[(&[&str], &str)] = &[
        (&["timer", "-l", "10", "-a"], "--affinity"),
        (&["timer", "-l", "10", "--shield"], "--shield"),
        (&["study", "-D", "1s", "--no-sysbench", "--shield"], "--shield"),
        (&["audit", "--cpus"], "--cpus"),
        (&["monitor", "-D", "1s", "-a"], "--affinity"),
        (&["sysbench", "--only", "null-call", "--cpu"], "--cpu"),
        (&["pingpong", "--serve", "127.0.0.1:0", "--serve-for", "1s", "-a"], "--affinity"),
    ];
    for (args, flag) in flags {
        let out = lab.run(&[args, &["1-x"][..]].concat());
        assert_rejected(&out, &format!("{flag} '1-x' is not a CPU list; use e.g. 0-3,6"));
        let out = lab.run(&[args, &["4095"][..]].concat());
        assert_rejected(&out, &format!("{flag} 4095: CPU 4095 is not online; online CPUs are "));
    }
    assert_rejected(&lab.run(&["sysbench", "--cpu", "0-1"]), "--cpu '0-1' names more than one CPU");
}

/// Three inputs that once passed as successes: each is refused, and nothing is stored or
/// written.
#[test]
fn inputs_that_hold_nothing_to_keep_are_refused_not_stored_as_empty_successes() {
    let lab = Lab::new();
    // An rtla osnoise histogram with its header and summary but no bucket row.
    let empty = lab.path("osnoise-empty.txt");
    std::fs::write(
        &empty,
        "# RTLA osnoise histogram\n# Time unit is microseconds (us)\n# Duration:   0 00:00:10\n\
         Index   CPU-000   CPU-001\nover:         0         0\ncount:        0         0\n\
         min:          -         -\navg:          -         -\nmax:          -         -\n",
    )
    .unwrap();
    assert_rejected(&lab.run(&["import", empty.to_str().unwrap(), "--label", "rt"]), "no samples");
    assert!(!lab.db().exists() || lab.runs().as_array().unwrap().is_empty(), "no run stored");

    // An SQLite file of another program, and an empty file: neither is an rtbench store, and
    // neither is given rtbench's schema by the refusal.
    let other = lab.path("other.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE notes (body TEXT)").unwrap();
    let blank = lab.path("blank.db");
    std::fs::write(&blank, b"").unwrap();
    for file in [&other, &blank] {
        let before = std::fs::read(file).unwrap();
        assert_rejected(&lab.run(&["merge", file.to_str().unwrap()]), "is not an rtbench store");
        assert_eq!(std::fs::read(file).unwrap(), before, "{} is as it was", file.display());
    }

    // More vCPUs than QEMU's machine takes: refused before anything is downloaded or booted.
    assert_rejected(
        &lab.run(&["kernels", "deb:linux-image-amd64", "--allow-emulated", "--cpus", "100000"]),
        "--cpus 100000: QEMU's q35 machine takes at most 288 vCPUs",
    );
}
