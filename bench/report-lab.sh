#!/usr/bin/env bash
# How `rtbench report` reads at a lab's scale (issue 39): one study's store copied under
# HOSTS labels (rack1/host01/KERNEL ...) and merged into one store, then the report drawn
# ROUNDS times: its time, the size of index.html and the number of figures (goal: <= 10 s,
# <= 5 MB at 20 labels x 10 cells).
#
#   STORE=PATH   a store holding one study (default: a study -D 3s --no-sysbench is run first,
#                as root, into a temporary store)
#   HOSTS=20     labels;  ROUNDS=3;  RTBENCH: the binary (default target/release/rtbench)
#   KEEP=DIR     also copy the last report to DIR (to screenshot its first screen)
set -euo pipefail
cd "$(dirname "$0")/.."
RTBENCH=${RTBENCH:-target/release/rtbench}
HOSTS=${HOSTS:-20}
ROUNDS=${ROUNDS:-3}
[ -x "$RTBENCH" ] || { echo "report-lab: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

store=${STORE:-}
if [ -z "$store" ]; then
  store="$work/study.db"
  "$RTBENCH" study -D 3s --no-sysbench --no-report -q --db "$store" >/dev/null
fi
[ -f "$store" ] || { echo "report-lab: no store at $store" >&2; exit 2; }

for i in $(seq -w 1 "$HOSTS"); do
  cp "$store" "$work/h$i.db"
  python3 - "$work/h$i.db" "rack1/host$i" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
kernel = db.execute("select label from runs limit 1").fetchone()[0].split("/")[-1]
db.execute("update runs set label = ?", (f"{sys.argv[2]}/{kernel}",))
db.commit()
PY
  if [ "$i" = "$(seq -w 1 "$HOSTS" | head -n1)" ]; then
    mv "$work/h$i.db" "$work/lab.db"
  else
    "$RTBENCH" merge --db "$work/lab.db" "$work/h$i.db" >/dev/null
  fi
done
echo "store: $(python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); print(*d.execute("select count(*), count(distinct label) from runs").fetchone())' "$work/lab.db" | awk '{print $1" runs, "$2" labels"}')"
for round in $(seq 1 "$ROUNDS"); do
  start=$(date +%s.%N)
  "$RTBENCH" report --db "$work/lab.db" -o "$work/report" >/dev/null
  end=$(date +%s.%N)
  printf 'round %d: %.2f s\n' "$round" "$(echo "$end - $start" | bc)"
done
printf 'index.html: %s bytes; figures: %s files (SVG and PNG)\n' \
  "$(stat -c %s "$work/report/index.html")" "$(ls "$work/report/figures" | wc -l)"
if [ -n "${KEEP:-}" ]; then rm -rf "$KEEP" && cp -r "$work/report" "$KEEP"; fi
