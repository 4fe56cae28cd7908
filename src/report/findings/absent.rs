//! What the runs do not hold: the probes a study could not run under a label, said with the
//! study's reason, so a missing column reads as a fact about the machine, not a fault.

use super::{labels, Finding, Topic};
use crate::report::page::file_safe;
use crate::report::select::RunView;
use crate::store::Absent;

/// One finding per probe and reason, naming its labels; linked to the probe's section where
/// other labels measured it.
pub fn sentences(absent: &[Absent], runs: &[RunView]) -> Vec<Finding> {
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for a in absent {
        match groups.iter_mut().find(|(p, r, _)| *p == a.probe && *r == a.reason) {
            Some((_, _, labels)) => labels.push(&a.label),
            None => groups.push((&a.probe, &a.reason, vec![&a.label])),
        }
    }
    groups
        .into_iter()
        .map(|(probe, reason, under)| {
            let measured = labels(runs.iter().filter(|r| r.probe() == probe));
            let shown = !measured.is_empty();
            let elsewhere = if shown { format!(" (measured under {})", quoted(&measured)) } else { String::new() };
            Finding {
                weight: 620,
                topic: Topic::Absent,
                sentence: format!("{probe} was not measured under {}{elsewhere}: {reason}.", quoted(&under)),
                numbers: Vec::new(),
                link: if shown { format!("probe-{}", file_safe(probe)) } else { "findings".into() },
                caveats: Vec::new(),
            }
        })
        .collect()
}

/// "'a'", "'a' and 'b'", "'a', 'b' and 'c'".
fn quoted(labels: &[&str]) -> String {
    let q: Vec<String> = labels.iter().map(|l| format!("'{l}'")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => q.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadResult;
    use crate::stats::Stats;
    use crate::store::{RunHead, RunWriter, Store};

    fn said(store: &Store, labels: &[&str]) -> Vec<(String, String)> {
        let runs = crate::report::select::runs(store, &[], &[], &[]).unwrap();
        let found = sentences(&store.absent(labels).unwrap(), &runs);
        assert!(found.iter().all(|f| f.topic == Topic::Absent));
        found.into_iter().map(|f| (f.sentence, f.link)).collect()
    }

    #[test]
    fn a_probe_missing_under_some_labels_is_said_once_per_reason_with_where_it_was_measured() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let why = "the kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)";
        for label in ["std", "std-lts"] {
            store.note_absent(label, "timerlat", why).unwrap();
        }
        store.note_absent("std", "noise", "no CPU to measure on").unwrap();
        store.note_absent("rt", "timerlat", "tracefs was not mounted").unwrap();
        let mut stats = Stats::default();
        stats.record(50_000);
        let threads = [ThreadResult { thread: 0, cpu: Some(0), stats, irq: None }];
        RunWriter::whole(&mut store, RunHead { label: "rt".into(), ..RunHead::for_test("timerlat") }, &threads)
            .unwrap();
        assert_eq!(
            said(&store, &["std", "std-lts", "rt"]),
            [
                ("noise was not measured under 'std': no CPU to measure on.".to_string(), "findings".to_string()),
                (
                    format!("timerlat was not measured under 'std' and 'std-lts' (measured under 'rt'): {why}."),
                    "probe-timerlat".into()
                ),
            ]
        );
        assert!(said(&store, &["rt"]).is_empty(), "the run answers rt's old absence");
    }
}
