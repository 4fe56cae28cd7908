//! From flags to the validated settings the rest of rtbench sees (ripgrep's low and high
//! arguments): every range, conflict and parse is checked here, once, and a bad value is one
//! line naming its flag (exit 2). Nothing below `cli` sees the flag structs.

use anyhow::Result;

use super::{Command, CompareArgs, Invocation, LoadCmdArgs, StudyArgs, WcetArgs};
use crate::app::task::*;
use crate::config::*;
use crate::load::LoadSpec;
use crate::store;

/// A probe's subcommand, once the probe is known to run here: its server, when its flags ask
/// for one, else its measuring run.
fn probe(call: super::ProbeCall) -> Result<ProbeTask> {
    let info = call.info;
    (info.supported)().map_err(|why| crate::invalid!("{} cannot run here: {why}", info.name))?;
    let opts = RunOptions { instruments: call.instruments, ..call.run.options() };
    if let Some(spec) = call.args.serve()? {
        return Ok(ProbeTask::Serve { spec, opts });
    }
    Ok(ProbeTask::Measure(RunConfig::new(info, &call.args, &opts)?))
}

/// The settings a command line asks for, checked: what `app` runs.
pub fn validate(invocation: Invocation) -> Result<Task> {
    let cmd = match invocation {
        Invocation::Probe(call) => return Ok(Task::Probe(probe(call)?)),
        Invocation::Command(cmd) => cmd,
    };
    let db = |d: super::DbArg| store::default_path(d.db.as_deref());
    Ok(match cmd {
        Command::Study(a) => Task::Study(a.config()?),
        Command::Audit(a) => Task::Audit(AuditConfig {
            cpus: crate::parse::cpu_list(a.cpus.as_deref(), "--cpus")?,
            json: a.json,
            strict: a.strict,
        }),
        Command::Report(a) => {
            for label in &a.labels {
                crate::parse::label_filter(label, "--label")?;
            }
            let findings = a.findings.then_some(if a.json { Output::Json } else { Output::Text });
            if let Some(bad) = a.caveats.iter().find(|c| c.trim().is_empty() || c.chars().any(char::is_control)) {
                return Err(crate::invalid!("--caveat {bad:?}: a caveat is one line of text"));
            }
            let (labels, runs, output, caveats) = (a.labels, a.runs, a.output, a.caveats);
            Task::Report(ReportConfig { labels, runs, output, findings, caveats, db: db(a.db) })
        }
        Command::Compare(a) => Task::Compare(a.config()?),
        Command::Import(a) => {
            crate::parse::label(&a.label, "--label")?;
            Task::Import(ImportConfig { file: a.file, label: a.label, load: a.load, db: db(a.db) })
        }
        Command::Merge(a) => Task::Merge(MergeConfig { other: a.other, db: db(a.db) }),
        Command::Load(a) => Task::Load(a.config()?),
        Command::Analyze(a) => Task::Analyze(AnalyzeConfig { file: a.file, salvage: a.salvage, json: a.json }),
        Command::Runs(a) => Task::Runs(RunsConfig { json: a.json, db: db(a.db) }),
        Command::Show(a) => Task::Show(ShowConfig { run: a.run, db: db(a.db) }),
        Command::Export(a) => Task::Export(ExportConfig {
            run: a.run,
            format: a.format,
            output: a.output,
            buckets: a.buckets,
            db: db(a.db),
        }),
        Command::Wcet(a) => Task::Wcet(a.config()),
        Command::Sysbench(a) => Task::Sysbench(a.config()?),
        Command::Monitor(a) => Task::Monitor(a.config()?),
        Command::Resume(a) => {
            Task::Resume(ResumeConfig { run: a.run, duration: a.duration, quiet: a.quiet, db: db(a.db), peer: a.peer })
        }
        Command::Kernels(a) => Task::Kernels(a.config()?),
        Command::Watch(a) => Task::Watch(a.config()?),
        Command::Completions { shell } => Task::Completions(super::docs::completions(shell)),
        Command::Man { dir } => Task::Man(super::docs::man_pages(dir)?),
        Command::LoadSupervisor { dir, deadline_s, spec } => {
            Task::LoadChild(LoadChild { dir, worker: None, deadline_s, spec: serde_json::from_str(&spec)? })
        }
        Command::LoadWorker { dir, index, deadline_s, spec } => {
            Task::LoadChild(LoadChild { dir, worker: Some(index), deadline_s, spec: serde_json::from_str(&spec)? })
        }
    })
}

impl CompareArgs {
    pub fn config(self) -> Result<CompareConfig> {
        crate::parse::label_filter(&self.baseline, "--baseline")?;
        for label in &self.labels {
            crate::parse::label_filter(label, "LABEL")?;
        }
        if self.json && self.labels.len() > 1 {
            return Err(crate::invalid!("--json compares one LABEL (its document is one comparison); give one"));
        }
        // The condition is checked before the store is read: a typo must not wait for it.
        let conditions = self.fail_if.as_deref().map(crate::report::text::compare::parse_conditions).transpose()?;
        Ok(CompareConfig {
            baseline: self.baseline,
            labels: self.labels,
            conditions: conditions.unwrap_or_default(),
            junit: self.junit,
            lava: self.lava,
            json: self.json,
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
        let label = self.label.unwrap_or_else(crate::sysinfo::kernel_release);
        crate::parse::label(&label, "--label")?;
        if let Some(baseline) = &self.baseline {
            crate::parse::label_filter(baseline, "--baseline")?;
        }
        let conditions = self.fail_if.as_deref().map(crate::report::text::compare::parse_conditions).transpose()?;
        let preempt = preempt_models(self.preempt.as_deref())?;
        // Each pass under a model is stored under a longer label: checked now, not a pass later.
        for model in preempt.iter().flatten() {
            crate::parse::label(&crate::app::task::preempt_label(&label, model), "--preempt's label")?;
        }
        let gate = self.baseline.map(|baseline| StudyGate {
            baseline,
            conditions: conditions.unwrap_or_default(),
            junit: self.junit,
            lava: self.lava,
        });
        Ok(StudyConfig {
            preempt,
            duration: self.duration,
            extended: self.extended,
            load: self.load,
            settle: self.settle,
            label,
            output: (!self.no_report).then_some(self.output),
            shield: self.shield,
            instruments: self.instruments,
            peer: self.peer,
            quiet: self.quiet,
            no_sysbench: self.no_sysbench,
            no_qualify: self.no_qualify,
            load_flags: self.load_args.flags(),
            db: store::default_path(self.db.db.as_deref()),
            gate,
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
    crate::config::needs_root("--preempt", "it switches the kernel's preemption model through debugfs")?;
    Ok(Some(models))
}

#[cfg(test)]
mod tests {
    /// Every `.rs` file under `dir`.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Below the command line nothing sees its types, and clap only in a probe's or an
    /// instrument's own flags: structs clap's derive reads, which the probe is built from and the
    /// instrument's settings made from.
    #[test]
    fn nothing_below_the_command_line_sees_its_flags() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let below: Vec<_> =
            files.iter().filter(|f| !f.starts_with(src.join("cli")) && !f.ends_with("main.rs")).collect();
        assert!(below.iter().any(|f| f.ends_with("app/study.rs")), "the walk finds app/");
        for file in below {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let own = file.starts_with(src.join("probe")) || file.starts_with(src.join("instrument"));
                let clap = code.contains("clap::") && !own;
                assert!(!code.contains("crate::cli") && !clap, "{}:{}: {line}", file.display(), n + 1);
            }
        }
    }
}
