//! `rtbench audit`: is this machine ready for real time? Each check reads what the kernel
//! exposes about one setting that spoils latency, says how it stands with the evidence read,
//! and names the fix. Nothing here changes the system.

mod config;
mod cpu;
mod guest;
mod irq;
mod kernel;
mod memory;
mod platform;

use std::fmt::Write;

use crate::model::{Evidence, Finding, Severity};
use crate::sysinfo::read;

/// Every check, on the CPUs that measure (`cpus`), in the order they are shown.
pub fn run(cpus: &[usize]) -> Vec<Finding> {
    let config = config::KernelConfig::read();
    let mut out = Vec::new();
    out.extend(kernel::checks(&config));
    out.extend(cpu::checks(cpus));
    out.extend(guest::checks());
    out.extend(irq::checks(cpus));
    out.extend(memory::checks());
    out
}

/// The findings as a table a person reads.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(out, "{:<8} {:<18} {}", f.severity.as_str(), f.check, f.summary);
        for e in &f.evidence {
            let _ = writeln!(out, "{:<27} {}: {}", "", e.source, e.value);
        }
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "{:<27} fix: {fix}", "");
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let _ = writeln!(
        out,
        "{} checks: {} bad, {} warn, {} unknown, {} ok",
        findings.len(),
        count(Severity::Bad),
        count(Severity::Warn),
        count(Severity::Unknown),
        count(Severity::Ok)
    );
    out
}

/// Evidence read from `source`.
fn ev(source: &str, value: impl Into<String>) -> Evidence {
    Evidence { source: source.to_string(), value: value.into() }
}

/// Evidence of a file, or of it being unreadable.
fn ev_file(path: &str) -> (Evidence, Option<String>) {
    match read(path) {
        Some(v) => (ev(path, v.clone()), Some(v)),
        None => (ev(path, "unreadable"), None),
    }
}

fn finding(check: &str, severity: Severity, summary: impl Into<String>, evidence: Vec<Evidence>) -> Finding {
    Finding { check: check.into(), severity, summary: summary.into(), evidence, fix: None }
}

/// Adds the fix to a finding that is not ok.
fn fix(mut f: Finding, how: &str) -> Finding {
    if f.severity != Severity::Ok {
        f.fix = Some(how.to_string());
    }
    f
}

/// `name=value` of a kernel command line, or `Some("")` for a bare `name`.
fn cmdline_param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline.split_whitespace().take_while(|w| *w != "--").find_map(|w| match w.split_once('=') {
        Some((k, v)) if k == name => Some(v),
        None if w == name => Some(""),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_parameters_are_found_before_init_arguments() {
        let c = "console=ttyS0 quiet isolcpus=1-3 nohz_full=1-3 -- --isolcpus=9";
        assert_eq!(cmdline_param(c, "isolcpus"), Some("1-3"));
        assert_eq!(cmdline_param(c, "quiet"), Some(""));
        assert_eq!(cmdline_param(c, "rcu_nocbs"), None);
        assert_eq!(cmdline_param("a -- isolcpus=1", "isolcpus"), None, "after -- it is init's");
    }

    #[test]
    fn this_machine_is_audited_on_every_listed_check() {
        let findings = run(&crate::sysinfo::online_cpus());
        let names: Vec<&str> = findings.iter().map(|f| f.check.as_str()).collect();
        let must = ["preemption", "rt-throttling", "virtualization", "clocksource", "cpuidle", "irq-affinity"];
        for must in must.into_iter().chain(["guest-idle", "kvm-hints"]) {
            assert!(names.contains(&must), "{must} missing from {names:?}");
        }
        for f in &findings {
            assert!(!f.evidence.is_empty(), "{} has no evidence", f.check);
            assert!(f.severity == Severity::Ok || f.fix.is_some() || f.severity == Severity::Unknown, "{f:?}");
        }
        let text = render(&findings);
        assert!(text.contains(&format!("{} checks:", findings.len())), "{text}");
    }
}
