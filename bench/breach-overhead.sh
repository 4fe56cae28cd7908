#!/usr/bin/env bash
# What `--breach` costs a run when tracing is armed but no breach is hit: `timer` with and
# without `--breach 1000000` (a 1-second threshold), interleaved rounds, idle machine.
#
#   bench/breach-overhead.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s per variant)
#
# Needs root (tracing, FIFO priority), python3 and a release build (`cargo build --release`; set
# RTBENCH for another binary). Each round runs both variants, alternating which goes first, one
# thread on CPU 1 at FIFO 95 every 1 ms like bench/vs-cyclictest.sh, and prints each variant's
# mean and p99 (JSON export); then the medians and the ratios traced / untraced.
set -euo pipefail

ROUNDS=${1:-5}
SECS=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "breach-overhead: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "breach-overhead: tracing needs root" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db

run() { # variant round
    local extra=()
    [ "$1" = traced ] && extra=(--breach 1000000)
    "$RTBENCH" timer -t 1 -a 1 -p 95 -i 1000 -D "${SECS}s" -q --db "$db" "${extra[@]}" >"$tmp/$1.$2.out" 2>&1
    "$RTBENCH" export "$("$RTBENCH" runs --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
        --db "$db" --format json >"$tmp/$1.$2.json"
}

echo "settings: timer -t 1 -a 1 -p 95 -i 1000, ${SECS} s per run, ${ROUNDS} rounds; with and without --breach 1000000"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..."
    if [ $((r % 2)) -eq 1 ]; then run plain "$r"; run traced "$r"; else run traced "$r"; run plain "$r"; fi
done

python3 - "$tmp" "$ROUNDS" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def get(v, r):
    d = json.load(open(f"{tmp}/{v}.{r}.json"))
    t = d["total"]
    armed = d["run"]["params"].get("breach", {}).get("skipped") is None if v == "traced" else True
    return t["mean_ns"] / 1000, t["percentiles_ns"]["99"] / 1000, armed
rows = [(r, get("plain", r), get("traced", r)) for r in range(1, rounds + 1)]
print("\nall values in µs\nround  plain_avg plain_p99  traced_avg traced_p99")
for r, p, t in rows:
    print(f"{r:>5} {p[0]:>10.2f} {p[1]:>9.2f} {t[0]:>11.2f} {t[1]:>10.2f}{'' if t[2] else '  (tracing skipped!)'}")
med = lambda i, k: statistics.median(x[i][k] for x in rows)
print(f"  med {med(1,0):>10.2f} {med(1,1):>9.2f} {med(2,0):>11.2f} {med(2,1):>10.2f}")
print(f"\nratio traced/plain  avg: {med(2,0)/med(1,0):.3f}  p99: {med(2,1)/med(1,1):.3f}")
PY
