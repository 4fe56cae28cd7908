//! Compiles rtbench's process-creation helper (helper/spawn.c), which `rtbench sysbench`
//! embeds and forks from. Without a C compiler the build goes on and those three operations
//! say at run time that rtbench was built without it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=helper/spawn.c");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("rtbench-spawn");
    let cc = compiler();
    let compile = |libs: &[&str]| {
        Command::new(&cc)
            .args(["-O", "-o"])
            .arg(&out)
            .arg("helper/spawn.c")
            .args(libs)
            .status()
            .is_ok_and(|s| s.success())
    };
    // LMbench's own link line for lat_proc (its scripts/build: `-O`, LDLIBS `-lm`, and
    // `-ltirpc` where glibc no longer has Sun RPC), with no flag of ours: the toolchain's
    // defaults decide what stays mapped, as they decide for LMbench built on the same machine.
    // A toolchain that links --as-needed (Debian's and Ubuntu's gcc) drops both unused
    // libraries, and the helper, like lat_proc, maps libc alone.
    let tirpc = compile(&["-lm", "-ltirpc"]);
    let built = tirpc || compile(&["-lm"]);
    // Read by sysbench's fork rows, which mark themselves when it is "missing".
    println!("cargo:rustc-env=RTBENCH_SPAWN_TIRPC={}", if tirpc { "linked" } else { "missing" });
    if built && !tirpc {
        println!("cargo:warning=could not link helper/spawn.c with -ltirpc (install libtirpc-dev): sysbench's fork-* rows will be marked as linked without LMbench's -ltirpc");
    }
    if !built {
        println!("cargo:warning=could not compile helper/spawn.c with '{cc}': sysbench's fork-exit, fork-exec and fork-sh will be unavailable");
        std::fs::write(&out, b"").expect("OUT_DIR is writable");
    }
}

/// The C compiler for the target rtbench is built for, named as the cc crate names it: a cross
/// build (`--target aarch64-unknown-linux-gnu`) reads `CC_aarch64_unknown_linux_gnu` or
/// `TARGET_CC`, and never the host's `cc`, which would embed a helper the target cannot run.
fn compiler() -> String {
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    let host = std::env::var("HOST").expect("cargo sets HOST");
    let own = format!("CC_{}", target.replace('-', "_"));
    for name in [own.as_str(), "TARGET_CC", "CC"] {
        println!("cargo:rerun-if-env-changed={name}");
    }
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if target == host {
        return set(&own).or_else(|| set("CC")).unwrap_or_else(|| "cc".to_string());
    }
    // Debian's cross compilers are named after the GNU triple: aarch64-linux-gnu-gcc,
    // arm-linux-gnueabihf-gcc.
    set(&own).or_else(|| set("TARGET_CC")).unwrap_or_else(|| {
        let gnu = target.replace("-unknown-", "-").replace("armv7-", "arm-");
        format!("{gnu}-gcc")
    })
}
