//! `rtbench monitor`: the flags of continuous monitoring.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::DbArg;
use crate::app::task::MonitorConfig;
use crate::config::{RunConfig, RunOptions};
use crate::instrument::Request;
use crate::probe::noise::NoiseFlags;
use crate::probe::timer::{Interval, TimerFlags};
use crate::probe::{ProbeArgs, ProbeFlags};

#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// Wake-up interval of the timer probe, in µs
    #[arg(short = 'i', long, value_parser = crate::parse::positive_us, default_value_t = crate::probe::timer::INTERVAL_US, value_name = "US")]
    pub interval: u64,
    /// CPUs to watch, one thread each, e.g. 0-3 [default: all online]
    #[arg(short = 'a', long, value_name = "CPUS")]
    pub affinity: Option<String>,
    /// Watch OS noise instead of timer wake-ups: the noise probe's busy loop (osnoise, oslat)
    /// on every watched CPU. It takes those CPUs whole (what RT throttling leaves): for a lab
    /// machine, not one that serves real-time work
    #[arg(long, conflicts_with = "interval")]
    pub noise: bool,
    /// With --noise: gaps longer than this count, in µs
    #[arg(long, value_parser = crate::parse::positive_us, default_value_t = crate::probe::noise::THRESHOLD_US, value_name = "US", requires = "noise")]
    pub noise_threshold: u64,
    /// Real-time priority of the measuring threads (1-99)
    #[arg(short = 'p', long, value_parser = crate::parse::priority, default_value_t = 95)]
    pub priority: i32,
    /// Each window is stored as one run (the OSADL farm draws 5-minute maxima)
    #[arg(long, value_parser = crate::parse::duration, default_value = "5m", value_name = "DURATION")]
    pub window: Duration,
    /// Delete stored windows of this monitor older than this
    #[arg(long, value_parser = crate::parse::duration, default_value = "7d", value_name = "DURATION")]
    pub keep: Duration,
    /// Serve Prometheus metrics at http://ADDR/metrics ("off": no endpoint). Only loopback
    /// unless an address is given here
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR")]
    pub listen: String,
    /// Answer only requests carrying `Authorization: Bearer TOKEN`
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Count samples over these latencies, e.g. 100us,1ms (a bare number is seconds)
    #[arg(long, default_value = "100us,1ms", value_name = "LIST")]
    pub threshold: String,
    /// Stop after this long [default: until SIGTERM or Ctrl-C]
    #[arg(short = 'D', long, value_parser = crate::parse::duration)]
    pub duration: Option<Duration>,
    /// After a run bounded by -D, keep serving its final numbers this long, so a scraper sees
    /// every sample the store holds
    #[arg(long, value_parser = crate::parse::duration, value_name = "DURATION", requires = "duration")]
    pub linger: Option<Duration>,
    /// Label to store the windows under [default: uname -r]
    #[arg(long)]
    pub label: Option<String>,
    /// Also write every window's histogram per CPU to an HdrHistogram interval log FILE
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// CPUs for rtbench's own work while it watches (see `timer --main-affinity`) [default: the
    /// online CPUs not watched]
    #[arg(long, value_name = "CPUS")]
    pub main_affinity: Option<String>,
    #[command(flatten)]
    pub db: DbArg,
    /// What the instruments' flags ask for (`--split`, `--classify`: their monitor forms, from
    /// the instruments' registry).
    #[arg(skip)]
    pub instruments: Vec<Request>,
}

impl MonitorArgs {
    pub fn config(self) -> Result<MonitorConfig> {
        let probe = if self.noise { "noise" } else { "timer" };
        let info = crate::probe::info(probe).expect("the monitor's probes are registered");
        (info.supported)().map_err(|why| crate::invalid!("the monitor cannot run here: {why}"))?;
        let thresholds = thresholds(&self.threshold)?;
        let args = match self.noise {
            // The busy loop has no interval: what it counts is set by its threshold.
            true => ProbeArgs::new(NoiseFlags { threshold: self.noise_threshold }),
            false => {
                ProbeArgs::new(TimerFlags { interval: Interval { interval: self.interval }, ..TimerFlags::defaults() })
            }
        };
        let opts = RunOptions {
            affinity: self.affinity,
            priority: self.priority,
            duration: self.duration,
            quiet: true,
            label: self.label,
            db: self.db.db,
            instruments: self.instruments,
            main_affinity: self.main_affinity,
            ..RunOptions::default()
        };
        Ok(MonitorConfig {
            run: RunConfig::new(info, &args, &opts)?,
            thresholds,
            window: self.window,
            keep: self.keep,
            listen: (self.listen != "off").then_some(self.listen),
            token: self.token,
            linger: self.linger,
            hlog: self.hlog,
        })
    }
}

/// `--threshold 100us,1ms`: latencies in ns.
fn thresholds(list: &str) -> Result<Vec<u64>> {
    list.split(',')
        .map(|item| {
            let item = item.trim();
            // A bare number was read as a duration, in seconds; it still is.
            crate::parse::latency_ns(item, "s")
                .map_err(|_| crate::invalid!("--threshold: '{item}' is not a latency; use e.g. 100us,1ms"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn thresholds_take_microseconds_and_durations_and_refuse_the_rest() {
        assert_eq!(super::thresholds("100us, 1ms,2s").unwrap(), vec![100_000, 1_000_000, 2_000_000_000]);
        for bad in ["", "fast", "0us", "-5us"] {
            let e = super::thresholds(bad).unwrap_err();
            assert!(e.to_string().contains("--threshold"), "{bad}: {e}");
        }
    }
}
