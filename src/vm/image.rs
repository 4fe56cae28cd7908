//! What an x86 kernel image (bzImage) says about itself in its boot header: its release, and
//! how long it must be. A truncated image still has a whole header, and would only be found
//! out by a guest that never boots; the header's own length catches it before any boot.

use std::path::Path;

use anyhow::Result;

/// Where the fields of the x86 boot protocol's setup header sit in the file.
const SETUP_SECTS: usize = 0x1F1;
const SYSSIZE: usize = 0x1F4;
const MAGIC: usize = 0x202;
const KERNEL_VERSION: usize = 0x20E;

/// A kernel image that can be booted, as far as its header tells.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// `uname -r` of the kernel it holds.
    pub release: String,
}

/// Reads `path`'s boot header; an input error naming the file when it is no bzImage or is
/// shorter than its header says.
pub fn inspect(path: &Path) -> Result<Image> {
    let bytes = std::fs::read(path).map_err(|e| crate::invalid!("kernel '{}': {e}", path.display()))?;
    parse(&bytes).map_err(|why| crate::invalid!("kernel '{}': {why}", path.display()))
}

/// The header of an image held in `bytes`.
pub fn parse(bytes: &[u8]) -> Result<Image, String> {
    let u16_at = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if bytes.get(MAGIC..MAGIC + 4) != Some(b"HdrS") {
        return Err("not an x86 kernel image (no bzImage boot header)".into());
    }
    // A setup_sects of 0 means 4, the boot protocol's oldest default.
    let setup = match bytes[SETUP_SECTS] {
        0 => 4,
        n => n as usize,
    };
    let payload = u32_at(SYSSIZE).ok_or("its boot header is cut off")?;
    let whole = (setup + 1) * 512 + payload * 16;
    if bytes.len() < whole {
        return Err(format!("truncated: {} of the {whole} bytes its boot header announces", bytes.len()));
    }
    let at = u16_at(KERNEL_VERSION).filter(|&p| p != 0).ok_or("its boot header names no version")? + 0x200;
    let text = bytes.get(at..).unwrap_or_default();
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len()).min(256)];
    let release = String::from_utf8_lossy(text).split_whitespace().next().unwrap_or("").to_string();
    if release.is_empty() {
        return Err("its boot header names no version".into());
    }
    Ok(Image { release })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header-only image of `payload` 16-byte paragraphs after 2 setup sectors.
    fn image(payload: u32, version: &str) -> Vec<u8> {
        let mut b = vec![0u8; 3 * 512 + payload as usize * 16];
        b[SETUP_SECTS] = 2;
        b[SYSSIZE..SYSSIZE + 4].copy_from_slice(&payload.to_le_bytes());
        b[MAGIC..MAGIC + 4].copy_from_slice(b"HdrS");
        let text_at = 0x400usize;
        b[KERNEL_VERSION..KERNEL_VERSION + 2].copy_from_slice(&((text_at - 0x200) as u16).to_le_bytes());
        b[text_at..text_at + version.len()].copy_from_slice(version.as_bytes());
        b
    }

    #[test]
    fn the_release_is_the_first_word_of_the_header_version() {
        let img = image(100, "6.1.0-56-rt-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_RT");
        assert_eq!(parse(&img).unwrap().release, "6.1.0-56-rt-amd64");
        let mut signed = img.clone();
        signed.extend_from_slice(&[7; 1472]);
        assert!(parse(&signed).is_ok(), "a signature after the payload is not a fault");
    }

    #[test]
    fn a_cut_image_or_a_file_that_is_no_kernel_is_refused() {
        let img = image(100, "6.1.0-56-amd64 (x)");
        let cut = parse(&img[..img.len() - 1]).unwrap_err();
        assert!(cut.starts_with("truncated: 3135 of the 3136 bytes"), "{cut}");
        assert!(parse(b"#!/bin/sh\n").unwrap_err().contains("not an x86 kernel image"));
        assert!(parse(&image(1, "")).unwrap_err().contains("no version"));
    }
}
