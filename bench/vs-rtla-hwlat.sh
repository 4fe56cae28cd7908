#!/usr/bin/env bash
# The kernel's hwlat detector beside what `rtbench noise --classify` calls "nothing the kernel
# saw" (its HW class), on a kernel with the hwlat tracer, the same CPU and threshold, in
# interleaved rounds (the sibling of vs-rtla-osnoise.sh).
#
#   bench/vs-rtla-hwlat.sh                  on a host whose kernel has the tracer (root)
#   GUEST=VMLINUZ bench/vs-rtla-hwlat.sh    boots VMLINUZ with virtme-ng (2 vCPUs, TCG) on this
#                                           root file system and runs itself inside
#
#   ROUNDS=5 DURATION=10 CPU=1 THRESHOLD_US=10 RTBENCH=target/release/rtbench
#
# Debian 12's rtla (6.1) has no hwlat command, so the tracer is driven through tracefs as rtla
# would: `hwlat_detector/width` 900 ms of every 1 s `window` (rtbench's noise thread pauses
# under the same RT throttling budget), `tracing_thresh` the threshold, `tracing_cpumask` the
# CPU, then every setting put back. hwlat spins with interrupts off; rtbench's thread spins with
# them on and counts a gap as HW when no IRQ, softirq or thread ran in it.
#
# What is compared: per second of measured time, how often a gap over the threshold occurs
# (hwlat's `count:` summed over its samples, or one a sample on kernels that lack it; rtbench's
# HW gaps), and the longest (hwlat's larger of inner/outer; rtbench's longest HW gap). hwlat
# reports one sample per window, rtbench every gap.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
. "$here/bench/rtla-guest.sh"
rtla_where vs-rtla-hwlat hwlat "ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} THRESHOLD_US=${THRESHOLD_US:-10}" no-rtla
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${THRESHOLD_US:-10}" "$tmp" <<'PY'
import json, re, statistics, subprocess, sys, time
from rtla_compare import aa, interleaved, judged

rtbench, rounds, dur, cpu, thresh, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
T = "/sys/kernel/tracing/"
WIDTH, WINDOW = 900000, 1000000
SETTINGS = ["tracing_on", "current_tracer", "tracing_thresh", "hwlat_detector/width", "hwlat_detector/window",
            "tracing_cpumask"] + (["hwlat_detector/mode"] if __import__("os").path.exists(T + "hwlat_detector/mode") else [])

def put(f, v):
    with open(T + f, "w") as fh:
        fh.write(str(v))

def hwlat():
    saved = {f: open(T + f).read().strip().split("[")[-1].split("]")[0] if f.endswith("mode") else open(T + f).read().strip()
             for f in SETTINGS}
    try:
        put("tracing_on", 0); put("current_tracer", "nop")
        put("tracing_thresh", thresh); put("hwlat_detector/window", WINDOW); put("hwlat_detector/width", WIDTH)
        put("tracing_cpumask", format(1 << int(cpu), "x"))
        if "hwlat_detector/mode" in SETTINGS:
            put("hwlat_detector/mode", "round-robin")
        put("trace", ""); put("current_tracer", "hwlat"); put("tracing_on", 1)
        time.sleep(float(dur))
        put("tracing_on", 0)
        text = open(T + "trace").read()
    finally:
        put("current_tracer", "nop")
        for f in ["hwlat_detector/width", "hwlat_detector/window", "tracing_thresh", "tracing_cpumask"] + SETTINGS[6:]:
            put(f, saved[f])
        put("current_tracer", saved["current_tracer"]); put("tracing_on", saved["tracing_on"])
    samples = [(int(m[1]), int(m[2]), int(m[3] or 1)) for m in
               re.finditer(r"inner/outer\(us\):\s*(\d+)/\s*(\d+).*?(?:count:(\d+))?$", text, re.M)]
    per_s = float(dur) * WIDTH / WINDOW
    return {"per_s": sum(s[2] for s in samples) / per_s, "max": max((max(s[:2]) for s in samples), default=0),
            "samples": len(samples)}

def ours():
    cmd = [rtbench, "noise", "--classify", "--threshold", thresh, "-a", cpu, "-D", f"{dur}s", "-q",
           "--db", f"{tmp}/rtbench.db"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    run = re.search(r"stored as run (\d+)", out).group(1)
    doc = json.loads(subprocess.run([rtbench, "export", run, "--db", f"{tmp}/rtbench.db"], capture_output=True,
                                    text=True, check=True).stdout)
    per_s = doc["run"]["params"]["noise"][0]["measured_ns"] / 1e9
    for line in out.splitlines():
        # The class table: class, gaps, gaps/s, noise µs, share, max µs[, most noise].
        f = line.replace("HW/hypervisor", "HW").split()
        if len(f) >= 6 and f[0] == "HW" and f[4].endswith("%"):
            return {"per_s": int(f[1]) / per_s, "max": float(f[5]), "samples": int(f[1])}
    raise SystemExit(f"no HW line in rtbench's class table:\n{out}")

TOOLS = {"hwlat": hwlat, "rtbench noise --classify": ours}
print(f"load average in the guest at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
runs = interleaved(TOOLS, rounds, lambda t, x: f"{t} {x['per_s']:.1f}/s max {x['max']:.0f} µs")

med = statistics.median
print(f"\nNoise no kernel context explains on CPU {cpu}, threshold {thresh} µs, {dur} s a run, {rounds} rounds "
      "(median over rounds)")
print(f"{'':18}{'hwlat':>10}{'rtbench':>10}{'ratio':>8}{'wider A/A':>12}{'':>5}")
for name, get in [("over thresh/s", lambda x: x["per_s"]), ("max µs", lambda x: x["max"])]:
    a, b = med(get(x) for x, _ in runs["hwlat"]), med(get(x) for x, _ in runs["rtbench noise --classify"])
    ratio = b / a if a else float("nan")
    print(f"{name:18}{a:10.1f}{b:10.1f}{ratio:8.2f}"
          f"{judged(ratio, aa(runs['rtbench noise --classify'], get), aa(runs['hwlat'], get))}")
print(f"load average in the guest at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
