//! From flags to the validated settings the rest of rtbench sees (ripgrep's low and high
//! arguments): every range, conflict and parse is checked here, once, and a bad value is one
//! line naming its flag (exit 2). Nothing below `cli` sees the flag structs.

use anyhow::Result;

use super::{CompareArgs, LoadCmdArgs, StudyArgs, WcetArgs};
use crate::config::{CompareConfig, LoadConfig, LoadRun, StudyConfig, WcetConfig};
use crate::load::LoadSpec;
use crate::store;

impl CompareArgs {
    pub fn config(self) -> Result<CompareConfig> {
        // The condition is checked first: a typo must not wait for the store.
        let conditions = self.fail_if.as_deref().map(crate::report::compare::parse_conditions).transpose()?;
        Ok(CompareConfig {
            baseline: self.baseline,
            label: self.label,
            conditions: conditions.unwrap_or_default(),
            db: store::default_path(self.db.db.as_deref()),
        })
    }
}

impl WcetArgs {
    pub fn config(self) -> WcetConfig {
        WcetConfig {
            run: self.run,
            samples: self.samples,
            json: self.json,
            db: store::default_path(self.db.db.as_deref()),
        }
    }
}

impl LoadCmdArgs {
    pub fn config(self) -> Result<LoadConfig> {
        if self.list {
            return Ok(LoadConfig::List);
        }
        let Some(profile) = &self.profile else {
            return Err(crate::invalid!("name a load profile or generators, or --list them"));
        };
        let flags = self.load.flags();
        let spec = LoadSpec::parse(profile, crate::config::load_options(&flags))?;
        let tmpdir = crate::config::tmp_dir(&flags)?;
        Ok(LoadConfig::Run(LoadRun { spec, tmpdir, duration: self.duration, quiet: self.quiet }))
    }
}

impl StudyArgs {
    pub fn config(self) -> Result<StudyConfig> {
        Ok(StudyConfig {
            preempt: preempt_models(self.preempt.as_deref())?,
            duration: self.duration,
            extended: self.extended,
            load: self.load,
            settle: self.settle,
            label: self.label.unwrap_or_else(crate::sysinfo::kernel_release),
            output: self.output,
            shield: self.shield,
            breach: self.breach.options(),
            peer: self.peer,
            quiet: self.quiet,
            no_sysbench: self.no_sysbench,
            load_flags: self.load_args.flags(),
            db: store::default_path(self.db.db.as_deref()),
        })
    }
}

/// The models of `--preempt`, checked.
fn preempt_models(given: Option<&str>) -> Result<Option<Vec<String>>> {
    use crate::runner::preempt::MODELS;
    let Some(list) = given else { return Ok(None) };
    let models: Vec<String> = list.split(',').map(|m| m.trim().to_string()).collect();
    if let Some(bad) = models.iter().find(|m| !MODELS.contains(&m.as_str())) {
        return Err(crate::invalid!("--preempt: '{bad}' is not a preemption model; use {}", MODELS.join(", ")));
    }
    Ok(Some(models))
}
