#!/usr/bin/env bash
# What `rtbench monitor` costs: CPU time (utime + stime from /proc/PID/stat, as % of one CPU)
# and RSS once a minute for MINUTES, at the defaults (1 ms, one thread per CPU, 5-minute
# windows) with a scraper reading /metrics every 15 s; then the same minutes of the floor, a C
# loop that does only the wake-ups (bench/ref/wakeloop.c), for FLOOR minutes (default 5; 0
# skips it).
#
#   bench/monitor-cost.sh [MINUTES]      (default 30)
#
# Needs root, cc, curl and a release build (`cargo build --release`; RTBENCH for another binary).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
minutes=${1:-30}
[ -x "$RTBENCH" ] || { echo "monitor-cost: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
command -v cc >/dev/null && command -v curl >/dev/null || { echo "monitor-cost: needs cc and curl" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
tck=$(getconf CLK_TCK)
cpus=$(seq -s' ' 0 $(( $(nproc) - 1 )))
cc -O2 -pthread -o "$tmp/wakeloop" "$here/bench/ref/wakeloop.c"

# watch NAME PID MINUTES: a line per minute: CPU % of one CPU over that minute, RSS; then the mean.
watch() {
    local name=$1 pid=$2 minutes=$3 before after total=0 rss
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    for m in $(seq 1 "$minutes"); do
        sleep 60
        after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
        echo "$name minute $m: cpu $(echo "scale=2; ($after - $before) * 100 / $tck / 60" | bc) % of one CPU, rss $((rss / 1024)) MB"
        total=$((total + after - before)); before=$after
    done
    echo "$name mean: $(echo "scale=2; $total * 100 / $tck / 60 / $minutes" | bc) % of one CPU"
}

port=$((19000 + RANDOM % 500))
"$RTBENCH" monitor --db "$tmp/db" --listen "127.0.0.1:$port" 2>"$tmp/monitor.err" &
pids+=($!); mon=$!
( for _ in $(seq 1 $((minutes * 4 + 8))); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics"; sleep 15; done ) &
pids+=($!)
sleep 10
watch monitor "$mon" "$minutes"
kill -TERM "$mon"; wait "$mon" || true
echo "windows stored: $(sqlite3 "$tmp/db" 'SELECT count(*) FROM runs' 2>/dev/null || echo '?')"
FLOOR=${FLOOR:-5}
if [ "$FLOOR" -gt 0 ]; then
    # shellcheck disable=SC2086
    "$tmp/wakeloop" 1000 $cpus &
    pids+=($!)
    sleep 10
    watch floor $! "$FLOOR"
fi
