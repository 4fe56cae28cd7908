#!/usr/bin/env bash
# How far one housekeeping CPU carries the split and the classification (issue 38): the cost of
# each stage per sample, measured on this machine, and from them the largest CPUs × rate whose
# records one housekeeping CPU takes in at ≤ 10 % of its time.
#
#   bench/scale.sh [SECONDS]                 (default: 20 s per run)
#   THREADS=2 INTERVAL=100 bench/scale.sh    the split run's timer threads on CPU $CPU, µs apart
#   RATE=10000 bench/scale.sh                the per-CPU timer rate the sum is made for (10 kHz)
#   RECORD_NS=12.3 bench/scale.sh            the probe's record cost as given, not benchmarked
#
# Stages, each per sample (or per classification event):
#   record   the probe's record on the measured thread: `cargo bench --bench record`
#            (recorder_record, 1000 samples a block)
#   bpf      the BPF program per event on the measured CPU, from the kernel's BPF statistics
#            (kernel.bpf_stats_enabled, put back after; run_time_ns / run_cnt of the run's
#            programs, read from their fds' fdinfo): per program run, and per record it hands on
#            (every timer expiry on the machine runs the split's program; every event on every
#            CPU runs the classification's)
#   reader   the reader thread per record, on the housekeeping CPU: its CPU time (schedstat) over
#            the records the run says it read
#   main     the main thread (pairing, checkpoints, the store's writes) per second, i.e. per
#            checkpoint, and per sample
# The split is measured in both its modes (RTBENCH_SPLIT_MODE): per-sample, a record a sample;
# aggregate, histograms in the kernel read at each checkpoint and records only for expiries
# over their bound, so its reader's and main thread's costs are per sample, not per record.
# The split run is `timer --split` on CPU $CPU, the classification run `noise --classify` on the
# same CPU (busy, idle machine): both with the collector on the other CPUs. Only the reader's
# and the main thread's costs fall on the housekeeping CPU; the sum for N CPUs at RATE per CPU,
# each also busy with the classification's events at the rate measured here, is
#   per CPU:  L = RATE × (reader_split + main_split) + E × (reader_classify + main_classify)
# with the split's cost of the cheaper mode (a run past the budget aggregates); aggregated, the
# split's reader polls for the few records over the bound, a fixed cost F a second taken off the
# budget first: n = floor((1e8 - F) / L).
#   CPUs:     n = floor(10 % of 1e9 ns / L);  sustained = n × RATE samples/s at n × L / 1e7 %.
# A checkpoint's fixed cost is spread over the samples here, so the sum is on the safe side.
#
# Needs root (tracing, FIFO priority), python3 and a release build (`cargo build --release`; set
# RTBENCH for another binary). The last line reads `sustained: N samples/s at P % of one CPU`.
set -euo pipefail

SECS=${1:-20}
CPU=${CPU:-1}
THREADS=${THREADS:-2}
INTERVAL=${INTERVAL:-100}
RATE=${RATE:-10000}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "scale: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "scale: tracing needs root" >&2; exit 2; }
[ "$SECS" -ge 12 ] 2>/dev/null || { echo "scale: SECONDS must be a whole number ≥ 12, not '$SECS'" >&2; exit 2; }

tmp=$(mktemp -d)
was=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$was" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db

# snap PID FILE: every thread's CPU time (ns, schedstat) with its name and policy, and the
# run time and count of every BPF program the process has attached.
snap() {
    python3 - "$1" >"$2" <<'PY'
import ctypes, json, os, struct, sys, time
pid = sys.argv[1]
threads = []
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
        policy = int(open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[38])
    except (OSError, IndexError, ValueError):
        continue
    threads.append({"tid": int(tid), "comm": comm, "policy": policy, "ns": ns})
# The programs' statistics, by id from the links the process holds (it keeps no program fd):
# a fd of each, opened with BPF_PROG_GET_FD_BY_ID, has them in its fdinfo.
BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
def fdinfo(path):
    return dict((k, v.strip()) for k, v in (l.split(":", 1) for l in open(path).read().splitlines() if ":" in l))
progs = []
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf_link":
            continue
        prog_id = int(fdinfo(f"/proc/{pid}/fdinfo/{fd}")["prog_id"])
    except (OSError, KeyError, ValueError):
        continue
    attr = ctypes.create_string_buffer(struct.pack("III", prog_id, 0, 0), 16)
    own = libc.syscall(BPF, 13, attr, 16)  # BPF_PROG_GET_FD_BY_ID
    if own < 0:
        continue
    info = fdinfo(f"/proc/self/fdinfo/{own}")
    os.close(own)
    progs.append({"prog_id": prog_id, "run_time_ns": int(info["run_time_ns"]), "run_cnt": int(info["run_cnt"])})
json.dump({"t": time.monotonic(), "pid": int(pid), "threads": threads, "progs": progs}, sys.stdout)
PY
}

# measure NAME ARGS...: the run in the background, snapshots 3 s in and 5 s before its end,
# then its JSON export.
measure() {
    local name=$1
    shift
    "$RTBENCH" "$@" -D "${SECS}s" -q --db "$db" >"$tmp/$name.out" 2>&1 &
    local pid=$!
    sleep 3
    snap "$pid" "$tmp/$name.0.json" || { wait "$pid"; cat "$tmp/$name.out" >&2; exit 1; }
    sleep $((SECS - 8))
    snap "$pid" "$tmp/$name.1.json" || { wait "$pid"; cat "$tmp/$name.out" >&2; echo "scale: the run ended before its second look" >&2; exit 1; }
    wait "$pid" || { cat "$tmp/$name.out" >&2; exit 1; }
    "$RTBENCH" export "$("$RTBENCH" runs --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')" \
        --db "$db" --format json >"$tmp/$name.json"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; kernel $(uname -r)"
if [ -z "${RECORD_NS:-}" ]; then
    echo "record: cargo bench --bench record -- recorder_record ..."
    (cd "$here" && nice cargo bench -q --bench record -- recorder_record --noplot) >"$tmp/record.out" 2>&1 ||
        { cat "$tmp/record.out" >&2; exit 1; }
    RECORD_NS=$(python3 - "$tmp/record.out" <<'PY'
import re, sys
m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) ", open(sys.argv[1]).read())
scale = {"ps": 1e-3, "ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6}[m.group(2)]
print(f"{float(m.group(1)) * scale / 1000:.2f}")  # a block is 1000 samples
PY
)
fi
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo "split: timer -t $THREADS -a $CPU -i $INTERVAL --split, ${SECS} s ..."
RTBENCH_SPLIT_MODE=per-sample measure split timer -t "$THREADS" -a "$CPU" -i "$INTERVAL" --split
echo "split, aggregate: the same, RTBENCH_SPLIT_MODE=aggregate ..."
RTBENCH_SPLIT_MODE=aggregate measure aggregate timer -t "$THREADS" -a "$CPU" -i "$INTERVAL" --split
echo "classify: noise -a $CPU --classify, ${SECS} s ..."
measure classify noise -a "$CPU" --classify
echo "$was" >/proc/sys/kernel/bpf_stats_enabled

python3 - "$tmp" "$RECORD_NS" "$RATE" <<'PY'
import json, sys
tmp, record_ns, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])

def stages(name, instrument, per_sample=False):
    a, b = (json.load(open(f"{tmp}/{name}.{i}.json")) for i in (0, 1))
    doc = json.load(open(f"{tmp}/{name}.json"))
    rec = doc["run"]["params"][instrument]
    if rec.get("skipped") or rec.get("records") is None:
        sys.exit(f"scale: the {name} run read no BPF records: {rec.get('skipped') or rec.get('source')}")
    secs = b["t"] - a["t"]
    samples = sum(t["count"] for t in doc["threads"])
    duration = doc["run"]["params"]["duration_s"]
    # Records and samples in the window between the snapshots, at the run's average rate.
    records, samples = rec["records"] / duration * secs, samples / duration * secs
    if per_sample:
        # Aggregated, the reader takes few records: its and the main thread's cost (the map
        # reads at each checkpoint) are spread over the samples.
        records = samples
    def ns(pick):
        before = {t["tid"]: t["ns"] for t in a["threads"]}
        return sum(t["ns"] - before.get(t["tid"], 0) for t in b["threads"] if pick(t))
    # The measuring threads (rtbench-0, …) run at FIFO or RR; the collector's do not.
    collector = lambda t: t["policy"] not in (1, 2)
    reader = ns(lambda t: collector(t) and t["comm"].startswith("rtbench-"))
    main = ns(lambda t: t["tid"] == b["pid"])
    other = ns(lambda t: collector(t) and t["tid"] != b["pid"] and not t["comm"].startswith("rtbench-"))
    p0 = {p["prog_id"]: p for p in a["progs"]}
    runs = sum(p["run_cnt"] - p0[p["prog_id"]]["run_cnt"] for p in b["progs"] if p["prog_id"] in p0)
    bpf_ns = sum(p["run_time_ns"] - p0[p["prog_id"]]["run_time_ns"] for p in b["progs"] if p["prog_id"] in p0)
    return {"secs": secs, "records": records, "samples": samples, "lost": rec["lost_events"],
            "transport": rec.get("transport"), "reader": reader / records, "main_s": main / secs,
            "main": main / records, "other": other / records, "runs": runs, "bpf_run": bpf_ns / max(runs, 1),
            "bpf_record": bpf_ns / records, "rate": records / secs, "mode": rec.get("mode"),
            "read": rec["records"] / duration, "aggregated": rec.get("aggregated")}

s, c = stages("split", "split"), stages("classify", "classify")
g = stages("aggregate", "split", per_sample=True)
print(f"\nsplit run:    {s['rate']:.0f} records/s ({s['samples'] / s['secs']:.0f} samples/s), "
      f"{s['lost']} lost, transport {s['transport']}, mode {s['mode']}")
print(f"aggregate:    {g['read']:.0f} records/s of {g['samples'] / g['secs']:.0f} samples/s, "
      f"{g['aggregated']} counted in the kernel, {g['lost']} lost, mode {g['mode']}")
print(f"classify run: {c['rate']:.0f} records/s on one busy CPU, {c['lost']} lost, transport {c['transport']}")
print("\nstage (ns)                          split/sample  aggregate/sample  classify/event  where")
print(f"probe's record (cargo bench)        {record_ns:>12.1f}  {record_ns:>16.1f}  {'-':>14}  measured CPU")
for label, key, fmt in [("BPF program, per run", "bpf_run", ".1f"),
                        ("BPF program, per record handed on", "bpf_record", ".1f"),
                        ("reader, per record", "reader", ".1f"),
                        ("main thread, per record", "main", ".1f"),
                        ("main thread, per checkpoint (1/s)", "main_s", ".0f"),
                        ("other collector threads, per record", "other", ".1f")]:
    where = "measured CPU" if key.startswith("bpf") else "housekeeping CPU"
    print(f"{label:<36}{s[key]:>12{fmt}}  {g[key]:>16{fmt}}  {c[key]:>14{fmt}}  {where}")
print("(aggregate: per sample, not per record)")
# Aggregated, each sample still costs the main thread, and the share of samples handed on as
# records (those over the bound) costs the reader what a record costs it per-sample.
share = g["read"] / (g["samples"] / g["secs"])
ps, ag = s["reader"] + s["main"] + s["other"], g["main"] + g["other"] + share * s["reader"]
# Aggregated, the reader takes ~1 % of the samples as records: its time is its polling, a
# fixed cost a second however many CPUs it serves, so it comes off the budget, not per sample.
fixed = g["reader"] * g["samples"] / g["secs"] if ag < ps else 0.0
cs = min(ps, ag)
print(f"\nsplit per sample: per-sample mode {ps:.1f} ns, aggregate mode {ag:.1f} ns "
      f"(main {g['main']:.1f} + {share:.4f} records a sample × {s['reader']:.1f}) "
      f"+ the reader's {fixed:.0f} ns a second; the sum takes {cs:.1f}")
cc = c["reader"] + c["main"] + c["other"]
e = c["rate"]
load = rate * cs + e * cc
n = int((1e8 - fixed) // load)
print(f"housekeeping cost: {cs:.1f} ns per split sample, {cc:.1f} ns per classification event")
print(f"per measured CPU at {rate} Hz with {e:.0f} classification events/s: "
      f"L = {rate} × {cs:.1f} + {e:.0f} × {cc:.1f} = {load:.0f} ns per s")
print(f"CPUs one housekeeping CPU carries at ≤ 10 %: n = floor((1e8 - {fixed:.0f}) / {load:.0f}) = {n}")
print(f"(the split alone: floor((1e8 - {fixed:.0f}) / {cs:.1f}) = {int((1e8 - fixed) // cs)} samples/s; "
      f"the classification alone at {e:.0f} events/s a CPU: {int(1e8 // (e * cc))} busy CPUs)")
print(f"sustained: {n * rate} samples/s at {(n * load + fixed) / 1e7:.1f} % of one CPU")
PY
