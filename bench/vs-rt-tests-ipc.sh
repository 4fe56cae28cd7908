#!/usr/bin/env bash
# `rtbench ipc` against rt-tests' own tools, same settings, interleaved rounds, each tool also
# against itself (A/A): ptsematest (--via mutex), sigwaittest (signal), svsematest (sem),
# pmqtest (mq). One pair on one CPU at FIFO 95, 1 ms interval.
#
#   bench/vs-rt-tests-ipc.sh [ROUNDS] [LOOPS] [WAYS]   (defaults: 3 rounds of 5000 wake-ups,
#                                                       every way: "mutex signal sem mq")
#
# The rt-tests tools read gettimeofday and keep whole µs (the difference's µs, truncated); they
# report min, avg and max only. rtbench's figures are given both in ns and truncated to whole µs
# per sample as theirs are (its 1-µs histogram: `export -f cyclictest-hist`), which is the one
# to hold against theirs. Needs root and rt-tests; CPU as the pair's CPU (default: the last).
set -euo pipefail
ROUNDS=${1:-3}
LOOPS=${2:-5000}
WAYS=${3:-mutex signal sem mq}
CPU=${CPU:-$(( $(nproc) - 1 ))}
RTBENCH=${RTBENCH:-target/release/rtbench}
for t in ptsematest sigwaittest svsematest pmqtest; do
    command -v "$t" >/dev/null || { echo "vs-rt-tests-ipc: $t not found (apt-get install rt-tests)" >&2; exit 2; }
done
[ -x "$RTBENCH" ] || { echo "vs-rt-tests-ipc: build first (cargo build --release)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tool_of() { case $1 in mutex) echo ptsematest;; signal) echo sigwaittest;; sem) echo svsematest;; mq) echo pmqtest;; esac; }

ours() { # way out
    "$RTBENCH" ipc --via "$1" -t 1 -a "$CPU" -p 95 -i 1000 -l "$LOOPS" --db "$tmp/s.db" --label "$1" >/dev/null 2>&1
    local id
    id=$("$RTBENCH" runs --db "$tmp/s.db" | awk 'NR > 1 { id = $1 } END { print id }')
    "$RTBENCH" export "$id" --db "$tmp/s.db" -o "$2.json"
    "$RTBENCH" export "$id" --db "$tmp/s.db" -f cyclictest-hist --buckets 20000 -o "$2.hist"
}
theirs() { # way out
    "$(tool_of "$1")" -t 1 -a "$CPU" -p 95 -i 1000 -l "$LOOPS" -q --json="$2.json" >/dev/null 2>&1
}

for r in $(seq 1 "$ROUNDS"); do
    for w in $WAYS; do
        echo "round $r/$ROUNDS: $w ..." >&2
        ours "$w" "$tmp/ours-a.$w.$r"; theirs "$w" "$tmp/theirs-a.$w.$r"
        theirs "$w" "$tmp/theirs-b.$w.$r"; ours "$w" "$tmp/ours-b.$w.$r"
    done
done
python3 - "$tmp" "$ROUNDS" "$WAYS" <<'PY'
import json, statistics, sys
tmp, rounds, ways = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
tools = {"mutex": "ptsematest", "signal": "sigwaittest", "sem": "svsematest", "mq": "pmqtest"}

def ours(path):
    """min, avg, max in whole µs per sample (as theirs), and the ns mean."""
    n = s = 0
    lo = hi = None
    for line in open(path + ".hist"):
        cols = line.split()
        if line.startswith("#") or len(cols) < 2:
            continue
        c = sum(int(x) for x in cols[1:])
        if c:
            us = int(cols[0])
            lo = us if lo is None else lo
            hi = us
            n += c
            s += c * us
    doc = json.load(open(path + ".json"))
    return lo, s / n, hi, doc["total"]["mean_ns"] / 1000

def theirs(path):
    doc = json.load(open(path + ".json"))
    rec = doc["thread"]["0"]["receiver"]
    return rec["min"], rec["avg"], rec["max"]

med = statistics.median
print("avg wake-up latency (µs, whole µs per sample as the rt-tests tools keep them); ratios per round")
print(f"{'way':7} {'tool':12} {'rtbench':>8} {'tool':>8} {'rtb/tool':>9} {'rtb A/A':>16} {'tool A/A':>16} {'rtb ns avg':>10}")
for w in ways:
    o = [[ours(f"{tmp}/ours-{s}.{w}.{r}") for s in "ab"] for r in range(1, rounds + 1)]
    t = [[theirs(f"{tmp}/theirs-{s}.{w}.{r}") for s in "ab"] for r in range(1, rounds + 1)]
    oa = [x[1] for pair in o for x in pair]
    ta = [x[1] for pair in t for x in pair]
    ratio = med(oa) / med(ta)
    aa_o = [p[1][1] / p[0][1] for p in o]
    aa_t = [p[1][1] / p[0][1] for p in t]
    ns = med(x[3] for pair in o for x in pair)
    print(f"{w:7} {tools[w]:12} {med(oa):8.2f} {med(ta):8.2f} {ratio:9.3f} "
          f"{min(aa_o):7.3f}…{max(aa_o):<7.3f} {min(aa_t):7.3f}…{max(aa_t):<7.3f} {ns:10.3f}")
print()
print("min / max (µs, medians of the rounds' runs)")
for w in ways:
    o = [x for r in range(1, rounds + 1) for s in "ab" for x in [ours(f"{tmp}/ours-{s}.{w}.{r}")]]
    t = [x for r in range(1, rounds + 1) for s in "ab" for x in [theirs(f"{tmp}/theirs-{s}.{w}.{r}")]]
    print(f"{w:7} rtbench min {med(x[0] for x in o):5.1f} max {med(x[2] for x in o):8.1f}   "
          f"{tools[w]} min {med(x[0] for x in t):5.1f} max {med(x[2] for x in t):8.1f}")
PY
