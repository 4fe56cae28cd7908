//! Mounting the kernel's pseudo file systems rtbench reads and writes.

use std::ffi::CString;
use std::io;

use super::check;

/// Mounts a file system of `fstype` (with no device) at `target`.
pub fn mount_pseudo(fstype: &str, target: &str) -> io::Result<()> {
    let (fs, dir) = (CString::new(fstype)?, CString::new(target)?);
    let none = CString::new("none")?;
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call; no data.
    check(unsafe { libc::mount(none.as_ptr(), dir.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) })
}

/// Unmounts `target`.
pub fn unmount(target: &str) -> io::Result<()> {
    let dir = CString::new(target)?;
    // SAFETY: a valid NUL-terminated path.
    check(unsafe { libc::umount2(dir.as_ptr(), 0) })
}
