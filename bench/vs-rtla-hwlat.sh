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
#   KEEP=DIR     keeps each run's raw output there (hwlat's trace, rtbench's table and export)
#
# Debian 12's rtla (6.1) has no hwlat command, so the tracer is driven through tracefs as rtla
# would: `hwlat_detector/width` 900 ms of every 1 s `window` (rtbench's noise thread pauses
# under the same RT throttling budget), `tracing_thresh` the threshold, `tracing_cpumask` the
# CPU, then every setting put back. hwlat spins with interrupts off; rtbench's thread spins with
# them on and counts a gap as HW when no IRQ, softirq or thread ran in it.
#
# What is compared: per second of measured time (hwlat's 900 ms of each window, rtbench's time
# between its pauses), how often a gap of the threshold or more occurs (hwlat's `count:`, the
# gaps over the threshold in a window, summed over its samples, or one a sample on kernels that
# lack it; rtbench's gaps in which nothing ran), and the longest (hwlat's larger of inner/outer;
# rtbench's longest HW/hypervisor gap). hwlat reports one sample per window, rtbench every gap.
# In a guest both loops read the TSC without leaving it (rtla-guest.sh keeps the guest's clock
# on it); hwlat's interrupts stay off, so an interrupt the emulator is slow to deliver is
# rtbench's alone, while a stall inside an interrupt handler is hwlat's HW and rtbench's IRQ.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
. "$here/bench/rtla-guest.sh"
rtla_where vs-rtla-hwlat hwlat "ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} THRESHOLD_US=${THRESHOLD_US:-10} KEEP=${KEEP:-}" no-rtla
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${THRESHOLD_US:-10}" "$tmp" "${KEEP:-}" <<'PY'
import json, os, re, statistics, subprocess, sys, time
from rtla_compare import aa, interleaved, judged

spread = lambda v: f"{min(v):.2f}-{max(v):.2f}" if v else "-"


def kept(name, text):
    """Keeps one run's raw output in KEEP, if given."""
    if keep:
        try:
            open(f"{keep}/{name}", "w").write(text)
        except OSError as e:
            print(f"  not kept: {e}", file=sys.stderr)

rtbench, rounds, dur, cpu, thresh, tmp, keep = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
if int(thresh) < 2:
    sys.exit("vs-rtla-hwlat: THRESHOLD_US must be at least 2 (hwlat is given one less, see below)")
T = "/sys/kernel/tracing/"
WIDTH, WINDOW = 900000, 1000000
SETTINGS = ["tracing_on", "current_tracer", "tracing_thresh", "hwlat_detector/width", "hwlat_detector/window",
            "tracing_cpumask"] + (["hwlat_detector/mode"] if os.path.exists(T + "hwlat_detector/mode") else [])

def put(f, v):
    with open(T + f, "w") as fh:
        fh.write(str(v))

def hwlat():
    saved = {f: open(T + f).read().strip().split("[")[-1].split("]")[0] if f.endswith("mode") else open(T + f).read().strip()
             for f in SETTINGS}
    try:
        put("tracing_on", 0); put("current_tracer", "nop")
        # hwlat cuts each gap to whole µs before it compares (`diff > thresh`), so it counts gaps
        # of thresh + 1 µs and more; given one less, it counts gaps from thresh µs on, as rtbench
        # does (a gap over thresh µs), not leaving out those between thresh and thresh + 1 µs.
        put("tracing_thresh", int(thresh) - 1); put("hwlat_detector/window", WINDOW); put("hwlat_detector/width", WIDTH)
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
    kept(f"hwlat-{time.strftime('%H%M%S')}.trace", text)
    # `count:` is preceded by a space; `nmi-count:` (NMIs in the window) is not a gap count.
    samples = [(int(m[1]), int(m[2]), int(c[1]) if (c := re.search(r"\scount:(\d+)", m[0])) else 1) for m in
               re.finditer(r"inner/outer\(us\):\s*(\d+)/\s*(\d+).*$", text, re.M)]
    for s in samples:
        if max(s[:2]) > 1000:
            print(f"  hwlat window with a gap of {max(s[:2]) / 1000:.1f} ms", file=sys.stderr, flush=True)
    per_s = float(dur) * WIDTH / WINDOW
    return {"per_s": sum(s[2] for s in samples) / per_s, "max": max((max(s[:2]) for s in samples), default=0),
            "samples": len(samples)}

def ours():
    cmd = [rtbench, "noise", "--classify", "--threshold", thresh, "-a", cpu, "-D", f"{dur}s", "-q",
           "--db", f"{tmp}/rtbench.db"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=3 * float(dur) + 120).stdout
    except subprocess.TimeoutExpired as e:
        # A run that does not end says where it is stuck before the comparison gives up.
        stacks = subprocess.run(f"for t in /proc/$(pgrep -x rtbench | head -1)/task/*; do echo $t; cat $t/comm "
                                "$t/wchan; echo; cat $t/stack; done; dmesg | tail -30", shell=True,
                                capture_output=True, text=True).stdout
        raise SystemExit(f"rtbench noise did not end in {e.timeout:.0f} s:\n{stacks}")
    run = re.search(r"stored as run (\d+)", out).group(1)
    exported = subprocess.run([rtbench, "export", run, "--db", f"{tmp}/rtbench.db"], capture_output=True,
                              text=True, check=True).stdout
    doc = json.loads(exported)
    kept(f"rtbench-{run}.txt", out)
    kept(f"rtbench-{run}.json", exported)
    per_s = doc["run"]["params"]["noise"][0]["measured_ns"] / 1e9
    for g in doc["run"]["params"].get("classify", {}).get("threads", [{}])[0].get("longest", []):
        if g["ns"] > 1e6:
            print(f"  rtbench gap of {g['ns'] / 1e6:.1f} ms at +{g['t_ns'] / 1e9:.3f} s: {g['class']} {g['name']}",
                  file=sys.stderr, flush=True)
    # Gaps in which nothing ran (builds before it was counted: the HW/hypervisor class).
    nothing = doc["run"]["params"]["classify"]["threads"][0]["interference"].get("hw")
    for line in out.splitlines():
        # The class table: class, gaps, gaps/s, noise µs, share, max µs[, most noise].
        f = line.replace("HW/hypervisor", "HW").split()
        if len(f) >= 6 and f[0] == "HW" and f[4].endswith("%"):
            n = int(f[1]) if nothing is None else nothing
            return {"per_s": n / per_s, "max": float(f[5]), "samples": n, "class_per_s": int(f[1]) / per_s}
    raise SystemExit(f"no HW line in rtbench's class table:\n{out}")

def said(name, run):
    """`run`, saying on stderr when it starts (a guest's console shows no other progress)."""
    def go():
        print(f"{time.strftime('%T')}.{int(time.time() * 1000) % 1000:03d} {name}", file=sys.stderr, flush=True)
        return run()
    return go

# With the clock on a source the vDSO cannot read (hpet, acpi_pm: a TCG guest, whose TSC is
# unstable), each of rtbench's clock reads is a system call and an exit to the emulator, while
# hwlat reads the TSC (sched_clock) in the kernel: the two loops do not ask the same of the CPU.
CLOCK = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
print(f"clock source in the guest: {CLOCK}" + ("" if CLOCK in ("tsc", "kvm-clock", "hyperv_clocksource_tsc_page") else
      " (not one the vDSO reads: every rtbench clock read enters the kernel and the emulator; hwlat reads the TSC)"))
TOOLS = {"hwlat": said("hwlat", hwlat), "rtbench noise --classify": said("rtbench", ours)}
print(f"load average in the guest at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
runs = interleaved(TOOLS, rounds, lambda t, x: f"{t} {x['per_s']:.1f}/s max {x['max']:.0f} µs")

med = statistics.median
print(f"\nNoise no kernel context explains on CPU {cpu}, threshold {thresh} µs, {dur} s a run, {rounds} rounds "
      "(median over rounds)")
print(f"{'':18}{'hwlat':>10}{'rtbench':>10}{'ratio':>8}{'hwlat A/A':>12}{'rtbench A/A':>12}{'wider A/A':>12}{'':>5}")
for name, get in [("over thresh/s", lambda x: x["per_s"]), ("max µs", lambda x: x["max"])]:
    a, b = med(get(x) for x, _ in runs["hwlat"]), med(get(x) for x, _ in runs["rtbench noise --classify"])
    ratio = b / a if a else float("nan")
    theirs, ours_ = aa(runs["hwlat"], get), aa(runs["rtbench noise --classify"], get)
    print(f"{name:18}{a:10.1f}{b:10.1f}{ratio:8.2f}{spread(theirs):>12}{spread(ours_):>12}{judged(ratio, ours_, theirs)}")
print(f"{'HW/hypervisor/s':18}{'':>10}{med(x['class_per_s'] for x, _ in runs['rtbench noise --classify']):10.1f}"
      "  rtbench's class: also the gaps whose events explain less than half of them")
print(f"load average in the guest at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
