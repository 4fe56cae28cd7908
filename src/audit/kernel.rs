//! Kernel-wide settings: preemption model, tick, timers, debug options, RT throttling, printk
//! and watchdogs.

use super::config::KernelConfig;
use super::{ev, ev_file, finding, fix, read};
use crate::model::{Finding, Severity};

pub fn checks(config: &KernelConfig) -> Vec<Finding> {
    vec![preemption(config), tick(config), hrtimers(), debug_options(config), rt_throttling(), printk(), watchdogs()]
}

/// The model a PREEMPT_DYNAMIC kernel boots with: `preempt=` on its command line, else the one
/// its configuration chose.
fn boot_model(config: &KernelConfig) -> Option<(String, &'static str)> {
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    if let Some(m) = super::cmdline_param(&cmdline, "preempt") {
        return Some((m.to_string(), "/proc/cmdline"));
    }
    [
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
    ]
    .into_iter()
    .find(|(opt, _)| config.enabled(opt))
    .map(|(_, m)| (m.to_string(), "kernel configuration"))
}

fn preemption(config: &KernelConfig) -> Finding {
    let version = read("/proc/sys/kernel/version").unwrap_or_default();
    let (realtime_ev, realtime) = ev_file("/sys/kernel/realtime");
    let (dynamic_ev, dynamic) = ev_file("/sys/kernel/debug/sched/preempt");
    let evidence = vec![ev("/proc/sys/kernel/version", version.clone()), realtime_ev, dynamic_ev];
    let word = |w: &str| version.split_whitespace().any(|x| x == w);
    let current = dynamic.as_deref().and_then(crate::sysinfo::current_preempt_model);
    let mut evidence = evidence;
    let severity = |model: &str| if model == "full" || model == "lazy" { Severity::Warn } else { Severity::Bad };
    let f = if realtime.as_deref() == Some("1") || word("PREEMPT_RT") {
        finding("preemption", Severity::Ok, "PREEMPT_RT: fully preemptible, threaded interrupts", evidence)
    } else if let Some(model) = current {
        finding(
            "preemption",
            severity(&model),
            format!("PREEMPT_DYNAMIC, now '{model}': not a real-time kernel"),
            evidence,
        )
    } else if word("PREEMPT_DYNAMIC") {
        match boot_model(config) {
            Some((model, source)) => {
                evidence.push(ev(source, format!("boot model {model}")));
                finding(
                    "preemption",
                    severity(&model),
                    format!("PREEMPT_DYNAMIC, booted '{model}' (debugfs unreadable: it may have been switched since): not a real-time kernel"),
                    evidence,
                )
            }
            None => {
                finding("preemption", Severity::Warn, "PREEMPT_DYNAMIC, current model unreadable (debugfs)", evidence)
            }
        }
    } else if word("PREEMPT") {
        finding("preemption", Severity::Warn, "PREEMPT (low-latency desktop): not a real-time kernel", evidence)
    } else {
        finding("preemption", Severity::Bad, "no forced preemption (server kernel)", evidence)
    };
    fix(f, "boot a PREEMPT_RT kernel; on PREEMPT_DYNAMIC at least preempt=full")
}

fn tick(config: &KernelConfig) -> Finding {
    let Some(source) = config.source.clone() else { return unreadable_config("tick") };
    let hz = config.get("CONFIG_HZ").unwrap_or("?").to_string();
    let full = config.enabled("CONFIG_NO_HZ_FULL");
    let idle = config.enabled("CONFIG_NO_HZ_IDLE") || config.enabled("CONFIG_NO_HZ");
    let evidence = vec![
        ev(&source, format!("CONFIG_HZ={hz}")),
        ev(&source, format!("CONFIG_NO_HZ_FULL={}", if full { "y" } else { "n" })),
        ev(&source, format!("CONFIG_NO_HZ_IDLE={}", if idle { "y" } else { "n" })),
    ];
    let f = if full {
        finding("tick", Severity::Ok, format!("HZ={hz}, tickless on nohz_full CPUs possible"), evidence)
    } else {
        finding("tick", Severity::Warn, format!("HZ={hz}, no NO_HZ_FULL: every CPU takes the tick"), evidence)
    };
    fix(f, "a kernel with CONFIG_NO_HZ_FULL=y, booted with nohz_full=CPUS")
}

/// A check that needs the kernel's configuration where it cannot be read.
fn unreadable_config(check: &str) -> Finding {
    let evidence = vec![
        ev("/proc/config.gz", "absent"),
        ev(&format!("/boot/config-{}", crate::sysinfo::kernel_release()), "absent"),
    ];
    finding(check, Severity::Unknown, "kernel configuration not readable", evidence)
}

fn hrtimers() -> Finding {
    let list = read("/proc/timer_list");
    let Some(list) = list else {
        return finding(
            "hrtimers",
            Severity::Unknown,
            "/proc/timer_list unreadable (root only)",
            vec![ev("/proc/timer_list", "unreadable")],
        );
    };
    let res = list.lines().find(|l| l.trim_start().starts_with(".resolution:")).unwrap_or("").trim().to_string();
    let active: Vec<&str> = list.lines().filter(|l| l.trim_start().starts_with(".hres_active")).collect();
    let all_active = !active.is_empty() && active.iter().all(|l| l.trim_end().ends_with('1'));
    let evidence = vec![ev("/proc/timer_list", format!("{res}; {} CPUs with hres_active", active.len()))];
    let f = if res.contains("1 nsecs") && all_active {
        finding("hrtimers", Severity::Ok, "high-resolution timers active on every CPU", evidence)
    } else {
        finding("hrtimers", Severity::Bad, "high-resolution timers not active: sleeps round to the tick", evidence)
    };
    fix(f, "a kernel with CONFIG_HIGH_RES_TIMERS=y and a working clock event device (no highres=off)")
}

fn debug_options(config: &KernelConfig) -> Finding {
    let Some(source) = config.source.clone() else { return unreadable_config("debug-options") };
    let costly = ["CONFIG_PROVE_LOCKING", "CONFIG_LOCKDEP", "CONFIG_KASAN", "CONFIG_DEBUG_KMEMLEAK", "CONFIG_KCSAN"];
    let on: Vec<&str> = costly.iter().copied().filter(|o| config.enabled(o)).collect();
    let evidence =
        vec![ev(&source, if on.is_empty() { "none of ".to_string() + &costly.join(", ") } else { on.join(", ") })];
    let f = if on.is_empty() {
        finding("debug-options", Severity::Ok, "no debug option that adds latency", evidence)
    } else {
        finding("debug-options", Severity::Bad, format!("debug options that add latency: {}", on.join(", ")), evidence)
    };
    fix(f, "a kernel built without lockdep, KASAN, kmemleak or KCSAN")
}

fn rt_throttling() -> Finding {
    let t = crate::sysinfo::rt_throttling();
    let shown = |v: Option<i64>| v.map_or("unreadable".to_string(), |n| n.to_string());
    let evidence = vec![
        ev("/proc/sys/kernel/sched_rt_runtime_us", shown(t.sched_rt_runtime_us)),
        ev("/proc/sys/kernel/sched_rt_period_us", shown(t.sched_rt_period_us)),
    ];
    let f = match (t.sched_rt_runtime_us, t.sched_rt_period_us) {
        (Some(r), Some(p)) if r >= 0 && r < p => finding(
            "rt-throttling",
            Severity::Warn,
            format!(
                "RT throttling on: a real-time task that does not sleep is stopped for {} ms of every {} ms",
                (p - r) / 1000,
                p / 1000
            ),
            evidence,
        ),
        (Some(_), Some(_)) => finding("rt-throttling", Severity::Ok, "RT throttling off", evidence),
        _ => finding("rt-throttling", Severity::Unknown, "RT throttling settings unreadable", evidence),
    };
    fix(f, "echo -1 > /proc/sys/kernel/sched_rt_runtime_us (only with RT tasks that sleep)")
}

fn printk() -> Finding {
    let (e, value) = ev_file("/proc/sys/kernel/printk");
    let level: Option<u32> = value.as_deref().and_then(|v| v.split_whitespace().next()?.parse().ok());
    let f = match level {
        Some(l) if l > 4 => finding(
            "printk",
            Severity::Warn,
            format!("console loglevel {l}: kernel messages to a slow console stall the CPU that prints"),
            vec![e],
        ),
        Some(l) => finding("printk", Severity::Ok, format!("console loglevel {l}: only warnings and worse"), vec![e]),
        None => finding("printk", Severity::Unknown, "console loglevel unreadable", vec![e]),
    };
    fix(f, "dmesg -n 1, or boot with quiet loglevel=3")
}

fn watchdogs() -> Finding {
    let (nmi_ev, nmi) = ev_file("/proc/sys/kernel/nmi_watchdog");
    let (soft_ev, soft) = ev_file("/proc/sys/kernel/watchdog");
    let on: Vec<&str> = [(nmi.as_deref(), "NMI watchdog"), (soft.as_deref(), "soft-lockup watchdog")]
        .into_iter()
        .filter(|(v, _)| *v == Some("1"))
        .map(|(_, n)| n)
        .collect();
    let evidence = vec![nmi_ev, soft_ev];
    let f = if on.is_empty() {
        finding("watchdogs", Severity::Ok, "no lockup watchdog interrupts the CPUs", evidence)
    } else {
        finding(
            "watchdogs",
            Severity::Warn,
            format!("{} on: a periodic interrupt on every CPU", on.join(" and ")),
            evidence,
        )
    };
    fix(f, "boot with nmi_watchdog=0 nowatchdog, or sysctl kernel.watchdog=0 kernel.nmi_watchdog=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_and_debug_options_read_the_config() {
        let c =
            KernelConfig::from_text("CONFIG_HZ=250\nCONFIG_NO_HZ_IDLE=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\n");
        let t = tick(&c);
        assert_eq!(t.severity, Severity::Warn);
        assert!(t.summary.contains("HZ=250") && t.fix.is_some(), "{t:?}");
        let d = debug_options(&c);
        assert_eq!(d.severity, Severity::Bad);
        assert!(d.summary.contains("CONFIG_PROVE_LOCKING, CONFIG_LOCKDEP"), "{d:?}");
        let full = KernelConfig::from_text("CONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\n");
        assert_eq!(tick(&full).severity, Severity::Ok);
        assert_eq!(tick(&full).fix, None);
        assert_eq!(debug_options(&full).severity, Severity::Ok);
    }
}
