#!/usr/bin/env bash
# What `--split` costs the measurement: `timer` with and without `--split`, interleaved rounds,
# idle machine. The split's BPF program runs on the measured CPU in the kernel (once per
# sample: the timer's expiry on the way to waking the thread), and the runner pairs every
# sample off that CPU; this shows what that adds to the thread latency.
#
#   bench/split-overhead.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s per variant)
#   AA=1 bench/split-overhead.sh ...                  the tool against itself: both variants plain,
#                                                     so the ratios show this machine's noise
#   CPU=0 PRIO=99 bench/split-overhead.sh ...         another CPU or priority, for a shared machine
#                                                     whose CPU 1 others hold with FIFO 95 loads
#   SPLIT_MODE=aggregate bench/split-overhead.sh ...  the split in that mode (auto, per-sample,
#                                                     aggregate; default auto, per-sample here)
#
# Needs root (tracing, FIFO priority), python3 and a release build (`cargo build --release`; set
# RTBENCH for another binary). Each round runs both variants, alternating which goes first, one
# thread on CPU 1 at FIFO 95 every 1 ms like bench/vs-cyclictest.sh, and prints each variant's
# mean and p99 of the thread latency (JSON export) and the split's matched fraction; then the
# medians and the ratios split / plain. Then, with bpftool (scripts/setup.sh --bench), one more
# split run with the kernel's BPF statistics on (kernel.bpf_stats_enabled, put back after): the
# program's own run time per second, which bounds what it adds to each sample without this
# machine's noise in the way.
set -euo pipefail

ROUNDS=${1:-5}
CPU=${CPU:-1}
PRIO=${PRIO:-95}
SECS=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "split-overhead: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "split-overhead: tracing needs root" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db

run() { # variant round
    local extra=()
    [ "$1" = split ] && [ "${AA:-0}" != 1 ] && extra=(--split --split-mode "${SPLIT_MODE:-auto}")
    "$RTBENCH" timer -t 1 -a "$CPU" -p "$PRIO" -i 1000 -D "${SECS}s" -q --db "$db" "${extra[@]}" >"$tmp/$1.$2.out" 2>&1
    "$RTBENCH" export "$("$RTBENCH" runs --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
        --db "$db" --format json >"$tmp/$1.$2.json"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "settings: timer -t 1 -a $CPU -p $PRIO -i 1000, ${SECS} s per run, ${ROUNDS} rounds; with and without --split (--split-mode ${SPLIT_MODE:-auto})"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..."
    if [ $((r % 2)) -eq 1 ]; then run plain "$r"; run split "$r"; else run split "$r"; run plain "$r"; fi
done

python3 - "$tmp" "$ROUNDS" <<'PY'
import json, os, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def get(v, r):
    d = json.load(open(f"{tmp}/{v}.{r}.json"))
    t, irq = d["total"], d["threads"][0].get("irq")
    matched = irq["count"] / (irq["count"] + irq["unmatched"]) if irq else None
    return t["mean_ns"] / 1000, t["percentiles_ns"]["99"] / 1000, matched
rows = [(r, get("plain", r), get("split", r)) for r in range(1, rounds + 1)]
print("\nall values in µs\nround  plain_avg plain_p99   split_avg  split_p99  matched")
for r, p, s in rows:
    aa = os.environ.get("AA") == "1"
    m = "(A/A: both plain)" if aa else "(not split!)" if s[2] is None else f"{100 * s[2]:.2f} %"
    print(f"{r:>5} {p[0]:>10.2f} {p[1]:>9.2f} {s[0]:>11.2f} {s[1]:>10.2f}  {m}")
med = lambda i, k: statistics.median(x[i][k] for x in rows)
print(f"  med {med(1,0):>10.2f} {med(1,1):>9.2f} {med(2,0):>11.2f} {med(2,1):>10.2f}")
print(f"\nratio split/plain  avg: {med(2,0)/med(1,0):.3f}  p99: {med(2,1)/med(1,1):.3f}")
print(f"load average at the end: {open('/proc/loadavg').read().split()[:3]}")
PY

# The program's own cost, as the kernel times it: its run time over the middle of a split run,
# per second and per sample (1 kHz, one thread). Every expiry on the machine runs it; only
# rtbench's take the long way, so this is an upper bound on its part of a sample's latency.
[ "${AA:-0}" = 1 ] && exit 0
command -v bpftool >/dev/null || { echo "(no bpftool: the program's own run time not measured; scripts/setup.sh --bench)"; exit 0; }
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$was" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled
"$RTBENCH" timer -t 1 -a "$CPU" -p "$PRIO" -i 1000 -D 12s -q --db "$db" --split >"$tmp/cost.out" 2>&1 &
sleep 3
bpftool prog show name rtbench_split --json >"$tmp/cost.0.json"
sleep 6
bpftool prog show name rtbench_split --json >"$tmp/cost.1.json"
wait
echo "$was" >/proc/sys/kernel/bpf_stats_enabled
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def one(i):
    d = json.load(open(f"{tmp}/cost.{i}.json"))
    d = d[0] if isinstance(d, list) else d
    return d["run_cnt"], d["run_time_ns"]
(c0, t0), (c1, t1) = one(0), one(1)
runs, ns = (c1 - c0) / 6, (t1 - t0) / 6
print(f"\nthe split's program (kernel BPF statistics, 6 s of a split run): {runs:.0f} runs/s, "
      f"{ns / max(runs, 1):.0f} ns per run, {ns / 1000:.0f} ns of run time per sample (1000 samples/s)")
PY
