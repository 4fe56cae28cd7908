#!/usr/bin/env bash
# rtbench sysbench against independent reference numbers on this machine: a plain C program
# (bench/ref/sysref.c, built here with cc -O2) for null call, stat, signal catch, fork+exit,
# pipe and TCP round trips, 2p/0K context switch and memory read bandwidth, and
# `perf bench sched pipe` where the perf tool works. Prints each operation's rtbench median,
# the reference and the ratio.
#
#   bench/sysbench-reference.sh
#
# Needs cc and a release build (`cargo build --release`; RTBENCH for another binary).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "sysbench-reference: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
command -v cc >/dev/null || { echo "sysbench-reference: needs a C compiler (cc)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$(( $(nproc) - 1 ))
cc -O2 -o "$tmp/sysref" "$here/bench/ref/sysref.c"
taskset -c "$cpu" "$tmp/sysref" >"$tmp/ref.txt"
ops=$(cut -d' ' -f1 "$tmp/ref.txt" | paste -sd,)
"$RTBENCH" sysbench --only "$ops" --cpu "$cpu" --db "$tmp/db" >"$tmp/rb.txt"
python3 - "$tmp/ref.txt" "$tmp/rb.txt" <<'PY'
import sys
ref = {l.split()[0]: (float(l.split()[1]), l.split()[2]) for l in open(sys.argv[1])}
rb = {}
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) == 5 and f[0] in ref:
        rb[f[0]] = float(f[1])
print(f"{'operation':<14} {'rtbench':>10} {'reference':>10} {'unit':>5} {'ratio':>7}")
for op, (v, unit) in ref.items():
    r = rb.get(op)
    print(f"{op:<14} {r if r is not None else float('nan'):>10.4f} {v:>10.4f} {unit:>5} {r / v if r else float('nan'):>7.2f}")
PY
if command -v perf >/dev/null && taskset -c "$cpu" perf bench sched pipe -l 100000 >"$tmp/perf.txt" 2>&1; then
    echo; echo "perf bench sched pipe on CPU $cpu (two processes, a round trip through pipes = 2 switches):"; grep -E "usecs/op" "$tmp/perf.txt"
fi
