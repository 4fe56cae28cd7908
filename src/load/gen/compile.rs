//! `compile`: a parallel C build in a loop (`make -jN`), over a source tree rtbench writes, or a
//! real kernel tree (`--kernel-tree`) as the seed built.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::load::{on_path, GeneratorInfo, LoadOptions, WorkerCtx};

pub const INFO: GeneratorInfo = GeneratorInfo {
    name: "compile",
    help: "make -jN of a generated C tree (or --kernel-tree DIR) in a loop",
    stresses: "CPU, caches, fork/exec, page cache",
    unit: "builds",
    cpu_bound: true,
    nice: 0,
    supported,
    work,
};

fn supported(o: &LoadOptions) -> Result<(), String> {
    for tool in ["make", "cc"] {
        if !on_path(tool) {
            return Err(format!("'{tool}' is not installed (Debian packages make, gcc)"));
        }
    }
    match &o.kernel_tree {
        Some(t) if !Path::new(t).join("Makefile").is_file() => {
            Err(format!("--kernel-tree '{t}' is not a source tree (no Makefile)"))
        }
        _ => Ok(()),
    }
}

/// Translation units per job: enough that N compilers never wait on each other.
const UNITS_PER_JOB: usize = 4;

fn work(ctx: &WorkerCtx) -> Result<()> {
    let jobs = ctx.opts.jobs.max(1);
    let tree = match &ctx.opts.kernel_tree {
        Some(t) => Path::new(t).to_path_buf(),
        None => {
            write_tree(&ctx.scratch, jobs * UNITS_PER_JOB)?;
            ctx.scratch.clone()
        }
    };
    let make = |args: &[&str]| -> Result<bool> {
        let mut cmd = std::process::Command::new("make");
        cmd.arg("-s").arg(format!("-j{jobs}")).args(args).current_dir(&tree);
        ctx.run_child("make", &mut cmd)
    };
    while ctx.keep_going() {
        let built = make(&[])?;
        make(&["clean"])?;
        if built {
            ctx.iteration();
        } else {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    Ok(())
}

/// Writes `units` C files that each take the compiler a fraction of a second, and a Makefile.
fn write_tree(dir: &Path, units: usize) -> Result<()> {
    for u in 0..units {
        let mut src = String::from("#include <stdint.h>\n");
        for f in 0..24 {
            let _ = write!(
                src,
                "uint64_t f{u}_{f}(uint64_t x, const uint64_t *v, int n) {{\n\
                 \tuint64_t a = x ^ {k}u;\n\
                 \tfor (int i = 0; i < n; i++) {{\n\
                 \t\tswitch ((a + v[i]) & 7) {{\n\
                 \t\tcase 0: a = a * {k}u + v[i]; break;\n\
                 \t\tcase 1: a ^= (a << 7) | (v[i] >> 3); break;\n\
                 \t\tcase 2: a += v[(i * 3) % n] * {f}u; break;\n\
                 \t\tcase 3: a = (a >> 11) ^ (a << 5) ^ {u}u; break;\n\
                 \t\tdefault: a = a * 31u + (uint64_t)i; break;\n\
                 \t\t}}\n\
                 \t\tif (a % {m}u == 0) a += f{u}_{g}(a, v, n / 2 + 1);\n\
                 \t}}\n\
                 \treturn a;\n}}\n",
                k = 2_654_435_761u64 + (u * 24 + f) as u64,
                m = 97 + f,
                g = f.saturating_sub(1),
            );
        }
        std::fs::write(dir.join(format!("unit{u}.c")), src)?;
    }
    let makefile = "SRCS := $(wildcard *.c)\nOBJS := $(SRCS:.c=.o)\nall: $(OBJS)\n%.o: %.c\n\t$(CC) -O2 -c $< -o $@\nclean:\n\trm -f *.o\n";
    std::fs::write(dir.join("Makefile"), makefile)?;
    Ok(())
}
