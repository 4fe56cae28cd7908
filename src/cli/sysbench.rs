//! `rtbench sysbench`: its flags, checked into the settings app/sysbench.rs runs.

use anyhow::Result;

use super::SysbenchArgs;
use crate::app::task::{SysbenchConfig, SysbenchMode, SysbenchRun};
use crate::config::load_options;
use crate::invalid;
use crate::load::LoadSpec;
use crate::sysbench::Op;

impl SysbenchArgs {
    pub fn config(self) -> Result<SysbenchConfig> {
        if self.list {
            return Ok(SysbenchConfig::List);
        }
        let label = self.label.unwrap_or_else(crate::sysinfo::kernel_release);
        crate::parse::label(&label, "--label")?;
        if let Some(baseline) = &self.baseline {
            crate::parse::label_filter(baseline, "--baseline")?;
        }
        let ops = choose(&crate::sysbench::ops(), self.only.as_deref())?;
        let flags = self.load.load_args.flags();
        let mode = match (self.total, self.baseline) {
            (true, None) => return Err(invalid!(
                "--total needs --baseline LABEL: the label its % row compares against (this label itself on a first kernel)"
            )),
            (true, Some(baseline)) => SysbenchMode::Total { baseline, loads: total_loads(&self.loads, &flags)? },
            (false, Some(_)) => {
                return Err(invalid!("--baseline is for --total's % row; compare labels with rtbench compare"))
            }
            (false, None) => SysbenchMode::Once { load: LoadSpec::parse(&self.load.load, load_options(&flags))? },
        };
        let cpu = match self.cpu.as_deref() {
            Some("none") => None,
            Some(c) => Some(crate::parse::one_cpu(c, "--cpu")?),
            None => Some(crate::sysbench::default_cpu()),
        };
        Ok(SysbenchConfig::Measure(Box::new(SysbenchRun {
            ops,
            quick: self.quick,
            cpu,
            label,
            db: crate::store::default_path(self.db.db.as_deref()),
            settle: self.load.settle,
            load_flags: flags,
            mode,
        })))
    }
}

/// `--loads` of `--total`: each item, + joining generators into one load.
fn total_loads(list: &str, flags: &crate::config::LoadFlags) -> Result<Vec<(String, LoadSpec)>> {
    let mut loads = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(invalid!("--loads '{list}' has an empty entry"));
        }
        loads.push((item.to_string(), LoadSpec::parse(&item.replace('+', ","), load_options(flags))?));
    }
    Ok(loads)
}

/// The names of the operations `--only` names (groups or operations), in table order.
fn choose(all: &[Op], only: Option<&str>) -> Result<Vec<&'static str>> {
    let Some(only) = only else { return Ok(all.iter().map(|o| o.name).collect()) };
    let mut names: Vec<&str> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    names.dedup();
    if names.is_empty() {
        return Err(invalid!("--only '{only}' names nothing; try --list"));
    }
    for n in &names {
        if !all.iter().any(|o| o.name == *n || o.group.name() == *n) {
            return Err(invalid!("--only: unknown group or operation '{n}'; rtbench sysbench --list names them"));
        }
    }
    Ok(all.iter().filter(|o| names.iter().any(|n| o.name == *n || o.group.name() == *n)).map(|o| o.name).collect())
}
