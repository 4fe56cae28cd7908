#!/usr/bin/env bash
# rtbench watch vs perf sched timehist, on the same run of the demonstration application
# (tests/apps/rtdemo.c: two FIFO-80 threads of a 1 ms period sharing CPU 0).
#
#   bench/vs-perf-sched.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s)
#   WATCH_ARGS='--explain-above 0' bench/vs-perf-sched.sh    more arguments for the watch
#
# Needs root, cc, python3, `perf` (Debian: apt-get install linux-perf; this script installs
# nothing) and a release build (`cargo build --release`; set RTBENCH to use another binary).
# Each round starts rtdemo, then `perf sched record` and `rtbench watch --pid` together on it for
# the same SECONDS, and compares per thread the wait from runnable to running: perf's "sch delay"
# column of `perf sched timehist` (each slice's wait after a wake-up or a preemption; printed in
# whole µs, truncated, so taken as the bucket's middle, +0.5 µs) against rtbench's stored
# histogram (HDR bucket upper bound), raw and as perf would print it (truncated to µs, +0.5).
# Per round: p50 and p99 of each tool and the ratio rtbench/perf on perf's µs grid; then each
# tool's A/A: its round value over its median of all rounds (what the application's own
# variation makes of a ratio). A ratio inside the A/A spread is agreement.
set -euo pipefail

ROUNDS=${1:-${ROUNDS:-5}}
SECS=${2:-${SECS:-10}}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
for tool in perf cc python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "vs-perf-sched: $tool not found" >&2; exit 2; }
done
[ -x "$RTBENCH" ] || { echo "vs-perf-sched: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
cc -O2 -Wall -pthread -o "$tmp/rtdemo" "$here/tests/apps/rtdemo.c"
db=$tmp/rtbench.db

echo "rtdemo share (2 x FIFO 80, 1 ms, CPU 0), $SECS s per round, $ROUNDS rounds; $(nproc) CPUs, kernel $(uname -r)"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..." >&2
    "$tmp/rtdemo" -D $((SECS + 3)) share >"$tmp/app.$r" &
    app=$!
    sleep 0.5
    perf sched record -q -o "$tmp/perf.$r.data" -- sleep "$SECS" >/dev/null 2>&1 &
    rec=$!
    "$RTBENCH" watch --pid "$app" -D "${SECS}s" --label "round-$r" --db "$db" ${WATCH_ARGS:-} >"$tmp/rb.$r" 2>&1
    wait "$rec"
    wait "$app"
    perf sched timehist -i "$tmp/perf.$r.data" -p "$app" >"$tmp/perf.$r.txt" 2>/dev/null
    for id in $(sed -n 's/.* run \([0-9]*\)$/\1/p' "$tmp/rb.$r"); do
        "$RTBENCH" export "$id" --db "$db" --format json >"$tmp/rb.$r.$id.json"
    done
    cut -d' ' -f1-3 /proc/loadavg >"$tmp/load.$r"
done

python3 - "$tmp" "$ROUNDS" <<'PY'
import glob, json, math, statistics, sys

tmp, rounds = sys.argv[1], int(sys.argv[2])

def nearest_rank(values, q):
    values = sorted(values)
    return values[max(1, math.ceil(q * len(values))) - 1]

rows = {}  # thread name -> list of (round, perf p50, perf p99, rb p50, rb p99, perf n, rb n)
for r in range(1, rounds + 1):
    waits = {}
    for line in open(f"{tmp}/perf.{r}.txt"):
        cols = line.split()
        if len(cols) < 6 or "[" not in cols[2] or not cols[0][0].isdigit():
            continue
        name = cols[2].split("[")[0]
        # sch delay, ms with three decimals: whole µs, truncated -> the bucket's middle.
        waits.setdefault(name, []).append(float(cols[4]) * 1000 + 0.5)
    for path in sorted(glob.glob(f"{tmp}/rb.{r}.*.json")):
        doc = json.load(open(path))
        name = doc["run"]["params"]["comm"]
        total = doc["total"]
        mine = waits.get(name, [])
        if not mine:
            continue
        # On perf's grid: whole µs, truncated, +0.5.
        grid = lambda ns: math.floor(ns / 1000) + 0.5
        rows.setdefault(name, []).append((r, nearest_rank(mine, 0.5), nearest_rank(mine, 0.99),
                                          grid(total["percentiles_ns"]["50"]), grid(total["percentiles_ns"]["99"]),
                                          len(mine), total["count"], open(f"{tmp}/load.{r}").read().strip(),
                                          total["percentiles_ns"]["50"] / 1000, total["percentiles_ns"]["99"] / 1000))

for name, rs in rows.items():
    print(f"\n{name}")
    print(f"{'round':>5} {'perf n':>7} {'rtb n':>7} {'perf p50':>9} {'rtb p50':>9} {'(raw)':>7} {'p50 x':>6} {'perf p99':>9} {'rtb p99':>9} {'(raw)':>7} {'p99 x':>6}  load")
    for r, pp50, pp99, rp50, rp99, pn, rn, load, raw50, raw99 in rs:
        print(f"{r:>5} {pn:>7} {rn:>7} {pp50:>9.1f} {rp50:>9.1f} {raw50:>7.2f} {rp50 / pp50:>6.3f} {pp99:>9.1f} {rp99:>9.1f} {raw99:>7.2f} {rp99 / pp99:>6.3f}  {load}")
    med = lambda i: statistics.median(x[i] for x in rs)
    spread = lambda i: (min(x[i] for x in rs) / med(i), max(x[i] for x in rs) / med(i))
    print(f"median      p50 perf {med(1):.2f}  rtbench {med(3):.2f}  ratio {med(3) / med(1):.3f}"
          f"   A/A perf {spread(1)[0]:.3f}-{spread(1)[1]:.3f}  rtbench {spread(3)[0]:.3f}-{spread(3)[1]:.3f}")
    print(f"median      p99 perf {med(2):.2f}  rtbench {med(4):.2f}  ratio {med(4) / med(2):.3f}"
          f"   A/A perf {spread(2)[0]:.3f}-{spread(2)[1]:.3f}  rtbench {spread(4)[0]:.3f}-{spread(4)[1]:.3f}")
PY
