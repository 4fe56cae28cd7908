//! `rtbench load`: a load by itself, with a countdown and a line per generator.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::LoadCmdArgs;
use crate::load::{self, CpuSample, LoadSession, LoadSpec};

pub fn run(a: LoadCmdArgs) -> Result<i32> {
    if a.list {
        print!("{}", list());
        return Ok(0);
    }
    let Some(profile) = &a.profile else {
        return Err(crate::invalid!("name a load profile or generators, or --list them"));
    };
    let spec = LoadSpec::parse(profile, crate::config::load_options(&a.load.flags()))?;
    let tmp = crate::config::tmp_dir(&a.load.flags())?;
    let deadline = a.duration.as_secs() + 60;
    let signals = crate::runner::signals::Installed::new()?;
    let session = LoadSession::start(&spec, &tmp, deadline)?;
    if std::env::var_os("RTBENCH_TEST_PANIC_WITH_LOAD").is_some() {
        panic!("test hook: panic while a load runs");
    }
    let before = CpuSample::read();
    let started = Instant::now();
    let live = !a.quiet && crate::sys::stdout_is_tty();
    let mut drawn = 0;
    let mut code = 0;
    while started.elapsed() < a.duration {
        std::thread::sleep(Duration::from_millis(200));
        if let Some(sig) = crate::runner::signals::received() {
            code = 128 + sig;
            break;
        }
        if live {
            drawn = draw(&session, started.elapsed(), a.duration, drawn);
        }
    }
    let after = CpuSample::read();
    let generators = session.stop();
    drop(signals);
    let (report, warnings) = load::session_report(&spec, generators, &before, &after);
    println!("load '{}' for {:.1} s", report.profile, started.elapsed().as_secs_f64());
    for g in &report.generators {
        let variant = g.variant.as_deref().map(|v| format!(" ({v})")).unwrap_or_default();
        println!("  {:<24} {:>10} {}{variant}", g.name, g.iterations, g.unit);
    }
    if let Some(act) = &report.activity {
        let busy: Vec<String> =
            act.cpu_busy_percent.iter().enumerate().map(|(c, b)| format!("CPU{c} {b:.1} %")).collect();
        println!("  busy: {}", busy.join(", "));
        println!("  context switches {:.0}/s, interrupts {:.0}/s", act.context_switches_per_s, act.interrupts_per_s);
    }
    for w in warnings {
        println!("WARNING: {w}");
    }
    Ok(code)
}

fn draw(session: &LoadSession, elapsed: Duration, total: Duration, drawn: usize) -> usize {
    let mut out = String::new();
    if drawn > 0 {
        out.push_str(&format!("\x1b[{drawn}A"));
    }
    let progress = session.progress();
    for g in &progress {
        let state = if g.ran { "running" } else { "starting" };
        out.push_str(&format!("\x1b[2K  {:<24} {:<9} {:>10} {}\n", g.name, state, g.iterations, g.unit));
    }
    let left = total.saturating_sub(elapsed).as_secs();
    out.push_str(&format!("\x1b[2K  {left} s left (Ctrl-C stops and cleans up)\n"));
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    progress.len() + 1
}

/// The profiles and generators, and whether each can run here.
pub fn list() -> String {
    let opts = crate::load::LoadOptions { jobs: 1, fswalk_path: "/".into(), ..Default::default() };
    let mut out = String::from("profiles:\n");
    for (name, help, gens) in load::PROFILES {
        out.push_str(&format!("  {name:<12} {help}: {}\n", if gens.is_empty() { "-".into() } else { gens.join(", ") }));
    }
    out.push_str("generators:\n");
    for g in load::REGISTRY {
        let here = match (g.supported)(&opts) {
            Ok(()) => "ok".to_string(),
            Err(why) => format!("unavailable: {why}"),
        };
        out.push_str(&format!("  {:<12} {} [{}] ({here})\n", g.name, g.help, g.stresses));
    }
    out
}
