//! `rtbench wcet RUN`: the extreme-value estimate of a stored run's worst case.

use std::cell::RefCell;
use std::path::Path;

use anyhow::Result;

use super::task::WcetConfig;
use crate::analyze::log_reason;
use crate::error::InputError;
use crate::evt::{self, Estimate, Verdict};
use crate::model::{EnvPoint, Run};
use crate::store::samplelog::{self, LogError};
use crate::store::Store;
use crate::units::fmt_ns_as_us;

pub fn run(a: WcetConfig) -> Result<i32> {
    let store = Store::open(&a.db)?;
    let run = store.run(a.run)?;
    if let Some(why) = run.without_distribution() {
        anyhow::bail!(crate::invalid!("{why} to estimate a worst case from"));
    }
    let measured = run.header.params.measured();
    let envelope = store.envelope(a.run)?;
    let rate = evt::sample_rate(&run, &envelope);
    let maxima = maxima(&envelope);
    let steal_ns = store.cpu_activity(a.run)?.iter().map(|c| c.steal_ns).sum();
    let log = a.samples.clone().or_else(|| measured.and_then(|m| m.samples_file.clone()).map(Into::into));
    let log = log.filter(|p: &std::path::PathBuf| p.exists() || a.samples.is_some());
    let input = evt::Input { rate, maxima, steal_ns, load: evt::load_of(&run), ..evt::Input::new(&run.total.hist) };
    let estimate = match &log {
        Some(path) => from_log(path, input)?,
        None => evt::estimate(&input),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&estimate)?);
    } else {
        print!("{}", render(a.run, &estimate, log.as_deref()));
    }
    Ok(0)
}

/// The estimate with the exceedances read from the sample log at `path`. A log that cannot be
/// read to its last complete block is an error: a fit on the part before a bad block would
/// pass for the run's.
fn from_log(path: &Path, input: evt::Input) -> Result<Estimate> {
    let refuse = |e: LogError| InputError::SampleLog { path: path.display().to_string(), reason: log_reason(e) };
    let index = samplelog::scan(path).map_err(refuse)?;
    let failed = RefCell::new(None);
    let visit = |u: u64, out: &mut dyn FnMut(u32, u64, u64)| {
        let read = samplelog::read_blocks(path, index.step_ns, &index.blocks, |thread, t, lat| {
            if lat >= u {
                out(thread, t / index.step_ns.max(1), lat);
            }
        });
        if let Err(e) = read {
            failed.borrow_mut().get_or_insert(e);
        }
    };
    let estimate = evt::estimate(&evt::Input { raw: Some(&visit), ..input });
    match failed.into_inner() {
        Some(e) => Err(refuse(e).into()),
        None => Ok(estimate),
    }
}

/// Each thread's interval maxima in time order.
fn maxima(envelope: &[(u32, EnvPoint)]) -> Vec<Vec<f64>> {
    let mut threads: Vec<u32> = envelope.iter().map(|(t, _)| *t).collect();
    threads.sort_unstable();
    threads.dedup();
    threads
        .iter()
        .map(|t| {
            let mut points: Vec<&EnvPoint> = envelope.iter().filter(|(i, _)| i == t).map(|(_, p)| p).collect();
            points.sort_by_key(|p| p.index);
            points.iter().filter(|p| p.count > 0).map(|p| p.max as f64).collect()
        })
        .collect()
}

/// Two lines for `show`: the estimate from the run's histogram, for latency runs.
pub fn brief(run: &Run, envelope: &[(u32, EnvPoint)]) -> String {
    let Some(e) = evt::for_run(run, evt::sample_rate(run, envelope)) else { return String::new() };
    let id = run.header.id;
    let picked: Vec<String> = e
        .levels
        .iter()
        .filter(|l| l.name == "1e-9" || l.name == "once per day")
        .map(|l| level_text(l, e.observed_max_ns))
        .collect();
    match e.verdict {
        Verdict::TooFew => format!("\nworst case: too few samples in the tail for an estimate (rtbench wcet {id})\n"),
        v => format!(
            "\nworst case (extreme-value estimate from the histogram; rtbench wcet {id} for the method): {}{}\n  {}\n",
            if v == Verdict::HeavyTail { "heavy tail" } else { "bounded tail" },
            if e.stable { "" } else { "; the tail's shape did not settle, do not trust these" },
            picked.join("; ")
        ),
    }
}

/// One level for `show`, or, where the fit puts it beyond any plausible latency, that it does.
fn level_text(l: &evt::Level, observed_max_ns: u64) -> String {
    if l.bounds_nothing(observed_max_ns) {
        let max = us(observed_max_ns as f64);
        return format!("{}: beyond {}× the observed max of {max} µs (the fit bounds nothing)", l.name, evt::BEYOND);
    }
    let hi = l.hi_ns.map_or("unbounded".to_string(), us);
    format!("{}: {} µs (95 %: {} to {hi} µs)", l.name, us(l.ns), us(l.lo_ns))
}

/// The estimate as text: the thresholds tried, the fit, the levels and the verdict.
pub fn render(id: i64, e: &Estimate, log: Option<&Path>) -> String {
    let mut out = format!(
        "run {id}: worst-case estimate from the {} ({} samples{}), observed max {} µs\n",
        e.from,
        e.samples,
        log.map(|p| format!(", {}", p.display())).unwrap_or_default(),
        us(e.observed_max_ns as f64)
    );
    out.push_str(&thresholds(e));
    out.push_str(&fit(e));
    out.push_str(&checks(e));
    if let Some(h) = e.hours_to_see_1e9 {
        out.push_str(&format!("to see the 1e-9 level directly, a run at this sample rate would need {h:.0} hours\n"));
    }
    for n in &e.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Nanoseconds in µs, as every line of the estimate shows them.
fn us(ns: f64) -> String {
    fmt_ns_as_us(ns)
}

/// Every threshold tried, the chosen one marked; nothing when none was.
fn thresholds(e: &Estimate) -> String {
    if e.candidates.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nthresholds tried (the lowest above which ξ stays within 2.576 standard errors of every higher one is chosen)\n",
    );
    out.push_str("  threshold (µs)  exceedances       ξ     ±se   σ (µs)\n");
    for (i, c) in e.candidates.iter().enumerate() {
        out.push_str(&format!(
            "{} {:>13}  {:>11}  {:>6.3}  {:>6.3}  {:>7}\n",
            if e.chosen == Some(i) { ">" } else { " " },
            us(c.threshold_ns as f64),
            c.exceedances,
            c.xi,
            c.xi_se,
            us(c.sigma_ns)
        ));
    }
    out
}

/// The fit, its levels and the verdict on the tail, or why there is none.
fn fit(e: &Estimate) -> String {
    let (verdict, xi, sigma, u) = match (e.verdict, e.xi, e.sigma_ns, e.threshold_ns) {
        (Verdict::TooFew, ..) | (_, None, ..) | (_, _, None, _) | (.., None) => {
            return "\nverdict: too few exceedances to say anything about the tail; no estimate\n".to_string();
        }
        (verdict, Some(xi), Some(sigma), Some(u)) => (verdict, xi, sigma, u),
    };
    let clusters = match (e.clusters, e.extremal_index) {
        (Some(c), Some(t)) => format!(", {c} clusters (extremal index {t:.2})"),
        _ => String::new(),
    };
    let mut out = format!(
        "\nfit above {} µs: {} exceedances{clusters}; ξ = {xi:.3} (95 %: {:.3} to {:.3}), σ = {} µs\n",
        us(u as f64),
        e.exceedances,
        e.xi_lo.unwrap_or(f64::NAN),
        e.xi_hi.unwrap_or(f64::NAN),
        us(sigma)
    );
    out.push_str("\nlatency exceeded with probability p per sample (95 % profile-likelihood interval)\n");
    for l in &e.levels {
        let hi = l.hi_ns.map_or("unbounded".to_string(), us);
        out.push_str(&format!(
            "  {:<14} p = {:<9.1e} {:>10} µs   ({} to {} µs)\n",
            l.name,
            l.probability,
            us(l.ns),
            us(l.lo_ns),
            hi
        ));
    }
    out.push_str(&match verdict {
        Verdict::HeavyTail => {
            "\nverdict: heavy tail (ξ > 0): no finite worst case; rarer events are larger\n".to_string()
        }
        _ => {
            format!("\nverdict: bounded tail (ξ < 0), estimated endpoint {} µs\n", e.endpoint_ns.map_or("?".into(), us))
        }
    });
    out
}

/// The checks on the interval maxima; nothing when none ran.
fn checks(e: &Estimate) -> String {
    if e.checks.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nchecks on the interval maxima\n");
    for c in &e.checks {
        let said = if c.passed { "holds" } else { "FAILS" };
        out.push_str(&format!(
            "  {:<13} {said:<6} p = {:.2e}  ({}, {} series)\n",
            c.name, c.p_value, c.detail, c.series
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(ns: f64, hi_ns: Option<f64>) -> evt::Level {
        evt::Level { name: "1e-9".into(), probability: 1e-9, ns, lo_ns: ns / 2.0, hi_ns }
    }

    #[test]
    fn a_level_far_past_the_observed_max_is_said_to_bound_nothing_not_printed_as_years() {
        let near = level_text(&level(4_000_000.0, None), 2_000_000);
        assert_eq!(near, format!("1e-9: {} µs (95 %: {} to unbounded µs)", us(4e6), us(2e6)));
        let far = level_text(&level(7.3e17, None), 11_314_589);
        assert!(far.starts_with(&format!("1e-9: beyond 1000× the observed max of {} µs", us(11_314_589.0))), "{far}");
        assert!(!level_text(&level(1.0, Some(2.0)), 0).contains("beyond"), "no max, nothing to compare with");
    }
}
