//! `fswalk`: du's recursive stat of a tree (default `/`), over and over.

use std::path::PathBuf;

use anyhow::Result;

use crate::load::{GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "fswalk",
    help: "stats every file under a path (default /), like du, in a loop",
    stresses: "VFS, dentry and inode caches",
    unit: "directories read",
    cpu_bound: false,
    nice: 0,
    supported: |o: &LoadOptions| {
        let p = if o.fswalk_path.is_empty() { "/" } else { &o.fswalk_path };
        std::fs::read_dir(p).map(drop).map_err(|e| format!("cannot read '{p}': {e}"))
    },
    work,
};

/// Pseudo file systems du would wander into forever or uselessly.
const SKIP: &[&str] = &["/proc", "/sys", "/dev"];

fn work(ctx: &WorkerCtx) -> Result<()> {
    let root = if ctx.opts.fswalk_path.is_empty() { "/".to_string() } else { ctx.opts.fswalk_path.clone() };
    while ctx.keep_going() {
        let mut stack = vec![PathBuf::from(&root)];
        while let Some(dir) = stack.pop() {
            if !ctx.keep_going() {
                return Ok(());
            }
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            ctx.iteration();
            for e in entries.flatten() {
                let path = e.path();
                let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
                if meta.is_dir() && !SKIP.iter().any(|s| path.as_os_str() == *s) {
                    stack.push(path);
                }
            }
        }
    }
    Ok(())
}
