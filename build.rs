//! Compiles rtbench's process-creation helper (helper/spawn.c), which `rtbench sysbench`
//! embeds and forks from. Without a C compiler the build goes on and those three operations
//! say at run time that rtbench was built without it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=helper/spawn.c");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("rtbench-spawn");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let built =
        Command::new(&cc).args(["-O2", "-o"]).arg(&out).arg("helper/spawn.c").status().is_ok_and(|s| s.success());
    if !built {
        println!("cargo:warning=could not compile helper/spawn.c with '{cc}': sysbench's fork-exit, fork-exec and fork-sh will be unavailable");
        std::fs::write(&out, b"").expect("OUT_DIR is writable");
    }
}
