#!/usr/bin/env bash
# rtbench pingpong against sockperf ping-pong, UDP over loopback, the same bytes on the wire
# (rtbench: 1-byte payload + its 24-byte header = 25 bytes; sockperf: -m 25, its header inside),
# interleaved, ROUNDS × SECS each (default 3 × 10 s), idle. Both report one-way = RTT/2.
# Then the same for rtbench's zmq transport against its tcp transport.
# Needs sockperf (Debian package sockperf; `scripts/setup.sh --bench`).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
secs=${SECS:-10}
command -v sockperf >/dev/null || { echo "sockperf is not installed (scripts/setup.sh --bench)" >&2; exit 2; }
cargo build --release -q
bin=$PWD/target/release/rtbench
work=$(mktemp -d)
export RTBENCH_DB="$work/bench.db"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

sockperf server -i 127.0.0.1 -p 17911 >/dev/null 2>&1 & pids+=($!)
for t in udp tcp zmq; do
  port=$((17900 + ${#pids[@]}))
  "$bin" pingpong --serve "127.0.0.1:$port" --transport "$t" >/dev/null & pids+=($!)
  declare "port_$t=$port"
done
sleep 1

# One rtbench client run; prints "median p99" in µs.
rtbench_run() {
  local transport=$1 port=$2
  "$bin" pingpong "127.0.0.1:$port" --transport "$transport" -D "${secs}s" -q >/dev/null
  "$bin" export "$("$bin" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
    | python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]["percentiles_ns"]; print("%.3f %.3f" % (t["50"]/1e3, t["99"]/1e3))'
}

sockperf_run() {
  sockperf ping-pong -i 127.0.0.1 -p 17911 -m 25 -t "$secs" 2>&1 | python3 -c '
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
echo "== UDP loopback, 25 bytes on the wire"
python3_table rtbench sockperf "${rows[@]}"

rows=()
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then z=$(rtbench_run zmq "$port_zmq"); t=$(rtbench_run tcp "$port_tcp")
  else t=$(rtbench_run tcp "$port_tcp"); z=$(rtbench_run zmq "$port_zmq"); fi
  rows+=("$z $t")
done
echo "== rtbench zmq (REQ/REP) against tcp, 1-byte payload"
python3_table zmq tcp "${rows[@]}"
