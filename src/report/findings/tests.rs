//! The findings of two kernels booted under TCG, from runs stored as the writer stores a
//! guest's (the emulation warning comes from the snapshot's VM, as it does for real runs).

use super::{compute, of_pair, Finding, Topic};
use crate::model::{
    Better, LoadRecord, MeasuredParams, Metric, RunKind, RunParams, SystemSnapshot, ThreadResult, Unit, VmPlacement,
};
use crate::report::ProbeNote;
use crate::stats::Stats;
use crate::store::{RunHead, RunWriter, Store};

const KERNELS: [&str; 2] = ["6.1.0-28-amd64", "6.1.0-28-rt-amd64"];

/// A guest's run of `probe` under `load` whose samples are `values` (ns), as `rtbench kernels`
/// brings it back: on a VM under `accelerator`, a 1 GHz CPU (a 100 µs rule-of-thumb budget).
fn head(label: &str, probe: &str, load: &str, accelerator: &str, params: serde_json::Value) -> RunHead {
    let vm = VmPlacement { hypervisor: "qemu".into(), accelerator: accelerator.into(), ..Default::default() };
    RunHead {
        label: label.into(),
        probe: probe.into(),
        load: if load == "none" { LoadRecord::idle() } else { LoadRecord::named(load) },
        params: RunParams::Measured(serde_json::from_value::<MeasuredParams>(params).unwrap()),
        system: SystemSnapshot { vm: Some(vm), cpu_mhz: Some(1000.0), ..SystemSnapshot::default() },
        ..RunHead::for_test(probe)
    }
}

fn params(extra: serde_json::Value) -> serde_json::Value {
    let mut p = serde_json::json!({"threads": 1, "cpus": [0], "policy": "fifo", "priority": 95, "mlock": true,
        "loops": null, "duration_s": 10.0, "envelope_interval_ns": 1_000_000_000u64, "samples_file": null});
    p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    p
}

fn store(store: &mut Store, head: RunHead, values: &[u64]) {
    let mut stats = Stats::default();
    values.iter().for_each(|v| stats.record(*v));
    RunWriter::whole(store, head, &[ThreadResult { thread: 0, cpu: Some(0), stats, irq: None }]).unwrap();
}

/// Each kernel's cells (timer and gtod, idle and loaded), a classified noise run whose gaps the
/// guest's kernel did not see, and a sysbench cost; returns the findings of every label.
fn two_kernels(accelerator: &str) -> (Vec<Finding>, Vec<Finding>) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.db")).unwrap();
    let classify = serde_json::json!({"classify": {"lost_events": 0, "budget_ns": 100_000, "skipped": null,
        "threads": [{"thread": 0, "totals": [
            {"class": "irq", "name": "local timer", "detail": null, "count": 40, "ns": 400_000, "max_ns": 60_000, "over_budget": 0},
            {"class": "hardware", "name": "", "detail": null, "count": 9, "ns": 9_000_000, "max_ns": 418_961_000, "over_budget": 7}]}]},
        "threshold_ns": 1000});
    for (k, label) in KERNELS.into_iter().enumerate() {
        let spread = 1000 * (k as u64 + 1);
        for (probe, extra) in
            [("timer", serde_json::json!({"interval_us": 1000, "distance_us": 0})), ("gtod", serde_json::json!({}))]
        {
            for load in ["none", "paper"] {
                let h = head(label, probe, load, accelerator, params(extra.clone()));
                store(&mut s, h, &[20_000 + spread, 290_000, 418_961_000 - spread]);
            }
        }
        store(&mut s, head(label, "noise", "none", accelerator, params(classify.clone())), &[60_000, 418_961_000]);
        let op =
            serde_json::json!({"op": "null-call", "group": "processes", "iterations": 7, "min_repetition_ms": 2.0});
        let cost = RunHead {
            kind: RunKind::SysbenchOp,
            metric: Metric { unit: Unit::Picoseconds, better: Better::Smaller },
            ..head(label, "sysbench", "none", accelerator, params(op))
        };
        store(&mut s, cost, &[100_000 * (k as u64 + 1); 5]);
    }
    // What `app` would hand the report of these probes, in the registry's order.
    let catalog: Vec<ProbeNote> = ["timer", "gtod", "noise"].map(|name| ProbeNote { name, help: "" }).into();
    let runs = crate::report::select::runs(&s, &[], &[], &catalog).unwrap();
    let (latency, costs) = crate::report::select::split(runs);
    (compute(&latency, &costs, None), of_pair(&latency, &costs, KERNELS[0], KERNELS[1]))
}

fn said(f: &Finding) -> String {
    std::iter::once(f.sentence.as_str()).chain(f.caveats.iter().map(String::as_str)).collect::<Vec<_>>().join(" ⚠ ")
}

#[test]
fn emulated_kernels_are_not_ranked_in_one_finding_that_lists_the_cells() {
    let (found, compared) = two_kernels("tcg");
    for list in [&found, &compared] {
        let unranked: Vec<&Finding> =
            list.iter().filter(|f| f.sentence.to_lowercase().contains("not ranked: emulated")).collect();
        assert_eq!(unranked.len(), 1, "one finding for the one cause: {list:#?}");
        let sentence = &unranked[0].sentence;
        let cells = "timer idle, timer loaded (paper), gtod idle, gtod loaded (paper), noise idle, sysbench";
        assert!(sentence.contains(&format!("{} against {}: {cells}", KERNELS[1], KERNELS[0])), "{sentence}");
        assert_eq!(unranked[0].topic, Topic::Unranked);
        assert!(
            !list.iter().any(|f| f.topic == Topic::Pair || f.topic == Topic::Price),
            "nothing is ranked: {list:#?}"
        );
    }
    let sentence = &found[0].sentence;
    assert!(sentence.starts_with("Not ranked: emulated (TCG)"), "it comes first: {sentence}");
    assert!(
        sentence.contains(&format!("the emulated runs of {}, {} against the rule of thumb", KERNELS[0], KERNELS[1]))
    );
    assert!(!found.iter().any(|f| f.topic == Topic::RuleOfThumb), "no emulated run is judged: {found:#?}");
}

#[test]
fn no_finding_of_an_emulated_run_blames_the_kernel_or_a_hypervisor() {
    let (found, compared) = two_kernels("tcg");
    for f in found.iter().chain(&compared) {
        let text = said(f);
        assert!(!text.contains("hypervisor"), "{text}");
        assert!(!text.contains("the kernel is responsible"), "{text}");
    }
    let worst: Vec<&Finding> = found.iter().filter(|f| f.topic == Topic::WorstCase).collect();
    assert!(!worst.is_empty(), "the loaded timer cells still have their worst case: {found:#?}");
    assert!(worst.iter().all(|f| f.caveats.iter().any(|c| c.contains("emulator's"))), "{worst:#?}");
}

#[test]
fn the_same_runs_under_kvm_are_ranked_and_judged() {
    let (found, _) = two_kernels("kvm");
    assert!(!found.iter().any(|f| f.topic == Topic::Unranked), "{found:#?}");
    let pairs = found.iter().filter(|f| f.topic == Topic::Pair).count();
    assert_eq!(pairs, 5, "one sentence per probe × load: {found:#?}");
    assert!(found.iter().any(|f| f.topic == Topic::Price), "{found:#?}");
    let rules: Vec<&Finding> = found.iter().filter(|f| f.topic == Topic::RuleOfThumb).collect();
    assert_eq!(rules.len(), 2, "{found:#?}");
    // What the classification saw is the kernel's own account on a real CPU.
    assert!(rules.iter().all(|f| f.sentence.contains("the largest the kernel is responsible for")), "{rules:#?}");
}

#[test]
fn a_campaigns_page_leads_with_one_finding_per_topic_and_folds_its_kin() {
    let f = |topic: Topic, n: u32| Finding {
        weight: 100 - n,
        topic,
        sentence: format!("{topic:?} {n}"),
        numbers: vec![],
        link: "x".into(),
        caveats: vec![],
    };
    let all = [f(Topic::RuleOfThumb, 1), f(Topic::RuleOfThumb, 2), f(Topic::Pair, 3), f(Topic::RuleOfThumb, 4)];
    let page = super::html(&all, true);
    let (lead, folded) = page.split_once("<details>").expect("the kin are folded");
    assert!(lead.contains("RuleOfThumb 1</a> <em>(2 more of this kind below.)</em>"), "{lead}");
    assert!(lead.contains("Pair 3</a></li>") && !lead.contains("RuleOfThumb 2"), "{lead}");
    assert!(folded.contains("2 more findings") && folded.contains(r#"start="3""#), "{folded}");
    assert!(folded.contains("RuleOfThumb 2") && folded.contains("RuleOfThumb 4"), "{folded}");
    // Fewer labels: the weightiest first, as they come.
    let plain = super::html(&all, false);
    assert!(!plain.contains("<details>") && !plain.contains("more of this kind"), "{plain}");
}

/// The checks that pass or fail say so: a kernel's failure above every latency comparison, a
/// pass with what it went through, a control caught as it must be, and a control not caught as
/// a check that cannot be trusted.
#[test]
fn each_check_says_whether_the_kernel_passed_and_a_control_that_was_not_caught_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("s.db")).unwrap();
    let migrate = |inject: bool, violations: u64| {
        serde_json::json!({"probe": "migrate", "tasks": 3, "task_cpus": [0, 1], "base_priority": 2, "run_ms": 20,
            "interval_ms": 100, "max_wait_us": 1000, "inject": inject, "intervals": 10, "violations": violations,
            "violations_in_steal": 0})
    };
    let pi = |inject: bool, deadlocks: u64| {
        let said: Vec<String> = (0..deadlocks).map(|_| "deadlock: group 0 on CPU 1 …".to_string()).collect();
        serde_json::json!({"probe": "pi", "base_priority": 2, "deadlock_ms": 2000, "inject": inject,
            "inversions": 1000, "deadlocks": deadlocks, "first_deadlocks": said})
    };
    let cases = [
        ("pass", "migrate", migrate(false, 0)),
        ("caught", "migrate", migrate(true, 10)),
        ("deadlock", "pi", pi(false, 1)),
        ("missed", "pi", pi(true, 0)),
    ];
    for (label, probe, extra) in cases {
        store(&mut s, head(label, probe, "none", "kvm", params(extra)), &[5_000, 6_000]);
    }
    let catalog: Vec<ProbeNote> = ["migrate", "pi"].map(|name| ProbeNote { name, help: "" }).into();
    let runs = crate::report::select::runs(&s, &[], &[], &catalog).unwrap();
    let checks: Vec<Finding> = compute(&runs, &[], None).into_iter().filter(|f| f.topic == Topic::Check).collect();
    let sentences: Vec<&str> = checks.iter().map(|f| f.sentence.as_str()).collect();
    assert_eq!(checks.len(), 4, "{sentences:#?}");
    // Failures first, the deadlock's threads in its words; then the pass, then the caught control.
    assert!(
        sentences[..2].iter().any(|s| s.starts_with("Failed (deadlock pi idle): deadlock: group 0")),
        "{sentences:#?}"
    );
    assert!(
        sentences[..2].iter().any(|s| s.starts_with("The control was not caught (missed pi idle, --inject)")),
        "{sentences:#?}"
    );
    assert!(
        sentences[2].starts_with("Passed (pass migrate idle): in 10 intervals of 3 FIFO tasks"),
        "{}",
        sentences[2]
    );
    assert!(sentences[2].contains("ran 0 time(s)"), "{}", sentences[2]);
    assert!(sentences[3].starts_with("The control was caught (caught migrate idle, --inject)"), "{}", sentences[3]);
}
