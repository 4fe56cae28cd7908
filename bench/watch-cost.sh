#!/usr/bin/env bash
# What `rtbench watch` costs, in bench/scale.sh's terms: on the housekeeping CPU, its own
# threads' CPU time (schedstat) per scheduler event it reads, and what is left a second
# whatever the rate (fixed); on the CPUs where the hooked events fire, its BPF programs' run
# time (kernel.bpf_stats_enabled, put back after) per run and a second.
#
#   bench/watch-cost.sh [SECONDS]        (default: 15 s per watch, 3 watches)
#
# The watched application is the demonstration one (tests/apps/rtdemo.c: one FIFO-80 thread on
# CPU 0) at a 1 ms period and at 100 µs, watched as by default, and at 100 µs with what ran in
# the waits over 100 µs looked up (--explain-above 100: the classification's programs on CPU 0
# too). The per-event cost is fitted from the two default watches (the same watch, ten times the
# events); each is looked at 3 s in and 5 s before its end.
#
# Needs root, cc, python3 and a release build (`cargo build --release`; set RTBENCH for another
# binary).
set -euo pipefail

SECS=${1:-15}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
for tool in cc python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "watch-cost: $tool not found" >&2; exit 2; }
done
[ -x "$RTBENCH" ] || { echo "watch-cost: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "watch-cost: BPF and FIFO priority need root" >&2; exit 2; }
[ "$SECS" -ge 12 ] 2>/dev/null || { echo "watch-cost: SECONDS must be a whole number ≥ 12, not '$SECS'" >&2; exit 2; }

tmp=$(mktemp -d)
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$was" >/proc/sys/kernel/bpf_stats_enabled; pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
cc -O2 -Wall -pthread -o "$tmp/rtdemo" "$here/tests/apps/rtdemo.c"

# watch NAME PERIOD_US WATCH_ARGS...: the application and its watch, looked at twice.
watch() {
    local name=$1 period=$2
    shift 2
    "$tmp/rtdemo" -D "$((SECS + 3))" -p "$period" >"$tmp/$name.app" 2>&1 &
    local app=$!
    sleep 0.3
    "$RTBENCH" watch --pid "$app" -D "${SECS}s" --db "$tmp/rtbench.db" "$@" >"$tmp/$name.out" 2>&1 &
    local pid=$!
    sleep 3
    python3 "$here/bench/snap.py" "$pid" >"$tmp/$name.0.json"
    sleep $((SECS - 8))
    python3 "$here/bench/snap.py" "$pid" >"$tmp/$name.1.json"
    wait "$pid" || { cat "$tmp/$name.out" >&2; exit 1; }
    wait "$app"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; kernel $(uname -r)"
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo "watch: rtdemo at 1 ms, ${SECS} s ..."
watch slow 1000
echo "watch: rtdemo at 100 µs, ${SECS} s ..."
watch fast 100
echo "watch: rtdemo at 100 µs, --explain-above 100, ${SECS} s ..."
watch explained 100 --explain-above 100
echo "$was" >/proc/sys/kernel/bpf_stats_enabled

python3 - "$tmp" "$SECS" <<'PY'
import json, re, sys

tmp, secs = sys.argv[1], int(sys.argv[2])

def look(name):
    a, b = (json.load(open(f"{tmp}/{name}.{i}.json")) for i in (0, 1))
    dt = b["t"] - a["t"]
    before = {t["tid"]: t["ns"] for t in a["threads"]}
    cpu = sum(t["ns"] - before.get(t["tid"], 0) for t in b["threads"]) / dt
    runs0 = {p["prog_id"]: p for p in a["progs"]}
    dns = sum(p["run_time_ns"] - runs0.get(p["prog_id"], {"run_time_ns": 0})["run_time_ns"] for p in b["progs"])
    dcnt = sum(p["run_cnt"] - runs0.get(p["prog_id"], {"run_cnt": 0})["run_cnt"] for p in b["progs"])
    out = open(f"{tmp}/{name}.out").read()
    events = int(re.search(r"(\d+) scheduler events", out).group(1).replace("\u202f", ""))
    late = re.search(r"(\d+) waits over", out)
    return {"cpu_ns_s": cpu, "events_s": events / secs, "bpf_ns_s": dns / dt, "bpf_runs_s": dcnt / dt,
            "progs": len(b["progs"]), "late": int(late.group(1)) if late else 0}

rows = {n: look(n) for n in ("slow", "fast", "explained")}
print(f"{'watch':<28}{'events/s':>10}{'CPU µs/s':>10}{'ns/event':>10}{'BPF runs/s':>12}{'BPF µs/s':>10}{'ns/run':>8}{'programs':>9}")
for name, what in (("slow", "1 ms"), ("fast", "100 µs"), ("explained", "100 µs, --explain-above 100")):
    r = rows[name]
    per = r["cpu_ns_s"] / r["events_s"] if r["events_s"] else 0
    per_run = r["bpf_ns_s"] / r["bpf_runs_s"] if r["bpf_runs_s"] else 0
    print(f"{what:<28}{r['events_s']:>10.0f}{r['cpu_ns_s'] / 1e3:>10.1f}{per:>10.0f}{r['bpf_runs_s']:>12.0f}"
          f"{r['bpf_ns_s'] / 1e3:>10.1f}{per_run:>8.0f}{r['progs']:>9}")
s, f = rows["slow"], rows["fast"]
event = (f["cpu_ns_s"] - s["cpu_ns_s"]) / (f["events_s"] - s["events_s"])
fixed = s["cpu_ns_s"] - event * s["events_s"]
print(f"housekeeping CPU: {event:.0f} ns per event, {fixed / 1e3:.1f} µs a second fixed "
      f"(from the two default watches); one housekeeping CPU at 10 % carries "
      f"{max(0.0, (1e8 - fixed) / event):.0f} events/s")
PY
