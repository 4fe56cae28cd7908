//! System load: generators that keep CPUs, caches, the network stack, the scheduler and the
//! disks busy while a probe measures, run as owned child processes that never outlive rtbench.
//!
//! Process tree: rtbench → one supervisor (`rtbench __load-supervisor`, its own process group,
//! SIGTERM when rtbench dies) → one worker per generator (`rtbench __load-worker NAME`, SIGKILL
//! when the supervisor dies, one shared process group and a cgroup where one can be made). The
//! supervisor kills the whole group and removes the temporary directory however rtbench ends.

mod gen;
mod procstat;
mod session;
pub mod supervisor;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use gen::{run_worker, FIRST_SECOND, REGISTRY};
pub use procstat::CpuSample;
pub use session::{report as session_report, LoadSession};

use crate::invalid;

/// What the registry says about a generator; each lives in one file under `gen/`.
pub struct GeneratorInfo {
    pub name: &'static str,
    pub help: &'static str,
    /// What it stresses, for `rtbench load --list` and the report.
    pub stresses: &'static str,
    /// What one iteration is ("builds", "MB copied", ...).
    pub unit: &'static str,
    /// Keeps CPUs busy: a load with one is expected to reach the CPU target.
    pub cpu_bound: bool,
    /// Nice value of its processes (the seed niced hackbench).
    pub nice: i32,
    /// Whether it can run here, and if not why.
    pub supported: fn(&LoadOptions) -> Result<(), String>,
    /// The worker's body, run in its own process until killed.
    pub work: fn(&WorkerCtx) -> Result<()>,
}

/// Options shared by all generators.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LoadOptions {
    /// `make -jN` parallelism (default 2 × online CPUs).
    pub jobs: usize,
    pub kernel_tree: Option<String>,
    pub fswalk_path: String,
    pub hackbench_groups: usize,
}

/// One generator of a load, as parsed from a profile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GeneratorSpec {
    pub name: String,
    /// For `stress-ng:ARGS`, its arguments.
    pub args: Option<String>,
}

/// What a worker process is told.
pub struct WorkerCtx<'a> {
    pub spec: &'a GeneratorSpec,
    pub opts: &'a LoadOptions,
    /// A private scratch directory inside the load's temporary directory.
    pub scratch: std::path::PathBuf,
    counter: std::sync::atomic::AtomicU64,
    status: std::path::PathBuf,
    deadline: Option<std::time::Instant>,
    started: std::time::Instant,
}

/// A load to run: named generators plus options.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadSpec {
    pub profile: String,
    pub generators: Vec<GeneratorSpec>,
    pub options: LoadOptions,
}

/// Named profiles: the seeds' loads.
pub const PROFILES: &[(&str, &str, &[&str])] = &[
    ("paper", "the Geode LX study's Appendix I load", &["compile", "memcopy", "pingflood", "hackbench", "fswalk"]),
    ("ipipe-hd", "the I-pipe study's \"hd\" load", &["pingflood", "disk"]),
    ("none", "no load", &[]),
];

fn known() -> String {
    let profiles: Vec<&str> = PROFILES.iter().map(|p| p.0).collect();
    let gens: Vec<&str> = REGISTRY.iter().map(|g| g.name).collect();
    format!("profiles: {}; generators: {}, stress-ng:ARGS", profiles.join(", "), gens.join(", "))
}

impl LoadSpec {
    /// Parses a profile name or a comma-separated list of generators and checks each can run.
    pub fn parse(profile: &str, options: LoadOptions) -> Result<LoadSpec> {
        let profile = profile.trim();
        let names: Vec<String> = match PROFILES.iter().find(|p| p.0 == profile) {
            Some(p) => p.2.iter().map(|s| s.to_string()).collect(),
            None => profile.split(',').map(|s| s.trim().to_string()).collect(),
        };
        let mut generators = Vec::new();
        for name in names {
            if name.is_empty() {
                return Err(invalid!("--load '{profile}' has an empty entry; known {}", known()));
            }
            let (gen, args) = match name.split_once(':') {
                Some(("stress-ng", args)) => ("stress-ng".to_string(), Some(args.to_string())),
                _ => (name.clone(), None),
            };
            let info = info(&gen).ok_or_else(|| invalid!("unknown load '{name}'; known {}", known()))?;
            (info.supported)(&options).map_err(|why| invalid!("load generator '{gen}' cannot run here: {why}"))?;
            generators.push(GeneratorSpec { name: gen, args });
        }
        Ok(LoadSpec { profile: profile.to_string(), generators, options })
    }

    pub fn is_none(&self) -> bool {
        self.generators.is_empty()
    }

    /// What a run under this load is stored with when it begins; replaced by what the load did
    /// once it stops.
    pub fn planned(&self, settle: std::time::Duration) -> crate::model::LoadRecord {
        crate::model::LoadRecord::Planned(crate::model::LoadPlan {
            profile: self.profile.clone(),
            generators: self.generators.iter().map(|g| g.name.clone()).collect(),
            settle_s: settle.as_secs_f64(),
        })
    }

    /// True when the load should keep every CPU busy.
    pub fn cpu_target(&self) -> Option<f64> {
        self.generators.iter().any(|g| info(&g.name).is_some_and(|i| i.cpu_bound)).then_some(95.0)
    }
}

pub fn info(name: &str) -> Option<&'static GeneratorInfo> {
    REGISTRY.iter().find(|g| g.name == name)
}

pub use crate::sysinfo::on_path;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_expand_and_unknown_names_list_the_known() {
        let spec = LoadSpec::parse("ipipe-hd", LoadOptions::default()).unwrap();
        let names: Vec<_> = spec.generators.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["pingflood", "disk"]);
        assert!(LoadSpec::parse("none", LoadOptions::default()).unwrap().is_none());
        let err = LoadSpec::parse("cpu,bogus", LoadOptions::default()).unwrap_err().to_string();
        assert!(err.contains("unknown load 'bogus'") && err.contains("paper") && err.contains("hackbench"), "{err}");
    }
}
