#!/usr/bin/env bash
# rtbench's OS noise beside rtla osnoise's, on a kernel with the osnoise tracer, the same CPU,
# threshold and priority, in interleaved rounds (the sibling of vs-rtla.sh).
#
#   bench/vs-rtla-osnoise.sh                  on a host whose kernel has the tracer (root, rtla)
#   GUEST=VMLINUZ bench/vs-rtla-osnoise.sh    boots VMLINUZ with virtme-ng (2 vCPUs, TCG) on this
#                                             root file system and runs itself inside
#
#   ROUNDS=5 DURATION=10 CPU=1 THRESHOLD_US=5 RTBENCH=target/release/rtbench
#
# Each round runs `rtla osnoise top -q` (the kernel's osnoise thread at FIFO 95, busy 900 ms of
# every second: under the RT throttling budget) and `rtbench noise --classify` (rtbench's FIFO 95
# thread, which pauses under the same budget), each twice in an order that alternates by round:
# the second run against the first is that tool's A/A.
#
# What is compared, each as the tool means it:
# - noise per second of measured time (rtla: Noise / Runtime; rtbench: noise_ns / measured_ns,
#   pauses excluded as rtla excludes the time its thread sleeps), the same as 100 - % CPU Aval;
# - the longest single noise (rtla's Max Single; rtbench's largest gap);
# - IRQ, softirq and thread events per second: both count each interfering event that ran in
#   the noise (rtbench: the `interference` of its classification, the same events tallied per
#   gap);
# - HW per second, marked *: rtla counts a noise sample no event explains, rtbench a gap no event
#   covers half of (HW/hypervisor) — close, not the same;
# - rtbench's share of the noise time per class, which rtla's top does not give.
# Both tools' A/A spreads are printed; the ratio is judged against the wider.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
. "$here/bench/rtla-guest.sh"
rtla_where vs-rtla-osnoise osnoise "ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} THRESHOLD_US=${THRESHOLD_US:-5}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${THRESHOLD_US:-5}" "$tmp" <<'PY'
import json, re, statistics, subprocess, sys
from rtla_compare import aa, interleaved, judged

rtbench, rounds, dur, cpu, thresh, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
CLASSES = ["HW", "IRQ", "softirq", "thread"]

def rtla():
    out = subprocess.run(["rtla", "osnoise", "top", "-q", "-c", cpu, "-d", f"{dur}s", "-T", thresh, "-P", "f:95",
                          "-p", "1000000", "-r", "900000"], capture_output=True, text=True, check=True).stdout
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for line in out.splitlines():
        f = line.split()
        # CPU, #periods, Runtime, Noise, % CPU Aval, Max Noise, Max Single, HW, NMI, IRQ, Softirq, Thread
        if len(f) == 12 and f[0] == cpu and f[1].startswith("#"):
            runtime_us, noise_us = float(f[2]), float(f[3])
            per_s = runtime_us / 1e6
            counts = {"HW": int(f[7]), "IRQ": int(f[9]), "softirq": int(f[10]), "thread": int(f[11])}
            return {"noise_per_s": noise_us / per_s, "avail": float(f[4]), "max_single": float(f[6]),
                    "per_s": {c: n / per_s for c, n in counts.items()}, "nmi_per_s": int(f[8]) / per_s}
    raise SystemExit(f"no line for CPU {cpu} in rtla's output:\n{out}")

def ours():
    cmd = [rtbench, "noise", "--classify", "--threshold", thresh, "-a", cpu, "-D", f"{dur}s", "-q",
           "--db", f"{tmp}/rtbench.db"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    run = re.search(r"stored as run (\d+)", out).group(1)
    doc = json.loads(subprocess.run([rtbench, "export", run, "--db", f"{tmp}/rtbench.db"], capture_output=True,
                                    text=True, check=True).stdout)
    noise = doc["run"]["params"]["noise"][0]
    per_s = noise["measured_ns"] / 1e9
    events = doc["run"]["params"]["classify"]["threads"][0]["interference"]
    counts, share = {}, {}
    for line in out.splitlines():
        # The class table: class, gaps, gaps/s, noise µs, share, max µs[, most noise].
        f = line.replace("HW/hypervisor", "HW").split()
        if len(f) >= 6 and f[0] in CLASSES and f[4].endswith("%"):
            counts[f[0]], share[f[0]] = int(f[1]), float(f[4][:-1])
    assert set(counts) == set(CLASSES), f"no class table in:\n{out}"
    counts.update({"IRQ": events["irq"], "softirq": events["softirq"], "thread": events["thread"]})
    return {"noise_per_s": noise["noise_ns"] / 1e3 / per_s, "avail": noise["available_percent"],
            "max_single": doc["threads"][0]["max_ns"] / 1e3, "per_s": {c: n / per_s for c, n in counts.items()},
            "share": share}

TOOLS = {"rtla osnoise": rtla, "rtbench noise --classify": ours}
print(f"load average in the guest at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
runs = interleaved(TOOLS, rounds, lambda t, x: f"{t} {x['noise_per_s']:.0f} µs/s")

med = statistics.median
STATS = [("noise µs/s", lambda x: x["noise_per_s"]), ("max single µs", lambda x: x["max_single"])] + [
    (f"{c}/s{' *' if c == 'HW' else ''}", (lambda c: lambda x: x["per_s"][c])(c)) for c in CLASSES]

print(f"\nOS noise on CPU {cpu}, threshold {thresh} µs, {dur} s a run, {rounds} rounds (median over rounds)")
print(f"{'':18}{'rtla':>10}{'rtbench':>10}{'ratio':>8}{'wider A/A':>12}{'':>5}{'rtla A/A':>13}{'rtbench A/A':>13}")
ours_name, rtla_name = "rtbench noise --classify", "rtla osnoise"
for name, get in STATS:
    a, b = med(get(x) for x, _ in runs[rtla_name]), med(get(x) for x, _ in runs[ours_name])
    if a == 0 and b == 0:
        print(f"{name:18}{a:10.1f}{b:10.1f}{'-':>8}  (none in either)")
        continue
    ratio = b / a if a else float("nan")
    spread = lambda v: f"{min(v):.2f}-{max(v):.2f}" if v else "-"
    mine, theirs = aa(runs[ours_name], get), aa(runs[rtla_name], get)
    print(f"{name:18}{a:10.1f}{b:10.1f}{ratio:8.2f}{judged(ratio, mine, theirs)}{spread(theirs):>13}{spread(mine):>13}")
print("* close, not one quantity: rtla counts a noise sample no event explains, rtbench a gap no event\n"
      "  covers half of (HW/hypervisor)")
print(f"{'% CPU available':18}{med(x['avail'] for x, _ in runs[rtla_name]):10.3f}{med(x['avail'] for x, _ in runs[ours_name]):10.3f}")
print(f"{'NMI/s (rtla)':18}{med(x['nmi_per_s'] for x, _ in runs[rtla_name]):10.1f}")
print("rtbench's share of the noise time: " + ", ".join(
    f"{c} {med(x['share'][c] for x, _ in runs[ours_name]):.1f}%" for c in CLASSES))
print(f"load average in the guest at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
