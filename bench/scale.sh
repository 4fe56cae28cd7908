#!/usr/bin/env bash
# How far one housekeeping CPU carries the split and the classification (issue 38): the cost of
# each stage, measured on this machine, and from them the largest CPUs × rate whose records one
# housekeeping CPU takes in at ≤ 10 % of its time.
#
#   bench/scale.sh [SECONDS]                 (default: 15 s per run, 7 runs)
#   CPU=1 bench/scale.sh                     the measured CPU (the collector runs on the others)
#   RATE=10000 bench/scale.sh                the per-CPU timer rate the sum is made for (10 kHz)
#   RECORD_NS=12.3 bench/scale.sh            the probe's record cost as given, not benchmarked
#
# What falls on the housekeeping CPU is the collector's CPU time (schedstat of its threads,
# between two looks at each run), in four kinds, each fitted from runs that differ in one thing:
#   per sample   the split's main thread and reader per timer sample: runs at 20 000 and 2 000
#                samples/s (2 threads, 100 and 1000 µs)
#   per thread   the main thread per measured thread a second (its checkpoint: statistics,
#                store): 2 and 16 threads at the same 20 000 samples/s
#   per event    the classification's reader per BPF record, and its main thread per gap:
#                `noise --classify` on an idle CPU, and on the same CPU preempted every 50 µs
#                by a FIFO 99 timer (tens of thousands of events and gaps a second)
#   fixed        what is left a second whatever the size: polling, /proc reads, the store
# The split runs in its aggregate mode (--split-mode; the mode a run past the budget
# takes: histograms in the kernel, records only past their bound) and, for comparison, one
# per-sample run. The measured CPU's own costs are shown too (the probe's record by
# `cargo bench --bench record`; the BPF programs per run from the kernel's BPF statistics,
# kernel.bpf_stats_enabled, put back after) but are not the housekeeping CPU's.
# Per measured CPU busy at RATE with E classification events and G gaps a second (E, G as on
# the idle CPU here):
#   L = RATE × sample + thread + E × event + G × gap;   n = floor((1e8 - fixed) / L)
#   sustained = n × RATE samples/s at (n × L + fixed) / 1e7 % of one CPU.
#
# Needs root (tracing, FIFO priority), python3 and a release build (`cargo build --release`; set
# RTBENCH for another binary). The last line reads `sustained: N samples/s at P % of one CPU`.
set -euo pipefail

SECS=${1:-15}
CPU=${CPU:-1}
RATE=${RATE:-10000}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "scale: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "scale: tracing needs root" >&2; exit 2; }
[ "$SECS" -ge 12 ] 2>/dev/null || { echo "scale: SECONDS must be a whole number ≥ 12, not '$SECS'" >&2; exit 2; }

tmp=$(mktemp -d)
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$was" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db

# snap PID FILE: every thread's CPU time (ns, schedstat) with its name and policy, and the
# run time and count of every BPF program the process has attached.
snap() {
    python3 "$here/bench/snap.py" "$1" >"$2"
}

# measure NAME ARGS...: the run in the background, snapshots 3 s in and 5 s before its end,
# then its JSON export.
measure() {
    local name=$1
    shift
    "$RTBENCH" "$@" -D "${SECS}s" -q --db "$db" >"$tmp/$name.out" 2>&1 &
    local pid=$!
    sleep 3
    snap "$pid" "$tmp/$name.0.json" || { wait "$pid"; cat "$tmp/$name.out" >&2; exit 1; }
    sleep $((SECS - 8))
    snap "$pid" "$tmp/$name.1.json" || { wait "$pid"; cat "$tmp/$name.out" >&2; echo "scale: the run ended before its second look" >&2; exit 1; }
    wait "$pid" || { cat "$tmp/$name.out" >&2; exit 1; }
    "$RTBENCH" export "$("$RTBENCH" runs --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
        --db "$db" --format json >"$tmp/$name.json"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; kernel $(uname -r)"
if [ -z "${RECORD_NS:-}" ]; then
    echo "record: cargo bench --bench record -- recorder_record ..."
    (cd "$here" && nice cargo bench -q --bench record -- recorder_record --noplot) >"$tmp/record.out" 2>&1 ||
        { cat "$tmp/record.out" >&2; exit 1; }
    RECORD_NS=$(python3 - "$tmp/record.out" <<'PY'
import re, sys
m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) ", open(sys.argv[1]).read())
scale = {"ps": 1e-3, "ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6}[m.group(2)]
print(f"{float(m.group(1)) * scale / 1000:.2f}")  # a block is 1000 samples
PY
)
fi
echo 1 >/proc/sys/kernel/bpf_stats_enabled
split() { # NAME MODE THREADS INTERVAL
    echo "split: timer -t $3 -a $CPU -i $4 --split ($2), ${SECS} s ..."
    measure "$1" timer -t "$3" -a "$CPU" -i "$4" --split --split-mode "$2"
}
split per-sample per-sample 2 100
split agg-2x100 aggregate 2 100
split agg-16x800 aggregate 16 800
split agg-2x1000 aggregate 2 1000
echo "classify: noise -a $CPU --classify, ${SECS} s, idle CPU ..."
measure classify-idle noise -a "$CPU" --classify -p 90
echo "classify: the same, preempted every 50 µs by a FIFO 99 timer ..."
"$RTBENCH" timer -a "$CPU" -i 50 -p 99 -D "$((SECS + 2))s" -q --db "$tmp/preempt.db" >/dev/null 2>&1 &
preempt=$!
sleep 1
measure classify-busy noise -a "$CPU" --classify -p 90
wait "$preempt" || true
echo "$was" >/proc/sys/kernel/bpf_stats_enabled

python3 "$here/bench/scale_model.py" "$tmp" "$RECORD_NS" "$RATE"
