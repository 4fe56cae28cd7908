//! The report as a page, `rtbench report`: figures, tables and one self-contained index.html,
//! written whole or not at all.

mod campaign;
mod draw;
pub mod figures;
mod html;
pub mod png;
pub mod split;
pub mod svg;
pub mod tables;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use draw::figures;
pub use html::html;

use super::findings::Finding;
use super::select::{Monitor, RunView};
use super::Catalog;
use crate::error::InputError;
use figures::Figure;

/// Tells the figure renderers to leave the PNG copies out from now on: a command that was
/// asked to stop (issue 29) still writes the page and its SVGs, which take a moment, but not
/// the rasters, which take seconds. `rtbench report` draws them later from the store.
pub type SkipPngs<'a> = &'a (dyn Fn() -> bool + Sync);

/// Writes the report into `out` atomically: built beside it, then moved into place.
pub fn write(
    out: &Path,
    runs: &[RunView],
    costs: &[RunView],
    monitors: &[Monitor],
    catalog: &Catalog,
    findings: &[Finding],
    skip_pngs: SkipPngs,
) -> Result<ReportFiles> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(InputError::Unwritable {
            path: out.display().to_string(),
            reason: format!("directory '{}' does not exist", parent.display()),
        }
        .into());
    }
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let result = (|| -> Result<ReportFiles> {
        std::fs::create_dir_all(partial.join("figures"))
            .map_err(|e| InputError::Unwritable { path: out.display().to_string(), reason: e.to_string() })?;
        let mut figs = figures(runs);
        figs.extend(draw::cost_figure(costs, &catalog.ops));
        figs.extend(draw::monitor_figures(monitors));
        let pngs = render_files(&partial.join("figures"), &figs, skip_pngs)?;
        let page = html(runs, costs, &figs, pngs, catalog, findings);
        std::fs::write(partial.join("index.html"), &page)?;
        Ok(ReportFiles { index: out.join("index.html"), figures: figs.len(), pngs, html_bytes: page.len() })
    })();
    match result {
        Ok(files) => {
            let old = parent.join(format!(".{name}.old-{}", std::process::id()));
            if out.exists() {
                std::fs::rename(out, &old).with_context(|| format!("could not replace '{}'", out.display()))?;
            }
            std::fs::rename(&partial, out).with_context(|| format!("could not write '{}'", out.display()))?;
            let _ = std::fs::remove_dir_all(&old);
            Ok(files)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

/// What `write` produced.
pub struct ReportFiles {
    pub index: PathBuf,
    pub figures: usize,
    /// Figures drawn as PNG too (all of them unless told to skip, none in a build without
    /// the `png` feature).
    pub pngs: usize,
    pub html_bytes: usize,
}

/// Each figure as SVG, and as PNG where this build draws them, rendered on every core;
/// returns how many have a PNG.
fn render_files(dir: &Path, figs: &[Figure], skip_pngs: SkipPngs) -> Result<usize> {
    let raster = png::rasterizer();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = figs.len().div_ceil(workers).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = figs
            .chunks(per)
            .map(|chunk| {
                let raster = raster.as_ref();
                // Parsing and rasterizing SVG recurse: these get a main thread's stack.
                std::thread::Builder::new().stack_size(8 << 20).spawn_scoped(s, move || -> Result<usize> {
                    let mut pngs = 0;
                    for f in chunk {
                        std::fs::write(dir.join(format!("{}.svg", f.name)), &f.svg)?;
                        let Some(raster) = raster.filter(|_| !skip_pngs()) else { continue };
                        raster.draw(&f.name, &f.svg, &dir.join(format!("{}.png", f.name)))?;
                        pngs += 1;
                    }
                    Ok(pngs)
                })
            })
            .collect::<std::io::Result<Vec<_>>>()
            .context("could not start a figure renderer")?;
        handles.into_iter().map(|h| h.join().map_err(|_| anyhow::anyhow!("figure renderer panicked"))?).sum()
    })
}

/// The items of `it` in the order they first appear, each once.
pub(super) fn distinct<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub(super) fn file_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}
