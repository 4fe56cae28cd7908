#!/usr/bin/env bash
# rtbench sysbench side by side with LMbench 3, on this machine, pinned alike.
#
#   bench/vs-lmbench.sh LMBENCH_BIN_DIR
#
# LMBENCH_BIN_DIR holds unmodified LMbench binaries a developer built from LMbench's public
# source (e.g. its bin/x86_64-linux-gnu); this script builds nothing. For each operation that
# carries an LMbench name it runs LMbench's binary and `rtbench sysbench`, interleaved (the order
# alternates by round), ROUNDS times (default 3), and prints each side's median over the rounds
# and their ratio (rtbench / LMbench; for bandwidths too, so > 1 means rtbench measured more).
# Each round also runs LMbench a second time, at the other end of the round: the AA column is
# LMbench against itself (second / first), what this machine's noise alone makes of a ratio.
# A ratio outside 0.75-1.33 whose AA is outside too says the machine, not the operation.
#
#   CPU=1     pin both to CPU 1 (default: the last online CPU); CPU=none: both unpinned,
#             LMbench's own default placement (rtbench sysbench --cpu none)
#   ONLY=a,b  only these rtbench operations (default: every one with an LMbench counterpart)
#   RTBENCH   the rtbench binary (default: target/release/rtbench)
#   ENOUGH    LMbench's time per repetition in µs (default 20000: rtbench's own minimum
#             repetition, so both time alike); TIMING_O and LOOP_O are 0, as LMbench's suite
#             sets them without a config. Left to calibrate itself, LMbench took over a minute
#             per benchmark on a loaded machine here and chose 1 s repetitions.
# LMbench's lat_fs (create-*, delete-*) takes minutes here; ONLY can leave it out.
#
# The fork rows' numbers grow with the process they fork from: beside each, the mappings of
# LMbench's lat_proc (read from its /proc/PID/maps while it runs) and of rtbench's helper (as
# rtbench's table states them), and under the table the libraries each mapped.
#
# LMbench's fork+exec runs /tmp/hello, as its own scripts set up: the script copies
# LMBENCH_BIN_DIR/hello there (and removes it afterwards if it put it there).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] && [ -x "$1/lat_syscall" ] || { echo "usage: bench/vs-lmbench.sh LMBENCH_BIN_DIR (with lat_syscall, lat_proc, ...)" >&2; exit 2; }
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "vs-lmbench: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
cpu=${CPU:-$(( $(nproc) - 1 ))}
export ENOUGH=${ENOUGH:-20000} TIMING_O=0 LOOP_O=0
tmp=$(mktemp -d)
hello_mine=
if [ ! -e /tmp/hello ]; then cp "$1/hello" /tmp/hello; hello_mine=1; fi
trap 'rm -rf "$tmp"; [ -z "$hello_mine" ] || rm -f /tmp/hello' EXIT
# The file LMbench's stat, open, page-fault, mmap and reread benchmarks use: 16 MB, cached,
# written as LMbench's own suite writes it (lmdd: 8 KB blocks, fsync) and as rtbench writes its
# own. How it is written decides its page-cache folios, and so how many pages one fault maps.
dd if=/dev/zero of="$tmp/file" bs=8k count=2048 conv=fsync status=none
cat "$tmp/file" >/dev/null
mkdir "$tmp/fs"
python3 - "$1" "$RTBENCH" "$cpu" "${ROUNDS:-3}" "${ONLY:-}" "$tmp" <<'PY'
import os, re, statistics, subprocess, sys, time
lm, rtbench, cpu, rounds, only, tmp = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
f = f"{tmp}/file"
num = r"([\d.]+)"
# rtbench operation: (LMbench command, what to read from its output, per-value conversion).
# Latencies in µs, bandwidths in MB/s. None: derived from other rows.
OPS = {
    "null-call": (["lat_syscall", "null"], rf"Simple syscall: {num}"),
    "null-read": (["lat_syscall", "read"], rf"Simple read: {num}"),
    "null-write": (["lat_syscall", "write"], rf"Simple write: {num}"),
    "null-io": None,  # LMbench's summary: the mean of read and write
    "stat": (["lat_syscall", "stat", f], rf"Simple stat: {num}"),
    "open-close": (["lat_syscall", "open", f], rf"Simple open/close: {num}"),
    "select-tcp": (["lat_select", "-n", "100", "tcp"], rf"Select on 100 tcp fd's: {num}"),
    "sig-install": (["lat_sig", "install"], rf"Signal handler installation: {num}"),
    "sig-catch": (["lat_sig", "catch"], rf"Signal handler overhead: {num}"),
    "fork-exit": (["lat_proc", "fork"], rf"Process fork\+exit: {num}"),
    "fork-exec": (["lat_proc", "exec"], rf"Process fork\+execve: {num}"),
    "fork-sh": (["lat_proc", "shell"], rf"Process fork\+/bin/sh -c: {num}"),
    "ctx-2p-0k": (["lat_ctx", "-s", "0", "2"], rf"\n2 {num}"),
    "ctx-2p-16k": (["lat_ctx", "-s", "16", "2"], rf"\n2 {num}"),
    "ctx-2p-64k": (["lat_ctx", "-s", "64", "2"], rf"\n2 {num}"),
    "ctx-8p-16k": (["lat_ctx", "-s", "16", "8"], rf"\n8 {num}"),
    "ctx-8p-64k": (["lat_ctx", "-s", "64", "8"], rf"\n8 {num}"),
    "ctx-16p-16k": (["lat_ctx", "-s", "16", "16"], rf"\n16 {num}"),
    "ctx-16p-64k": (["lat_ctx", "-s", "64", "16"], rf"\n16 {num}"),
    "lat-pipe": (["lat_pipe"], rf"Pipe latency: {num}"),
    "lat-unix": (["lat_unix"], rf"AF_UNIX sock stream latency: {num}"),
    "lat-udp": (["lat_udp", "localhost"], rf"UDP latency using localhost: {num}"),
    "lat-tcp": (["lat_tcp", "localhost"], rf"TCP latency using localhost: {num}"),
    "tcp-setup": (["lat_connect", "localhost"], rf"TCP/IP connection cost to localhost: {num}"),
    "create-0k": (["lat_fs", f"{tmp}/fs"], r"\n?0k\t\d+\t(\d+)"),
    "delete-0k": (["lat_fs", f"{tmp}/fs"], r"\n?0k\t\d+\t\d+\t(\d+)"),
    "create-10k": (["lat_fs", f"{tmp}/fs"], r"\n?10k\t\d+\t(\d+)"),
    "delete-10k": (["lat_fs", f"{tmp}/fs"], r"\n?10k\t\d+\t\d+\t(\d+)"),
    "mmap": (["lat_mmap", "16m", f], rf"16\.\d+ {num}"),
    "page-fault": (["lat_pagefault", f], rf"Pagefaults on \S+: {num}"),
    "prot-fault": (["lat_sig", "prot", f], rf"Protection fault: {num}"),
    "select-file": (["lat_select", "-n", "100", "file"], rf"Select on 100 fd's: {num}"),
    "bw-pipe": (["bw_pipe"], rf"Pipe bandwidth: {num}"),
    "bw-unix": (["bw_unix"], rf"AF_UNIX sock stream bandwidth: {num}"),
    "bw-tcp": (["bw_tcp", "-m", "64k", "localhost"], rf"\S+ {num} MB/sec"),
    "bw-file-reread": (["bw_file_rd", "16m", "io_only", f], rf"16\.\d+ {num}"),
    "bw-mmap-reread": (["bw_mmap_rd", "16m", "mmap_only", f], rf"16\.\d+ {num}"),
    "bw-bcopy-libc": (["bw_mem", "16m", "bcopy"], rf"16\.\d+ {num}"),
    "bw-bcopy-hand": (["bw_mem", "16m", "fcp"], rf"16\.\d+ {num}"),
    "bw-mem-read": (["bw_mem", "16m", "frd"], rf"16\.\d+ {num}"),
    "bw-mem-write": (["bw_mem", "16m", "fwr"], rf"16\.\d+ {num}"),
}
# rtbench operations that measure something else on purpose, under a name of their own (their
# help says how they differ): shown beside LMbench's nearest, not held to the goal's range.
DIFFERS = {"tcp-setup"}
RATES = {"create-0k", "delete-0k", "create-10k", "delete-10k"}  # lat_fs prints files per second
SERVERS = {"lat_udp", "lat_tcp", "lat_connect", "bw_tcp"}
ops = [o for o in OPS if not only or o in only.split(",")]
pin = [] if cpu == "none" else ["taskset", "-c", cpu]

def lmbench(op, outputs):
    """LMbench's value for `op`; `outputs` keeps this round's output per command (lat_fs once)."""
    if OPS[op] is None:
        return (lmbench("null-read", outputs) + lmbench("null-write", outputs)) / 2
    argv, pattern = OPS[op]
    m = None
    for _ in range(2):  # once more when a run says nothing (seen once from lat_sig prot here)
        if tuple(argv) not in outputs:
            outputs[tuple(argv)] = run(argv)
        m = re.search(pattern, "\n" + outputs[tuple(argv)])
        if m:
            break
        outputs.pop(tuple(argv))
    if not m:
        # lat_ctx prints nothing when its result less its overhead is not positive (seen
        # under load here): that round has no LMbench value for the operation.
        print(f"vs-lmbench: no result from {' '.join(argv)} this round", file=sys.stderr)
        return float("nan")
    v = float(m.group(1))
    return 1e6 / v if op in RATES else v

# What each side's fork rows forked from: LMbench's lat_proc as read while it ran, rtbench's
# helper as rtbench's table says; (mappings, "N mappings: libraries").
IMAGES = {}

def image(maps):
    libs = []
    for line in maps.splitlines():
        f = line.split()
        name = f[5].rsplit("/", 1)[-1] if len(f) > 5 else ""
        if ".so" in name and name not in libs:
            libs.append(name)
    n = len(maps.splitlines())
    return n, f"{n} mappings: {' '.join(libs)}"

def watched(cmd):
    """Runs lat_proc, reading its process image once it has started (after taskset's exec)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(50):
        time.sleep(0.02)
        try:
            maps = open(f"/proc/{p.pid}/maps").read()
        except OSError:
            break
        if "/lat_proc" in maps:
            IMAGES["lat_proc"] = image(maps)
            break
    return p.communicate(timeout=300)[0]

def run(argv):
    server = argv[0] in SERVERS
    if server:
        subprocess.run(pin + [f"{lm}/{argv[0]}", "-s"], check=True)
        time.sleep(0.2)
    cmd = pin + [f"{lm}/{argv[0]}"] + argv[1:]
    try:
        if argv[0] == "lat_proc":
            return watched(cmd)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    finally:
        if server:
            subprocess.run([f"{lm}/{argv[0]}", "-S", "localhost"], capture_output=True)
    return out.stdout + out.stderr

def rtbench_pass():
    out = subprocess.run([rtbench, "sysbench", "--only", ",".join(ops), "--cpu", cpu, "--db", f"{tmp}/db"],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] in OPS:
            rows[f[0]] = float(f[1])
            m = re.search(r"  ((\d+) mappings: .*)$", line)
            if m:
                IMAGES["helper"] = (int(m.group(2)), m.group(1))
    return rows

def lmbench_pass(into):
    outputs = {}
    for o in ops:
        into[o].append(lmbench(o, outputs))

lm_vals, rb_vals, aa_vals = ({o: [] for o in ops} for _ in range(3))
loads = []
for r in range(rounds):
    order = ["lm", "rb", "aa"] if r % 2 == 0 else ["aa", "rb", "lm"]
    for side in order:
        if side == "rb":
            for o, v in rtbench_pass().items():
                rb_vals[o].append(v)
        else:
            lmbench_pass(lm_vals if side == "lm" else aa_vals)
    loads.append(open("/proc/loadavg").read().split()[0])
    print(f"round {r + 1} of {rounds} done", file=sys.stderr)
where = "unpinned" if cpu == "none" else f"both pinned to CPU {cpu}"
print(f"rtbench sysbench vs LMbench 3, {where}; median of {rounds} interleaved rounds (µs; bw-* MB/s)")
print(f"load average (1 min) after each round: {', '.join(loads)}; LMbench's ENOUGH={os.environ['ENOUGH']} µs")
print(f"{'operation':<16} {'LMbench':>10} {'rtbench':>10} {'ratio':>7} {'AA':>6}  {'mappings':>16}")
def within(x):
    return 0.75 <= x <= 1.33
def mapped(side):
    return str(IMAGES[side][0]) if side in IMAGES else "?"
for o in ops:
    def med(v):
        got = [x for x in v[o] if x == x]  # rounds that gave a value
        return statistics.median(got) if got else float("nan")
    a, b, aa = med(lm_vals), med(rb_vals), med(aa_vals)
    ratio, control = (b / a, aa / a) if a else (float("nan"), float("nan"))
    if o in DIFFERS:
        flag = "  (differs by design: see its help)"
    else:
        flag = "" if within(ratio) else ("  * (AA too: noise)" if not within(control) else "  *")
    maps = f"lat_proc {mapped('lat_proc')} / helper {mapped('helper')}" if o.startswith("fork-") else ""
    print(f"{o:<16} {a:>10.4f} {b:>10.4f} {ratio:>7.2f} {control:>6.2f}  {maps:>16}{flag}")
print("* outside 0.75-1.33; AA: LMbench's second run of each round against its first")
if any(o.startswith("fork-") for o in ops):
    for side, who in (("lat_proc", "LMbench's lat_proc"), ("helper", "rtbench's helper")):
        print(f"{who}: {IMAGES[side][1] if side in IMAGES else 'not read'}")
PY
