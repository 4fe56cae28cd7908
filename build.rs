//! Compiles rtbench's process-creation helper (helper/spawn.c), which `rtbench sysbench`
//! embeds and forks from. Without a C compiler the build goes on and those three operations
//! say at run time that rtbench was built without it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=helper/spawn.c");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("rtbench-spawn");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let compile = |libs: &[&str]| {
        Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(&out)
            .arg("helper/spawn.c")
            .args(libs)
            .status()
            .is_ok_and(|s| s.success())
    };
    // LMbench's link line: its process image (libm, libtirpc and what that brings) is what
    // its fork+exit and fork+exec price. Without libtirpc's development files, libc alone:
    // those rows then come out at about half LMbench's.
    let lmbench_image = compile(&["-Wl,--no-as-needed", "-lm", "-ltirpc"]);
    if !lmbench_image {
        println!("cargo:warning=could not link helper/spawn.c with libtirpc (install libtirpc-dev): sysbench's fork-* rows will not be LMbench's process image");
    }
    println!("cargo:rustc-env=RTBENCH_SPAWN_IMAGE={}", if lmbench_image { "lmbench" } else { "libc" });
    let built = lmbench_image || compile(&[]);
    if !built {
        println!("cargo:warning=could not compile helper/spawn.c with '{cc}': sysbench's fork-exit, fork-exec and fork-sh will be unavailable");
        std::fs::write(&out, b"").expect("OUT_DIR is writable");
    }
}
