//! What a kernel image says about itself: its architecture, its release, and how long it must
//! be. An x86 bzImage has all three in its boot header; an arm64 `Image` (Debian's arm64
//! vmlinuz, uncompressed) has its magic in its header, its release in the kernel's banner, and
//! its length in the EFI stub's PE section table; a 32-bit ARM `zImage` (Debian's armmp
//! vmlinuz) has its magic and length in its header and its banner compressed, so its release is
//! the one its file is named after (`vmlinuz-RELEASE`). A truncated image still has a whole
//! header, and would only be found out by a guest that never boots; the length catches it
//! before any boot.

use std::path::Path;

use anyhow::Result;

/// Where the fields of the x86 boot protocol's setup header sit in the file.
const SETUP_SECTS: usize = 0x1F1;
const SYSSIZE: usize = 0x1F4;
const MAGIC: usize = 0x202;
const KERNEL_VERSION: usize = 0x20E;

/// Where arm64's `Image` header keeps its magic, "ARM\x64" (the kernel's booting.rst).
const ARM64_MAGIC: usize = 0x38;
/// Where an EFI stub's MS-DOS header keeps the offset of its PE header.
const PE_OFFSET: usize = 0x3C;
/// Where a 32-bit ARM zImage keeps its magic, then its start and end addresses (the kernel's
/// arch/arm/boot/compressed/head.S).
const ZIMAGE_MAGIC: usize = 0x24;
const ZIMAGE_MAGIC_VALUE: u32 = 0x016F_2818;

/// A kernel image that can be booted, as far as its header tells.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// `uname -r` of the kernel it holds.
    pub release: String,
    pub arch: Arch,
}

/// The architecture a kernel image is for, by Debian's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    Amd64,
    Arm64,
    /// 32-bit ARMv7 with hardware floating point (Debian's armmp kernels).
    Armhf,
}

impl Arch {
    /// Every architecture rtbench boots kernels of.
    pub const ALL: [Arch; 3] = [Arch::Amd64, Arch::Arm64, Arch::Armhf];

    /// Debian's name (`dpkg --print-architecture`), as package names and labels carry it.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
            Arch::Armhf => "armhf",
        }
    }

    /// How the names of Debian's kernel packages for it end (linux-image-rt-arm64,
    /// linux-image-6.1.0-50-rt-armmp): armhf's name the kernel's flavour, not the architecture.
    pub fn package_suffixes(self) -> &'static [&'static str] {
        match self {
            Arch::Amd64 => &["-amd64"],
            Arch::Arm64 => &["-arm64"],
            Arch::Armhf => &["-armmp", "-armmp-lpae"],
        }
    }

    /// ELF's e_machine of its programs (EM_X86_64, EM_AARCH64).
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::Amd64 => 62,
            Arch::Arm64 => 183,
            Arch::Armhf => 40,
        }
    }

    /// The QEMU system emulator its kernels boot on.
    pub fn qemu(self) -> &'static str {
        match self {
            Arch::Amd64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
            Arch::Armhf => "qemu-system-arm",
        }
    }

    /// The architecture rtbench itself was built for.
    pub fn own() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::Amd64),
            "aarch64" => Some(Arch::Arm64),
            "arm" => Some(Arch::Armhf),
            _ => None,
        }
    }
}

/// Reads `path`'s boot header; an input error naming the file when it is no kernel image or is
/// shorter than its header says.
pub fn inspect(path: &Path) -> Result<Image> {
    let fault = |why: &str| crate::invalid!("kernel '{}': {why}", path.display());
    let bytes = std::fs::read(path).map_err(|e| fault(&e.to_string()))?;
    if let Some(length) = zimage_length(&bytes) {
        return zimage(path, bytes.len(), length).map_err(|why| fault(&why));
    }
    parse(&bytes).map_err(|why| fault(&why))
}

/// The header of an x86 or arm64 image held in `bytes` (a zImage needs its file's name:
/// `inspect`).
fn parse(bytes: &[u8]) -> Result<Image, String> {
    if bytes.get(ARM64_MAGIC..ARM64_MAGIC + 4) == Some(b"ARM\x64") {
        return parse_arm64(bytes);
    }
    let u16_at = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if bytes.get(MAGIC..MAGIC + 4) != Some(b"HdrS") {
        return Err(
            "not a kernel image (no x86 bzImage boot header, no arm64 Image header, no ARM zImage header)".into()
        );
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
    Ok(Image { release, arch: Arch::Amd64 })
}

/// The length a 32-bit ARM zImage's header announces (its end address less its start), None
/// when `bytes` is no zImage.
fn zimage_length(bytes: &[u8]) -> Option<usize> {
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if u32_at(ZIMAGE_MAGIC)? != ZIMAGE_MAGIC_VALUE {
        return None;
    }
    Some(u32_at(ZIMAGE_MAGIC + 8)?.wrapping_sub(u32_at(ZIMAGE_MAGIC + 4)?) as usize)
}

/// A zImage of `size` bytes at `path` announcing `length`: its release is its file's
/// (`vmlinuz-RELEASE`, as Debian's packages and `make install` name it).
fn zimage(path: &Path, size: usize, length: usize) -> Result<Image, String> {
    if size < length {
        return Err(format!("truncated: {size} of the {length} bytes its zImage header announces"));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name.strip_prefix("vmlinuz-").filter(|r| !r.is_empty()) {
        Some(release) => Ok(Image { release: release.to_string(), arch: Arch::Armhf }),
        None => Err("a 32-bit ARM zImage keeps its release compressed: name the file vmlinuz-RELEASE".into()),
    }
}

/// An arm64 `Image`: its length from the EFI stub's sections (the header's own image_size
/// counts the BSS the file does not hold), its release from the banner "Linux version …".
fn parse_arm64(bytes: &[u8]) -> Result<Image, String> {
    let u16_at = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let pe = u32_at(PE_OFFSET).filter(|&at| bytes.get(at..at + 4) == Some(b"PE\0\0"));
    let pe = pe.ok_or("an arm64 image without the EFI stub's PE header Debian's kernels have")?;
    let sections = u16_at(pe + 6).ok_or("its PE header is cut off")?;
    let table = pe + 24 + u16_at(pe + 20).ok_or("its PE header is cut off")?;
    let mut whole = 0;
    for i in 0..sections {
        let (size, at) = (u32_at(table + 40 * i + 16), u32_at(table + 40 * i + 20));
        whole = whole.max(at.zip(size).map(|(a, s)| a + s).ok_or("its PE section table is cut off")?);
    }
    if bytes.len() < whole {
        return Err(format!("truncated: {} of the {whole} bytes its sections announce", bytes.len()));
    }
    const BANNER: &[u8] = b"Linux version ";
    let at = bytes.windows(BANNER.len()).position(|w| w == BANNER).ok_or("an arm64 image with no version banner")?;
    let text = &bytes[at + BANNER.len()..];
    let text = &text[..text.iter().position(|&b| b == b' ' || b == 0).unwrap_or(text.len()).min(256)];
    let release = String::from_utf8_lossy(text).to_string();
    if release.is_empty() {
        return Err("its version banner names no release".into());
    }
    Ok(Image { release, arch: Arch::Arm64 })
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
        assert_eq!(parse(&img).unwrap(), Image { release: "6.1.0-56-rt-amd64".into(), arch: Arch::Amd64 });
        let mut signed = img.clone();
        signed.extend_from_slice(&[7; 1472]);
        assert!(parse(&signed).is_ok(), "a signature after the payload is not a fault");
    }

    #[test]
    fn a_cut_image_or_a_file_that_is_no_kernel_is_refused() {
        let img = image(100, "6.1.0-56-amd64 (x)");
        let cut = parse(&img[..img.len() - 1]).unwrap_err();
        assert!(cut.starts_with("truncated: 3135 of the 3136 bytes"), "{cut}");
        assert!(parse(b"#!/bin/sh\n").unwrap_err().contains("not a kernel image"));
        assert!(parse(&image(1, "")).unwrap_err().contains("no version"));
    }

    /// An arm64 Image as Debian's has it: the magic, an EFI stub's PE header with two sections
    /// ending at `end`, and the banner inside.
    fn arm64(end: u32, banner: &str) -> Vec<u8> {
        let mut b = vec![0u8; end as usize];
        b[ARM64_MAGIC..ARM64_MAGIC + 4].copy_from_slice(b"ARM\x64");
        b[PE_OFFSET..PE_OFFSET + 4].copy_from_slice(&0x40u32.to_le_bytes());
        b[0x40..0x44].copy_from_slice(b"PE\0\0");
        b[0x46..0x48].copy_from_slice(&2u16.to_le_bytes());
        b[0x54..0x56].copy_from_slice(&0u16.to_le_bytes());
        let table = 0x40 + 24;
        for (i, (at, size)) in [(0x200u32, 0x100u32), (0x300, end - 0x300)].into_iter().enumerate() {
            b[table + 40 * i + 16..table + 40 * i + 20].copy_from_slice(&size.to_le_bytes());
            b[table + 40 * i + 20..table + 40 * i + 24].copy_from_slice(&at.to_le_bytes());
        }
        b[0x400..0x400 + banner.len()].copy_from_slice(banner.as_bytes());
        b
    }

    #[test]
    fn an_arm64_image_is_known_by_its_magic_and_named_by_its_banner() {
        let img = arm64(0x1000, "Linux version 6.1.0-57-rt-arm64 (debian-kernel@lists.debian.org) (gcc-12");
        assert_eq!(parse(&img).unwrap(), Image { release: "6.1.0-57-rt-arm64".into(), arch: Arch::Arm64 });
        let cut = parse(&img[..0xfff]).unwrap_err();
        assert_eq!(cut, "truncated: 4095 of the 4096 bytes its sections announce");
        assert!(parse(&arm64(0x1000, "no banner")).unwrap_err().contains("no version banner"));
        let mut no_stub = img.clone();
        no_stub[0x40] = 0;
        assert!(parse(&no_stub).unwrap_err().contains("without the EFI stub"));
    }

    /// A zImage as Debian's armmp vmlinuz begins: the magic, start 0 and end `length`.
    fn zimage_bytes(length: u32, size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size];
        b[ZIMAGE_MAGIC..ZIMAGE_MAGIC + 4].copy_from_slice(&ZIMAGE_MAGIC_VALUE.to_le_bytes());
        b[ZIMAGE_MAGIC + 8..ZIMAGE_MAGIC + 12].copy_from_slice(&length.to_le_bytes());
        b
    }

    #[test]
    fn an_arm_zimage_is_known_by_its_magic_and_named_by_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("vmlinuz-6.1.0-50-rt-armmp");
        std::fs::write(&named, zimage_bytes(0x800, 0x800)).unwrap();
        assert_eq!(inspect(&named).unwrap(), Image { release: "6.1.0-50-rt-armmp".into(), arch: Arch::Armhf });
        std::fs::write(&named, zimage_bytes(0x800, 0x7ff)).unwrap();
        let cut = inspect(&named).unwrap_err().to_string();
        assert!(cut.ends_with("truncated: 2047 of the 2048 bytes its zImage header announces"), "{cut}");
        let unnamed = dir.path().join("zImage");
        std::fs::write(&unnamed, zimage_bytes(0x800, 0x800)).unwrap();
        let e = inspect(&unnamed).unwrap_err().to_string();
        assert!(e.contains("keeps its release compressed: name the file vmlinuz-RELEASE"), "{e}");
    }
}
