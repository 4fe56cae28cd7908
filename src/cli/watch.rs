//! `rtbench watch`: its flags, checked into the settings app/watch.rs runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::DbArg;
use crate::app::task::WatchConfig;
use crate::watch::target::Target;

#[derive(Args, Debug)]
#[group(id = "target", required = true, multiple = false, args = ["pid", "comm", "cgroup"])]
pub struct WatchArgs {
    /// The process to watch, with the threads it has and starts
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Every process of this command name (as `pgrep -x` finds them)
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Every process of this cgroup v2 (a path under its mount, or absolute)
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// How long to watch; the watch ends earlier when every watched process has ended
    #[arg(short = 'D', long, value_parser = crate::parse::duration, default_value = "10s", value_name = "DURATION")]
    pub duration: Duration,
    /// Measure the threads that are not real-time too (they are listed, not measured, otherwise)
    #[arg(long)]
    pub all: bool,
    /// For each wait longer than this (µs), what ran on the thread's CPU instead: interrupts,
    /// softirqs, tasks, or nothing the kernel saw. It traces every switch and interrupt of
    /// those CPUs, which costs their threads a little on each (0 or off: not looked up)
    #[arg(long, value_parser = explain_above, default_value = "off", value_name = "US")]
    pub explain_above: u64,
    /// Label of the runs [default: the kernel release]
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
}

/// `--explain-above`: a latency (a bare number in µs), or 0 (also `off`) for none.
fn explain_above(s: &str) -> Result<u64, String> {
    match s {
        "0" | "off" => Ok(0),
        _ => crate::parse::latency_ns(s, "us"),
    }
}

impl WatchArgs {
    pub fn config(self) -> Result<WatchConfig> {
        let label = self.label.unwrap_or_else(crate::sysinfo::kernel_release);
        crate::parse::label(&label, "--label")?;
        let target = match (self.pid, self.comm, self.cgroup) {
            (Some(pid), _, _) => Target::Pid(pid),
            (_, Some(name), _) if name.is_empty() || name.contains('/') => {
                return Err(crate::invalid!("--comm '{name}': a command name, without '/'"))
            }
            (_, Some(name), _) => Target::Comm(name),
            (_, _, Some(dir)) => Target::Cgroup(dir),
            (None, None, None) => return Err(crate::invalid!("watch needs --pid, --comm or --cgroup")),
        };
        Ok(WatchConfig {
            target,
            duration: self.duration,
            all: self.all,
            explain_above_ns: self.explain_above,
            label,
            db: crate::store::default_path(self.db.db.as_deref()),
        })
    }
}
