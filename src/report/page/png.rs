//! PNG copies of the figures, for documents and slides (the page itself shows the SVGs). Only a
//! build with the `png` feature (a default one) draws them: its text and font stack is a third of
//! a first build's CPU time (issue 40), so the README's first command leaves it out.

use std::path::Path;

use anyhow::Result;

/// Whether this build can draw PNG copies at all.
pub const BUILT: bool = cfg!(feature = "png");

/// The system's fonts, loaded once, shared by every renderer thread; `None` in a build
/// without the `png` feature.
pub fn rasterizer() -> Option<Rasterizer> {
    #[cfg(feature = "png")]
    {
        let mut opt = resvg::usvg::Options::default();
        opt.fontdb_mut().load_system_fonts();
        Some(Rasterizer(opt))
    }
    #[cfg(not(feature = "png"))]
    None
}

#[cfg(feature = "png")]
pub struct Rasterizer(resvg::usvg::Options<'static>);

/// No value of it exists in a build without the `png` feature.
#[cfg(not(feature = "png"))]
pub enum Rasterizer {}

impl Rasterizer {
    /// Draws figure `name`'s SVG as a PNG file at `path`.
    #[cfg(feature = "png")]
    pub fn draw(&self, name: &str, svg: &str, path: &Path) -> Result<()> {
        use anyhow::Context;
        let tree =
            resvg::usvg::Tree::from_str(svg, &self.0).with_context(|| format!("figure {name} is not valid SVG"))?;
        let size = tree.size().to_int_size();
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).context("figure has no size")?;
        resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
        pixmap.save_png(path)?;
        Ok(())
    }

    #[cfg(not(feature = "png"))]
    pub fn draw(&self, _name: &str, _svg: &str, _path: &Path) -> Result<()> {
        match *self {}
    }
}
