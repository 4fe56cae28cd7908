#!/usr/bin/env bash
# `rtbench deadline` against rt-tests' cyclicdeadline, same settings, interleaved rounds, each
# tool also against itself (A/A): one SCHED_DEADLINE thread, period = deadline = INTERVAL µs,
# runtime 60 % of it (cyclicdeadline's rule; below 2 ms of runtime cyclicdeadline needs HRTICK
# in debugfs, so the default interval is 4 ms).
#
#   bench/vs-cyclicdeadline.sh [ROUNDS] [SECONDS] [INTERVAL_US]   (defaults: 3, 10, 4000)
#
# cyclicdeadline keeps whole µs of CLOCK_MONOTONIC_RAW and reports min, avg and max; rtbench's
# are given in ns and truncated to whole µs per sample as its are (its 1-µs histogram).
set -euo pipefail
ROUNDS=${1:-3}
SECS=${2:-10}
INTERVAL=${3:-4000}
RTBENCH=${RTBENCH:-target/release/rtbench}
command -v cyclicdeadline >/dev/null || { echo "vs-cyclicdeadline: cyclicdeadline not found (apt-get install rt-tests)" >&2; exit 2; }
[ -x "$RTBENCH" ] || { echo "vs-cyclicdeadline: build first (cargo build --release)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ours() { # out
    "$RTBENCH" deadline -t 1 -i "$INTERVAL" -D "${SECS}s" --db "$tmp/s.db" --label d >/dev/null 2>&1
    local id
    id=$("$RTBENCH" runs --db "$tmp/s.db" | awk 'NR > 1 { id = $1 } END { print id }')
    "$RTBENCH" export "$id" --db "$tmp/s.db" -o "$1.json"
    "$RTBENCH" export "$id" --db "$tmp/s.db" -f cyclictest-hist --buckets 20000 -o "$1.hist"
}
theirs() { # out
    cyclicdeadline -t 1 -i "$INTERVAL" -D "$SECS" -q --json="$1.json" >/dev/null 2>&1
}
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..." >&2
    ours "$tmp/ours-a.$r"; theirs "$tmp/theirs-a.$r"
    theirs "$tmp/theirs-b.$r"; ours "$tmp/ours-b.$r"
done
python3 - "$tmp" "$ROUNDS" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def ours(path):
    n = s = 0
    hi = None
    for line in open(path + ".hist"):
        cols = line.split()
        if line.startswith("#") or len(cols) < 2:
            continue
        c = sum(int(x) for x in cols[1:])
        if c:
            n += c; s += c * int(cols[0]); hi = int(cols[0])
    doc = json.load(open(path + ".json"))
    return s / n, hi, doc["total"]["mean_ns"] / 1000, doc["total"]["percentiles_ns"]["50"] / 1000, doc["total"]["percentiles_ns"]["99"] / 1000
def theirs(path):
    t = json.load(open(path + ".json"))["thread"]["0"]
    return t["avg"], t["max"]
med = statistics.median
o = [[ours(f"{tmp}/ours-{s}.{r}") for s in "ab"] for r in range(1, rounds + 1)]
t = [[theirs(f"{tmp}/theirs-{s}.{r}") for s in "ab"] for r in range(1, rounds + 1)]
oa, ta = [x[0] for p in o for x in p], [x[0] for p in t for x in p]
print("avg wake-up latency (µs, whole µs per sample as cyclicdeadline keeps them)")
print(f"rtbench {med(oa):.2f}  cyclicdeadline {med(ta):.2f}  ratio {med(oa) / med(ta):.3f}")
print(f"A/A per round: rtbench {min(p[1][0] / p[0][0] for p in o):.3f}…{max(p[1][0] / p[0][0] for p in o):.3f}"
      f"  cyclicdeadline {min(p[1][0] / p[0][0] for p in t):.3f}…{max(p[1][0] / p[0][0] for p in t):.3f}")
print(f"max (median of runs): rtbench {med(x[1] for p in o for x in p)}  cyclicdeadline {med(x[1] for p in t for x in p)}")
print(f"rtbench in ns: mean {med(x[2] for p in o for x in p):.3f}  p50 {med(x[3] for p in o for x in p):.3f}  p99 {med(x[4] for p in o for x in p):.3f} µs")
PY
