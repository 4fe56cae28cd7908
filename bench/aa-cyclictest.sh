#!/usr/bin/env bash
# The noise floor of bench/vs-cyclictest.sh: cyclictest against itself, same settings, same
# method (mean of its 1-µs histogram + 0.5 µs). Whatever ratio this shows between two runs of
# one tool, a comparison of two tools on this machine cannot resolve.
#
#   bench/aa-cyclictest.sh [ROUNDS] [SECONDS]      (defaults: 5 rounds of 30 s per side)
#
# Needs root and cyclictest (Debian/Ubuntu package rt-tests); THREADS and AFFINITY as in
# vs-cyclictest.sh (defaults: 1 thread on the last CPU).
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-30}
THREADS=${THREADS:-1}
AFFINITY=${AFFINITY:-$(( $(nproc) - 1 ))}
command -v cyclictest >/dev/null || { echo "aa-cyclictest: cyclictest not found (apt-get install rt-tests)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # file
    cyclictest -t "$THREADS" -a "$AFFINITY" -p 95 -i 1000 -m -D "$SECS" -q -h 20000 --histfile="$1" >/dev/null 2>&1
}
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..." >&2
    run "$tmp/a.$r"; run "$tmp/b.$r"
done
python3 - "$tmp" "$ROUNDS" <<'PY'
import statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def mean(path):
    n = s = 0
    for line in open(path):
        cols = line.split()
        if line.startswith("#") or len(cols) < 2:
            continue
        c = sum(int(x) for x in cols[1:])
        n += c
        s += c * (int(cols[0]) + 0.5)
    return s / n
rows = [(mean(f"{tmp}/a.{r}"), mean(f"{tmp}/b.{r}")) for r in range(1, rounds + 1)]
for r, (a, b) in enumerate(rows, 1):
    print(f"round {r}: A {a:.2f} µs  B {b:.2f} µs  B/A {b / a:.3f}")
ma, mb = statistics.median(a for a, _ in rows), statistics.median(b for _, b in rows)
print(f"median A {ma:.2f}  B {mb:.2f}  ratio of medians {mb / ma:.3f}; per round {min(b / a for a, b in rows):.3f} … {max(b / a for a, b in rows):.3f}")
PY
