#!/usr/bin/env bash
# How fast `rtbench report` draws 16 runs, one of them 24-hour-sized (86,400 envelope points
# per thread), and how big index.html gets. Uses the synthetic probe: no privilege needed.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/rtbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RTBENCH_DB="$work/bench.db"

for i in $(seq 1 15); do
  label="kernel-$(( (i - 1) % 4 ))"
  "$bin" synthetic -q -t 2 -l 200000 --seed "$i" --median $(( 4000 + i * 200 )) --label "$label" >/dev/null
done
# 86,400 synthetic seconds per thread at one sample per second: a day's envelope.
"$bin" synthetic -q -t 2 -i 1000000 -l 86400 --label day >/dev/null

ids=$("$bin" runs --json | python3 -c 'import json,sys; print(" ".join("--run %d" % r["id"] for r in json.load(sys.stdin)))')
echo "runs: $(echo "$ids" | wc -w | awk '{print $1/2}')"
for round in 1 2 3; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$bin" report $ids -o "$work/report" >/dev/null
  end=$(date +%s.%N)
  printf 'round %d: %.2f s\n' "$round" "$(echo "$end - $start" | bc)"
done
printf 'index.html: %s bytes; figures: %s files\n' "$(stat -c %s "$work/report/index.html")" "$(ls "$work/report/figures" | wc -l)"
