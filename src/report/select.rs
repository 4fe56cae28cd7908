//! Which runs a report or comparison covers, read from the store.

use std::collections::BTreeMap;

use anyhow::Result;

use super::page::figures::scatter::StealMark;
use super::{ProbeNote, Run};
use crate::invalid;
use crate::model::{stolen, CpuInterval, EnvPoint, RunKind};
use crate::store::Store;

/// One run with what the figures need beside its statistics.
pub struct RunView {
    pub data: Run,
    /// Per thread, its envelope in time order.
    pub envelope: Vec<(u32, Vec<EnvPoint>)>,
    /// What happened on the measured CPUs per interval (steal, interrupts).
    pub activity: Vec<CpuInterval>,
    /// Per thread, every sample (time offset, latency) — only for runs short enough that the
    /// store kept them all.
    pub raw: Option<Vec<crate::model::ThreadSamples>>,
    /// The worst-case estimate from the run's histogram, fitted on first use: the report's tail
    /// figures and its findings share it.
    estimate: std::sync::OnceLock<Option<crate::evt::Estimate>>,
    /// The probe as the report shows it ([`crate::model::RunHeader::cell_probe`]).
    cell: String,
}

/// Latency runs (every probe's) apart from costs and bandwidths (`sysbench`): the two are
/// drawn and tabled differently.
pub fn split(runs: Vec<RunView>) -> (Vec<RunView>, Vec<RunView>) {
    runs.into_iter().partition(|r| !r.kind().is_sysbench())
}

/// The labels of `runs` in the order they first appear.
pub fn labels<'a>(runs: impl Iterator<Item = &'a RunView>) -> Vec<&'a str> {
    super::page::distinct(runs.map(|r| r.label()))
}

/// Fits every run's worst-case estimate, one run per CPU at a time: the fits are most of a
/// report's time (78 % at twenty labels).
pub fn fit_all(runs: &[RunView]) {
    crate::par::map(runs, |r| {
        r.estimate();
    });
}

impl RunView {
    /// The run's worst-case estimate from its histogram, as its tail figure draws it.
    pub fn estimate(&self) -> Option<&crate::evt::Estimate> {
        let fit = || crate::evt::for_run(&self.data, crate::evt::sample_rate(&self.data, &[]));
        self.estimate.get_or_init(fit).as_ref()
    }

    /// The intervals in which the hypervisor took a measured CPU away, in time order.
    pub fn steal_marks(&self) -> Vec<StealMark> {
        let interval_s = self.data.header.envelope_ns.max(1) as f64 / 1e9;
        let cpu_of = |thread: u32| self.data.threads.iter().find(|t| t.thread == thread).and_then(|t| t.cpu);
        let mut marks: BTreeMap<u64, StealMark> = BTreeMap::new();
        for a in self.activity.iter().filter(|a| a.steal_ns > 0) {
            let explains = self.envelope.iter().filter(|(t, _)| cpu_of(*t) == Some(a.cpu)).any(|(_, pts)| {
                pts.binary_search_by_key(&a.index, |p| p.index).is_ok_and(|i| stolen(&pts[i], a.steal_ns))
            });
            let start_s = a.index as f64 * interval_s;
            let m = marks.entry(a.index).or_insert(StealMark {
                start_s,
                end_s: start_s + interval_s,
                stolen_ms: 0.0,
                explains: false,
            });
            m.stolen_ms += a.steal_ns as f64 / 1e6;
            m.explains |= explains;
        }
        marks.into_values().collect()
    }

    pub fn label(&self) -> &str {
        &self.data.header.label
    }
    /// The probe, as the report draws and compares the run (with its variant: `ipc-mutex`).
    pub fn probe(&self) -> &str {
        &self.cell
    }
    pub fn kind(&self) -> RunKind {
        self.data.header.kind
    }
    /// The operation a sysbench operation's run measured; `None` for any other run.
    pub fn sysbench_op(&self) -> Option<String> {
        self.data.header.sysbench_op().map(|p| p.op)
    }
    /// The load profile the run was measured under ("none" when idle).
    pub fn load(&self) -> String {
        self.data.header.load_profile().to_string()
    }
}

/// The runs asked for: those with the given ids, plus for each given label the newest run of
/// every probe × load × length. With neither, every label in the store.
pub fn runs(store: &Store, labels: &[String], ids: &[i64], probes: &[ProbeNote]) -> Result<Vec<RunView>> {
    let all = store.runs()?;
    if all.is_empty() {
        return Err(invalid!("the store {} holds no runs yet; run `rtbench study` first", store.path().display()));
    }
    let known: Vec<&str> = {
        let mut k: Vec<&str> = all.iter().map(|r| r.label.as_str()).collect();
        k.dedup();
        k.sort_unstable();
        k.dedup();
        k
    };
    let labels = &expand(labels, &known)?;
    for id in ids {
        if !all.iter().any(|r| r.id == *id) {
            return Err(crate::error::InputError::NoSuchRun(*id).into());
        }
    }
    let wanted_labels: Vec<&str> =
        if labels.is_empty() && ids.is_empty() { known.clone() } else { labels.iter().map(|s| s.as_str()).collect() };
    let mut chosen: Vec<i64> = ids.to_vec();
    for label in &wanted_labels {
        // Newest first, so the first run of each probe × load wins.
        // A study's extended cells (same probe and load, another length) are kept beside the short ones.
        let mut seen: Vec<(String, String, Option<u64>)> = Vec::new();
        for r in all.iter().rev().filter(|r| r.label == *label) {
            let key = (r.cell_probe(), r.load_profile().to_string(), r.params.duration_s().map(f64::to_bits));
            if !seen.contains(&key) {
                seen.push(key);
                chosen.push(r.id);
            }
        }
    }
    chosen.sort_unstable();
    chosen.dedup();
    let mut out = Vec::new();
    for id in chosen {
        let data = store.run(id)?;
        // Nothing to draw or compare: said, as every skip is.
        if let Some(why) = data.without_distribution() {
            eprintln!("rtbench: {why}: left out of the figures and comparisons (`rtbench show {id}` has it)");
            continue;
        }
        let mut envelope: Vec<(u32, Vec<EnvPoint>)> = Vec::new();
        for (t, p) in store.envelope(id)? {
            match envelope.last_mut() {
                Some((last, v)) if *last == t => v.push(p),
                _ => envelope.push((t, vec![p])),
            }
        }
        let raw = store.raw_samples(id)?;
        let complete = !raw.is_empty()
            && data.threads.iter().all(|t| raw.iter().any(|(n, v)| *n == t.thread && v.len() as u64 == t.stats.count));
        let activity = store.cpu_activity(id)?;
        let cell = data.header.cell_probe();
        out.push(RunView {
            data,
            envelope,
            activity,
            raw: complete.then_some(raw),
            estimate: Default::default(),
            cell,
        });
    }
    // Reports read by label, then probe in registry order (its variants by name), then idle
    // before loaded.
    fn probe_rank<'a>(probes: &[ProbeNote], r: &'a RunView) -> (usize, &'a str) {
        (probes.iter().position(|x| x.name == r.data.header.probe).unwrap_or(usize::MAX), r.probe())
    }
    out.sort_by(|a, b| {
        (wanted_labels.iter().position(|l| *l == a.label()), probe_rank(probes, a), a.load() != "none", a.load()).cmp(
            &(wanted_labels.iter().position(|l| *l == b.label()), probe_rank(probes, b), b.load() != "none", b.load()),
        )
    });
    Ok(out)
}

/// The labels asked for, each pattern with `*` or `?` (`rack1/*`: a lab's hosts) replaced by
/// the store's labels it matches, in order; a label or pattern that matches nothing is refused.
pub fn expand(asked: &[String], known: &[&str]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for pattern in asked {
        let matched: Vec<&str> = if known.contains(&pattern.as_str()) {
            vec![pattern.as_str()]
        } else if pattern.contains(['*', '?']) {
            known.iter().copied().filter(|l| glob(pattern.as_bytes(), l.as_bytes())).collect()
        } else {
            vec![]
        };
        if matched.is_empty() {
            let what = if pattern.contains(['*', '?']) { "no label matches" } else { "unknown label" };
            return Err(invalid!("{what} '{pattern}'; the store has {}", known.join(", ")));
        }
        for l in matched {
            if !out.iter().any(|o| o == l) {
                out.push(l.to_string());
            }
        }
    }
    Ok(out)
}

/// Whether `text` matches `pattern`, where `*` is any run of characters (`/` included) and `?`
/// one character.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    // The last `*` seen and where in the text it was tried: backtrack there on a mismatch.
    let (mut p, mut t, mut star): (usize, usize, Option<(usize, usize)>) = (0, 0, None);
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' && !is_continuation(text[t]) || c == text[t] => {
                (p, t) = (p + 1, t + 1);
                // A `?` takes a whole character: skip the rest of its UTF-8 bytes.
                while c == b'?' && t < text.len() && is_continuation(text[t]) {
                    t += 1;
                }
            }
            _ => match star {
                Some((sp, st)) => {
                    (p, t) = (sp + 1, st + 1);
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The windows the monitors of one label and probe stored, for the long-term plot of maxima.
pub struct Monitor {
    pub label: String,
    pub probe: String,
    /// Per window and thread, oldest first.
    pub windows: Vec<crate::model::WindowMax>,
}

/// The monitors of the labels a report covers: those given, or every label when neither labels
/// nor run ids are.
pub fn monitors(store: &Store, labels: &[String], ids: &[i64]) -> Result<Vec<Monitor>> {
    let mut all: Vec<String> = store.runs()?.into_iter().map(|r| r.label).collect();
    all.sort_unstable();
    all.dedup();
    let wanted: Vec<String> = if labels.is_empty() && ids.is_empty() {
        all
    } else {
        expand(labels, &all.iter().map(String::as_str).collect::<Vec<_>>())?
    };
    let mut out = Vec::new();
    for label in wanted {
        let windows = store.window_maxima(&label)?;
        let mut probes: Vec<String> = windows.iter().map(|w| w.probe.clone()).collect();
        probes.sort_unstable();
        probes.dedup();
        for probe in probes {
            let windows = windows.iter().filter(|w| w.probe == probe).cloned().collect();
            out.push(Monitor { label: label.clone(), probe, windows });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{expand, glob};

    #[test]
    fn a_pattern_takes_the_labels_it_matches_and_nothing_else() {
        let known = ["rack1/a/6.1", "rack1/b/6.1", "rack2/a/6.1", "k*"];
        let got = |asked: &[&str]| expand(&asked.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &known);
        assert_eq!(got(&["rack1/*"]).unwrap(), ["rack1/a/6.1", "rack1/b/6.1"]);
        assert_eq!(got(&["*/a/*", "rack1/*"]).unwrap(), ["rack1/a/6.1", "rack2/a/6.1", "rack1/b/6.1"]);
        assert_eq!(got(&["rack?/b/6.1"]).unwrap(), ["rack1/b/6.1"]);
        // A label that is itself a pattern's text is taken as it is.
        assert_eq!(got(&["k*"]).unwrap(), ["k*"]);
        let none = got(&["rack3/*"]).unwrap_err().to_string();
        assert!(none.starts_with("no label matches 'rack3/*'"), "{none}");
        assert!(got(&["rack1"]).unwrap_err().to_string().starts_with("unknown label 'rack1'"));
    }

    #[test]
    fn stars_backtrack_and_a_question_mark_is_one_character() {
        assert!(glob(b"*a*b", b"xaxxab"));
        assert!(!glob(b"*a*b", b"xaxxa"));
        assert!(glob("h?/x".as_bytes(), "hö/x".as_bytes()), "? takes the two bytes of ö");
        assert!(!glob(b"h?/x", "h/x".as_bytes()));
        assert!(glob(b"**", b""));
    }
}
