#!/usr/bin/env bash
# rtbench pingpong against sockperf ping-pong, UDP over loopback, the same bytes on the wire
# (rtbench: 1-byte payload + its 24-byte header = 25 bytes; sockperf: -m 25, its header inside),
# interleaved, ROUNDS × SECS each (default 3 × 10 s). Both report one-way = RTT/2.
#
#   bench/vs-sockperf.sh        idle; then rtbench's zmq transport against its tcp transport
#   bench/vs-sockperf.sh hog    under one SCHED_OTHER CPU hog (stress-ng --cpu 1), both sides
#                               placed as sockperf runs: every end unpinned (-a none) and at
#                               SCHED_OTHER (--policy other), rtbench's echo server too
#
# Every process is bounded in time (timeout, --serve-for, stress-ng --timeout), and whatever
# is still running is stopped on exit.
# Needs sockperf (Debian package sockperf; `scripts/setup.sh --bench`), and stress-ng for hog.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-idle}
case $mode in idle | hog) ;; *) echo "usage: bench/vs-sockperf.sh [idle|hog]" >&2; exit 2 ;; esac
rounds=${ROUNDS:-3}
secs=${SECS:-10}
command -v sockperf >/dev/null || { echo "sockperf is not installed (scripts/setup.sh --bench)" >&2; exit 2; }
[ "$mode" = idle ] || command -v stress-ng >/dev/null || { echo "stress-ng is not installed (scripts/setup.sh --bench)" >&2; exit 2; }
cargo build --release -q
bin=$PWD/target/release/rtbench
work=$(mktemp -d)
export RTBENCH_DB="$work/bench.db"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
# What the whole comparison can take: every run, the settling, and a margin. No process
# outlives it, and no single run takes more than twice its length.
life=$(( (rounds * 2 * (secs + 5)) * 2 + 60 ))
bounded() { timeout -k 5 $((secs * 2 + 30)) "$@"; }
# sockperf's placement under a hog: every rtbench end unpinned and at SCHED_OTHER.
placed=()
[ "$mode" = idle ] || placed=(-a none --policy other)

if [ "$mode" = hog ]; then
  stress-ng --cpu 1 --timeout "${life}s" --quiet & pids+=($!)
fi
timeout -k 5 "$life" sockperf server -i 127.0.0.1 -p 17911 >/dev/null 2>&1 & pids+=($!)
for t in udp tcp zmq; do
  port=$((17900 + ${#pids[@]}))
  "$bin" pingpong --serve "127.0.0.1:$port" --transport "$t" --serve-for "${life}s" "${placed[@]}" >/dev/null & pids+=($!)
  declare "port_$t=$port"
done
sleep 1

# One rtbench client run; prints "median p99" in µs.
rtbench_run() {
  local transport=$1 port=$2
  bounded "$bin" pingpong "127.0.0.1:$port" --transport "$transport" -D "${secs}s" -q "${placed[@]}" >/dev/null
  "$bin" export "$("$bin" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
    | python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]["percentiles_ns"]; print("%.3f %.3f" % (t["50"]/1e3, t["99"]/1e3))'
}

sockperf_run() {
  bounded sockperf ping-pong -i 127.0.0.1 -p 17911 -m 25 -t "$secs" 2>&1 | python3 -c '
import re, sys
text = sys.stdin.read()
p = dict(re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", text))
print("%s %s" % (p["50.000"], p["99.000"]))'
}

python3_table() {
  python3 - "$@" <<'PY'
import statistics, sys
name_a, name_b, rows = sys.argv[1], sys.argv[2], [r.split() for r in sys.argv[3:]]
print(f"{'round':>5} {name_a+' p50':>14} {name_a+' p99':>14} {name_b+' p50':>14} {name_b+' p99':>14}   (µs, one-way)")
for i, r in enumerate(rows, 1):
    print(f"{i:>5} {float(r[0]):>14.3f} {float(r[1]):>14.3f} {float(r[2]):>14.3f} {float(r[3]):>14.3f}")
med = [statistics.median(float(r[k]) for r in rows) for k in range(4)]
print(f"{'med':>5} {med[0]:>14.3f} {med[1]:>14.3f} {med[2]:>14.3f} {med[3]:>14.3f}")
print(f"ratio {name_a}/{name_b}: p50 {med[0]/med[2]:.3f}, p99 {med[1]/med[3]:.3f}")
PY
}

rows=()
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then r=$(rtbench_run udp "$port_udp"); s=$(sockperf_run)
  else s=$(sockperf_run); r=$(rtbench_run udp "$port_udp"); fi
  rows+=("$r $s")
done
if [ "$mode" = idle ]; then
  echo "== UDP loopback, 25 bytes on the wire, idle"
else
  echo "== UDP loopback, 25 bytes on the wire, under one CPU hog (stress-ng --cpu 1);"
  echo "   every end unpinned at SCHED_OTHER, as sockperf runs (rtbench: -a none --policy other)"
fi
uptime
python3_table rtbench sockperf "${rows[@]}"
[ "$mode" = idle ] || exit 0

rows=()
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then z=$(rtbench_run zmq "$port_zmq"); t=$(rtbench_run tcp "$port_tcp")
  else t=$(rtbench_run tcp "$port_tcp"); z=$(rtbench_run zmq "$port_zmq"); fi
  rows+=("$z $t")
done
echo "== rtbench zmq (REQ/REP) against tcp, 1-byte payload"
python3_table zmq tcp "${rows[@]}"
