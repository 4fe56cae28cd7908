#!/usr/bin/env bash
# What `noise --classify` costs the noise probe's loop, and what it finds idle: `noise -a 1`
# with and without `--classify`, interleaved rounds, idle machine.
#
#   bench/classify-overhead.sh [ROUNDS] [SECONDS]      (defaults: 5 rounds of 30 s per variant)
#   AA=1 bench/classify-overhead.sh ...                the tool against itself: both variants plain,
#                                                      to show how far this machine's noise alone
#                                                      moves the ratios
#
# Needs root (tracing, FIFO priority), python3 and a release build (`cargo build --release`; set
# RTBENCH for another binary). Each round runs both variants, alternating which goes first, one
# thread on CPU 1 at FIFO 95 with the default 1 µs threshold, and prints each variant's count of
# gaps and mean gap (JSON export), and for the classified run the share of its noise in each
# class; then the medians and the ratios classified / plain. Then, with bpftool (scripts/setup.sh
# --bench), the programs' own run time in one more classified run.
set -euo pipefail

ROUNDS=${1:-5}
SECS=${2:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "classify-overhead: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "classify-overhead: tracing needs root" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db

run() { # variant round
    local extra=()
    [ "$1" = classified ] && [ "${AA:-0}" != 1 ] && extra=(--classify)
    "$RTBENCH" noise -a 1 -p 95 -D "${SECS}s" -q --db "$db" "${extra[@]}" >"$tmp/$1.$2.out" 2>&1 ||
        { cat "$tmp/$1.$2.out" >&2; exit 1; }
    "$RTBENCH" export "$("$RTBENCH" runs --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
        --db "$db" --format json >"$tmp/$1.$2.json"
}

echo "settings: noise -a 1 -p 95, ${SECS} s per run, ${ROUNDS} rounds; with and without --classify${AA:+ (AA=$AA: both plain)}"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..."
    if [ $((r % 2)) -eq 1 ]; then run plain "$r"; run classified "$r"; else run classified "$r"; run plain "$r"; fi
done

python3 - "$tmp" "$ROUNDS" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
CLASSES = ["irq", "softirq", "thread", "hardware", "unknown"]
def get(v, r):
    d = json.load(open(f"{tmp}/{v}.{r}.json"))
    t = d["total"]
    shares = {}
    c = d["run"]["params"].get("classify")
    if c is None:
        shares = {k: 0.0 for k in CLASSES + ["lost"]}
    else:
        if c.get("skipped"):
            sys.exit(f"round {r}: not classified: {c['skipped']}")
        ns = {k: sum(x["ns"] for th in c["threads"] for x in th["totals"] if x["class"] == k) for k in CLASSES}
        total = sum(ns.values()) or 1
        shares = {k: 100 * v / total for k, v in ns.items()}
        shares["lost"] = c["lost_events"]
    return t["count"], t["mean_ns"] / 1000, shares
rows = [(r, get("plain", r), get("classified", r)) for r in range(1, rounds + 1)]
print("\nround  plain_gaps plain_mean_us  classified_gaps classified_mean_us   irq% softirq% thread%  hw%  unknown% lost")
for r, p, c in rows:
    s = c[2]
    print(f"{r:>5} {p[0]:>11} {p[1]:>13.3f} {c[0]:>16} {c[1]:>18.3f}  {s['irq']:>5.1f} {s['softirq']:>8.1f} {s['thread']:>7.1f} {s['hardware']:>5.1f} {s['unknown']:>8.1f} {s['lost']:>4}")
med = lambda i, k: statistics.median(x[i][k] for x in rows)
hw = statistics.median(x[2][2]["hardware"] for x in rows)
print(f"  med {med(1,0):>11} {med(1,1):>13.3f} {med(2,0):>16} {med(2,1):>18.3f}   hardware (nothing the kernel saw): {hw:.1f} % of the noise")
print(f"\nratio classified/plain  gaps: {med(2,0)/med(1,0):.3f}  mean gap: {med(2,1)/med(1,1):.3f}")
PY

# The programs' own cost, as the kernel times it, in one more classified run.
[ "${AA:-0}" = 1 ] && exit 0
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "$db" <<'PY'
import sys
from bpf_cost import print_cost, programs_cost
rtbench, db = sys.argv[1:3]
print_cost(programs_cost([rtbench, "noise", "-a", "1", "-p", "95", "-D", "14s", "-q", "--db", db, "--classify"]))
PY
