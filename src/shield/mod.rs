//! `--shield CPUS`: the rest of the system moved off the measured CPUs for a run, as `cset
//! shield` does. Two cpusets (the system on the other CPUs, the shield on these), every task
//! of the root moved into the system set, every IRQ that can be steered sent to the other
//! CPUs. A [`Held`] change: journalled before the first change, and lowered by one `put_back`
//! whether the run ends (the shield drops) or is killed (the next rtbench command replays it).

mod cpuset;
mod irq;
mod journal;

use std::path::PathBuf;

use anyhow::{anyhow, Result};

use crate::model::ShieldRecord;
use crate::restore::{Guard, Held};
use crate::sysinfo::{online_cpus, parse_cpu_list};
use crate::units::format_cpu_list;
pub use journal::Shielded;

const SYSTEM: &str = "rtbench-system";
const SHIELD: &str = "rtbench-shield";

/// A raised shield, held: dropping it lowers it through [`Shielded::put_back`], the same way
/// the next command lowers a killed run's.
pub struct Shield {
    held: Held<Shielded>,
    hierarchy: cpuset::Hierarchy,
    pub record: ShieldRecord,
}

impl Shield {
    /// Moves everything it can off `cpus`. An error leaves nothing changed.
    pub fn raise(cpus: &[usize]) -> Result<Shield> {
        let rest: Vec<usize> = online_cpus().into_iter().filter(|c| !cpus.contains(c)).collect();
        if rest.is_empty() {
            return Err(anyhow!("a shield of every CPU leaves none for the rest of the system"));
        }
        let hierarchy = cpuset::Hierarchy::find().map_err(|e| anyhow!("cannot shield CPUs: {e}"))?;
        let change = Shielded {
            cpus: cpus.to_vec(),
            cpuset_root: hierarchy.root.clone(),
            prefix: hierarchy.prefix.clone(),
            made: vec![SYSTEM.into(), SHIELD.into()],
            irqs: crate::sysinfo::irq_affinities(),
            default_affinity: irq::default_affinity(),
            workqueue_mask: irq::workqueue_mask(),
        };
        let held = Held::journalled(change).map_err(|e| match crate::restore::journal::current::<Shielded>() {
            Ok(Some(other)) if other.owner_alive() => {
                anyhow!(
                    "CPUs {} are shielded already by rtbench (pid {})",
                    format_cpu_list(&other.change.cpus),
                    other.pid
                )
            }
            _ => anyhow!("cannot write the shield's journal: {e}"),
        })?;
        // From here on, dropping the shield puts back whatever was changed.
        let record = ShieldRecord { cpus: cpus.to_vec(), ..ShieldRecord::default() };
        let mut shield = Shield { held, hierarchy, record };
        // Unbound kernel work (the kworker/u* threads and workqueue rescuers cannot be moved
        // between cpusets) is kept off the shield through the workqueue mask instead.
        if shield.held.change().workqueue_mask.is_some() {
            let _ = irq::set_workqueue_mask(&crate::sysinfo::cpu_mask(&rest));
        }
        let h = &shield.hierarchy;
        let mems = h.mems()?;
        h.make(SYSTEM, &format_cpu_list(&rest), &mems).map_err(|e| anyhow!("cannot make cpuset {SYSTEM}: {e}"))?;
        h.make(SHIELD, &format_cpu_list(cpus), &mems).map_err(|e| anyhow!("cannot make cpuset {SHIELD}: {e}"))?;
        for (tid, _) in h.move_all("", SYSTEM)? {
            let allowed = allowed_cpus(tid);
            if allowed.iter().all(|c| cpus.contains(c)) {
                // A per-CPU kernel thread of a shielded CPU: it stays on any kernel.
                shield.record.bound_kernel_threads += 1;
            } else if allowed.iter().any(|c| cpus.contains(c)) {
                shield.record.stuck.push(task_name(tid));
            }
        }
        for (n, list) in &shield.held.change().irqs {
            let Some(now) = parse_cpu_list(list) else { continue };
            if !now.iter().any(|c| cpus.contains(c)) {
                continue;
            }
            let kept: Vec<usize> = now.iter().copied().filter(|c| rest.contains(c)).collect();
            let to = if kept.is_empty() { &rest } else { &kept };
            match irq::set(*n, &format_cpu_list(to)) {
                Ok(()) => shield.record.irqs_moved += 1,
                Err(_) => shield.record.irqs_refused.push(*n),
            }
        }
        if shield.held.change().default_affinity.is_some() {
            let _ = irq::set_default(&crate::sysinfo::cpu_mask(&rest));
        }
        Ok(shield)
    }

    pub fn cpus(&self) -> &[usize] {
        &self.held.change().cpus
    }

    /// The file a measuring thread writes itself into to enter the shield (see [`enter`]).
    pub fn tasks_file(&self) -> PathBuf {
        self.hierarchy.tasks_file(SHIELD)
    }
}

/// Moves the calling thread into the shield whose tasks file this is; its affinity may then
/// name the shielded CPUs.
pub fn enter(tasks_file: &std::path::Path) -> std::io::Result<()> {
    cpuset::enter(tasks_file)
}

impl Guard for Shield {
    fn name(&self) -> &'static str {
        "CPU shield"
    }
}

/// Puts back what `j` says a shield changed. Returns what could not be put back.
fn lower(j: &Shielded) -> Vec<String> {
    let mut problems = Vec::new();
    let h = cpuset::Hierarchy { root: j.cpuset_root.clone(), prefix: j.prefix.clone() };
    for set in j.made.iter().rev() {
        if let Err(e) = h.remove(set) {
            problems.push(format!("cannot remove cpuset {set}: {e}"));
        }
    }
    for (n, list) in &j.irqs {
        match irq::set(*n, list) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound && irq_now(*n).as_deref() != Some(list.as_str()) => {
                problems.push(format!("cannot give IRQ {n} its affinity {list} back: {e}"))
            }
            _ => {}
        }
    }
    if let Some(mask) = &j.workqueue_mask {
        if let Err(e) = irq::set_workqueue_mask(mask) {
            problems.push(format!("cannot give the workqueue cpumask its {mask} back: {e}"));
        }
    }
    if let Some(mask) = &j.default_affinity {
        if let Err(e) = irq::set_default(mask) {
            problems.push(format!("cannot give /proc/irq/default_smp_affinity its {mask} back: {e}"));
        }
    }
    problems
}

fn irq_now(n: u32) -> Option<String> {
    crate::sysinfo::irq_affinities().into_iter().find(|(i, _)| *i == n).map(|(_, l)| l)
}

/// The CPUs a thread may run on, from its status.
fn allowed_cpus(tid: u32) -> Vec<usize> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).and_then(parse_cpu_list).unwrap_or_default()
}

fn task_name(tid: u32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{tid}/comm")).unwrap_or_default();
    format!("{} ({tid})", comm.trim())
}
