//! `rtbench load`: a load by itself, with a countdown and a line per generator.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::task::LoadConfig;
use crate::load;
use crate::runner::{LoadStart, LoadView};
use crate::session::Session;

pub fn run(a: LoadConfig) -> Result<i32> {
    let a = match a {
        LoadConfig::List => {
            print!("{}", list());
            return Ok(0);
        }
        LoadConfig::Run(run) => run,
    };
    let mut session = Session::start()?;
    let deadline_s = a.duration.as_secs() + 60;
    let how = LoadStart { spec: &a.spec, tmp: &a.tmpdir, deadline_s, settle: Duration::ZERO, quiet: true };
    crate::runner::start_load(&mut session, &how)?;
    let started = Instant::now();
    let mut view = LoadView::new(a.quiet);
    let outcome = session.wait(
        started,
        Some(a.duration),
        Duration::from_millis(200),
        || false,
        || {
            if let Some(view) = view.as_mut() {
                view.draw(&crate::runner::load_progress(&session), a.duration.saturating_sub(started.elapsed()));
            }
            Ok(())
        },
    )?;
    let stopped = crate::runner::stop_load(&mut session);
    let (report, warnings) = stopped.ok_or_else(|| anyhow::anyhow!("the load was gone before it was stopped"))?;
    drop(session);
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
    Ok(outcome.exit_code())
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
