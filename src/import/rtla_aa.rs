//! rtla timerlat's auto-analysis, as `rtla timerlat top -a` and `hist -a` (rtla 6.3 and later)
//! print it when an activation hits the stop threshold: a heading naming the CPU, then one line
//! per part, indented by two spaces, with its duration and unit and, for the parts of the total,
//! a share in parentheses; under a part, more deeply indented, the tasks it is made of as
//! `name:id  duration unit`; a rule; the thread latency as the total.

use crate::model::{AnalysisInterference, AnalysisTask, TimerlatAnalysis};

const HEADING: &str = " hit stop tracing, analyzing it";

/// `None` when `text` has no auto-analysis; else the analysis, or what is wrong with it.
pub(super) fn analysis(text: &str) -> Option<Result<TimerlatAnalysis, String>> {
    let clean = without_escapes(text);
    let mut lines = clean.lines().skip_while(|l| !l.contains(HEADING));
    let heading = lines.next()?;
    Some(parse(heading, lines))
}

fn parse<'a>(heading: &str, lines: impl Iterator<Item = &'a str>) -> Result<TimerlatAnalysis, String> {
    let cpu = heading.trim_start_matches('#').split_whitespace().nth(1).and_then(|c| c.parse().ok());
    let bad = |line: &str| format!("has an rtla timerlat auto-analysis it cannot read (line '{}')", line.trim());
    let mut a = TimerlatAnalysis { cpu: cpu.ok_or_else(|| bad(heading))?, ..TimerlatAnalysis::default() };
    let (mut irq_latency, mut part) = (None, String::new());
    for line in lines {
        let t = line.trim();
        // The analysis ends where rtla goes on to the run's maximum from idle, the tasks it
        // dumps (`--dump-tasks`) or the trace it saves.
        if t.starts_with("Max timerlat") || t.starts_with("Printing CPU tasks") || t.starts_with("Saving trace") {
            break;
        }
        if t.is_empty() || t.starts_with("->") || t.starts_with("---") || t.ends_with("stack trace") {
            continue;
        }
        let (label, ns) = labelled(t).ok_or_else(|| bad(line))?;
        if !line.starts_with("   ") {
            part = label.replace("(exit from idle)", "").trim().trim_end_matches(':').to_string();
            a.exit_from_idle |= label.contains("(exit from idle)");
            match part.as_str() {
                "IRQ handler delay" => a.irq_handler_delay_ns = ns,
                "IRQ latency" => irq_latency = Some(ns),
                "Timerlat IRQ duration" => a.timer_irq_duration_ns = Some(ns),
                "Previous IRQ interference" => a.previous_irq_interference_ns = Some(ns),
                "IRQ interference" => a.irq_interference_ns = Some(ns),
                "Softirq interference" => a.softirq_interference_ns = Some(ns),
                "Thread interference" => a.thread_interference_ns = Some(ns),
                "Thread latency" => a.thread_latency_ns = Some(ns),
                // The blocking thread's own line, below, holds its name, pid and duration.
                _ => {}
            }
            continue;
        }
        let (name, id) = label.rsplit_once(':').ok_or_else(|| bad(line))?;
        let task = AnalysisTask { name: name.to_string(), id: id.parse().map_err(|_| bad(line))?, duration_ns: ns };
        match part.as_str() {
            "Blocking thread" => a.blocking_thread = Some(task),
            "IRQ interference" => a.interference.push(AnalysisInterference { class: "irq".into(), task }),
            "Softirq interference" => a.interference.push(AnalysisInterference { class: "softirq".into(), task }),
            "Thread interference" => a.interference.push(AnalysisInterference { class: "thread".into(), task }),
            _ => return Err(bad(line)),
        }
    }
    a.irq_latency_ns = irq_latency.ok_or("has an rtla timerlat auto-analysis without its IRQ latency")?;
    Ok(a)
}

/// A part's or a task's line as its label (all before the duration) and its duration in ns.
fn labelled(line: &str) -> Option<(String, u64)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.windows(2).position(|w| matches!(w[1], "us" | "ns") && w[0].parse::<f64>().is_ok())?;
    let ns = crate::parse::time_ns(&format!("{} {}", words[at], words[at + 1]), None)?;
    Some((words[..at].join(" "), ns.round() as u64))
}

/// `text` without its terminal escape sequences (top clears the screen with `ESC c` and
/// colours its headers with `ESC [ … m`).
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
        } else if chars.next_if_eq(&'[').is_some() {
            while chars.next().is_some_and(|c| !c.is_ascii_alphabetic()) {}
        } else {
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rtla-timerlat-top-aa.txt"))
            .unwrap()
    }

    #[test]
    fn the_real_capture_gives_every_part_and_the_hog_as_the_blocking_thread() {
        let a = analysis(&capture()).expect("an analysis").unwrap();
        assert_eq!(a.cpu, 1);
        assert_eq!((a.irq_handler_delay_ns, a.exit_from_idle), (2_577_120, false));
        assert_eq!(a.irq_latency_ns, 3_573_190);
        assert_eq!(a.timer_irq_duration_ns, Some(1_524_730));
        let hog = AnalysisTask { name: "python3".into(), id: 288, duration_ns: 268_408_930 };
        assert_eq!(a.blocking_thread, Some(hog));
        assert_eq!(a.irq_interference_ns, Some(30_337_610));
        assert_eq!((a.softirq_interference_ns, a.thread_interference_ns), (None, None));
        assert_eq!(a.thread_latency_ns, Some(304_011_690));
        assert!(a.interference.iter().all(|i| i.class == "irq" && i.task.name == "local_timer" && i.task.id == 236));
        let listed: u64 = a.interference.iter().map(|i| i.task.duration_ns).sum();
        // rtla rounds each to 10 ns: the list adds up to its class's total within that.
        assert!(listed.abs_diff(30_337_610) <= 10 * a.interference.len() as u64, "{listed}");
        // rtla's shares here (0.85 + 0.50 + 88.29 + 9.98 %) leave 0.38 % it does not account for.
        let shares: u64 = a.parts().iter().filter(|p| p.2).map(|p| p.1).sum();
        assert_eq!(shares, 302_848_390, "the parts, within the thread latency");
        assert_eq!(a.unaccounted_ns(), Some(304_011_690 - 302_848_390));
    }

    #[test]
    fn exit_from_idle_units_and_broken_lines() {
        let text = "## CPU 3 hit stop tracing, analyzing it ##\n  IRQ handler delay:   (exit from idle)   1.5 us (10 %)\n  IRQ latency:  2 us\n";
        let a = analysis(text).unwrap().unwrap();
        assert_eq!((a.cpu, a.irq_handler_delay_ns, a.exit_from_idle, a.irq_latency_ns), (3, 1500, true, 2000));
        assert_eq!(a.thread_latency_ns, None, "a stop on the IRQ side has no thread part");
        let nano = "## CPU 0 hit stop tracing, analyzing it ##\n  IRQ latency:  2500 ns (100 %)\n";
        assert_eq!(analysis(nano).unwrap().unwrap().irq_latency_ns, 2500);
        assert!(analysis("no analysis here\n").is_none());
        let broken = "## CPU 0 hit stop tracing, analyzing it ##\n  IRQ latency: lots\n";
        assert!(analysis(broken).unwrap().unwrap_err().contains("cannot read (line 'IRQ latency: lots')"));
        let headless = "## CPU x hit stop tracing, analyzing it ##\n";
        assert!(analysis(headless).unwrap().is_err());
        let no_irq = "## CPU 0 hit stop tracing, analyzing it ##\n  Thread latency:  25 us (100%)\n";
        assert!(analysis(no_irq).unwrap().unwrap_err().contains("without its IRQ latency"));
        assert_eq!(without_escapes("\x1b[2;37;40mA\x1b[0m\x1bcB"), "AB");
    }
}
