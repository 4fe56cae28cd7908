#!/usr/bin/env bash
# What the seeds' load does here and how it moves timer latency: `rtbench load paper` by itself,
# `rtbench timer` idle and under `paper`, and cyclictest next to `rtbench timer` under
# `stress-ng --cpu 2 --io 1 --vm 1`. Needs root, cyclictest and stress-ng
# (`scripts/setup.sh --bench`). SECS per run (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${SECS:-60}
for tool in cyclictest stress-ng; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/setup.sh --bench)" >&2; exit 2; }
done
cargo build --release -q
bin=$PWD/target/release/rtbench
work=$(mktemp -d)
trap 'rm -rf "$work"; pkill -x stress-ng 2>/dev/null || true' EXIT
export RTBENCH_DB="$work/bench.db"

echo "== rtbench load paper, ${secs} s"
"$bin" load paper -D "${secs}s" -q

stats() { # run id -> "p99.99 max" in µs
  "$bin" export "$1" --format json | python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]
print("p99.99 %8.1f us   max %8.1f us   samples %d" % (t["percentiles_ns"]["99.99"] / 1e3, t["max_ns"] / 1e3, t["count"]))'
}
last_id() { "$bin" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])'; }

echo "== rtbench timer -t 2 -i 1000, ${secs} s"
"$bin" timer -q -D "${secs}s" >/dev/null
echo "idle:                $(stats "$(last_id)")"
"$bin" timer -q -D "${secs}s" --load paper >/dev/null
echo "load paper:          $(stats "$(last_id)")"
"$bin" timer -q -D "${secs}s" --load 'stress-ng:--cpu 2 --io 1 --vm 1' >/dev/null
echo "stress-ng load:      $(stats "$(last_id)")"

echo "== cyclictest -t2 -a0-1 -p95 -i1000 -m under stress-ng --cpu 2 --io 1 --vm 1, ${secs} s"
stress-ng --cpu 2 --io 1 --vm 1 --timeout "$((secs + 10))s" >/dev/null 2>&1 &
sleep 3
cyclictest -t2 -a0-1 -p95 -i1000 -m -q -D "$secs" -h 20000 --histfile "$work/ct.hist" >/dev/null
pkill -x stress-ng || true
python3 - "$work/ct.hist" <<'PY'
import sys
rows, over, maxes = [], [], []
for line in open(sys.argv[1]):
    if line.startswith("# Histogram Overflows:"):
        over = [int(x) for x in line.split(":")[1].split()]
    elif line.startswith("# Max Latencies:"):
        maxes = [int(x) for x in line.split(":")[1].split()]
    elif line[:1].isdigit():
        v = [int(x) for x in line.split()]
        rows.append((v[0], sum(v[1:])))
total = sum(c for _, c in rows) + sum(over)
need, seen, p9999 = total * 0.9999, 0, None
for us, c in rows:
    seen += c
    if seen >= need:
        p9999 = us
        break
print("cyclictest:          p99.99 %8.1f us   max %8.1f us   samples %d" % (p9999 if p9999 is not None else max(maxes), max(maxes), total))
PY
