#!/usr/bin/env bash
# rtbench's OS noise beside rtla osnoise's, on a kernel with the osnoise tracer, the same CPU,
# threshold and priority, in interleaved rounds (the sibling of vs-rtla.sh).
#
#   bench/vs-rtla-osnoise.sh                  on a host whose kernel has the tracer (root, rtla)
#   GUEST=VMLINUZ bench/vs-rtla-osnoise.sh    boots VMLINUZ with virtme-ng (2 vCPUs, TCG) on this
#                                             root file system and runs itself inside
#
#   ROUNDS=5 DURATION=10 CPU=1 THRESHOLD_US=5 RTBENCH=target/release/rtbench
#   PLAIN=1      also `rtbench noise` without --classify, held against rtla and oslat: the CPU's
#                noise with nothing of rtbench's in its gaps; and what the classification adds
#                (with bpftool, beside its programs' own run time from the kernel's statistics)
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
# - HW per second: a noise sample in which no IRQ, softirq or thread ran (rtla's HW; rtbench's
#   `interference.hw`); rtbench's HW/hypervisor class, printed apart, also takes the gaps whose
#   events explain less than half of them;
# - the time per class per second: rtla's from the osnoise tracer's own events, taken in a
#   tracefs instance of this script's while rtla runs (irq_noise, softirq_noise, thread_noise
#   durations; HW: the sample_threshold samples with no interference, whole), rtbench's from
#   `interference.time`, added up the same way;
# - rtbench's share of the noise time per class, which rtla's top does not give;
# - "less own": rtbench's noise less its BPF programs' own time on the CPU (`programs_ns`), which
#   they spend inside the gaps they classify.
# Where rt-tests' oslat is installed it runs too (same CPU, priority and duration, RT throttling
# off while it runs): a user-space busy loop like rtbench's, where rtla's is a kernel thread, so
# what both user-space loops see and the kernel's does not is the loop's kind, not rtbench.
# Both tools' A/A spreads are printed; the ratio is judged against the wider, taken both ways.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
. "$here/bench/rtla-guest.sh"
rtla_where vs-rtla-osnoise osnoise "ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} THRESHOLD_US=${THRESHOLD_US:-5} PLAIN=${PLAIN:-0}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${THRESHOLD_US:-5}" "$tmp" "${PLAIN:-0}" <<'PY'
import json, os, re, statistics, subprocess, sys
from bpf_cost import print_cost, programs_cost
from rtla_compare import aa, interleaved, judged

rtbench, rounds, dur, cpu, thresh, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
PLAIN = sys.argv[7] == "1"
CLASSES = ["HW", "IRQ", "softirq", "thread"]

TRACING = "/sys/kernel/tracing"
NOISE_EVENTS = {"irq_noise": "IRQ", "softirq_noise": "softirq", "thread_noise": "thread"}

def osnoise_time(run):
    """Runs `run()` with the osnoise tracer's noise events on in a tracefs instance of this
    script's (removed after) and returns its result and the ns of each class on the CPU as
    those events give them: irq_noise, softirq_noise and thread_noise durations (each context's
    own time), and HW as the samples over the threshold in which nothing ran, whole."""
    inst = f"{TRACING}/instances/vs_rtla_osnoise"
    if os.path.isdir(inst):
        os.rmdir(inst)  # left by a run that was killed
    os.mkdir(inst)
    try:
        open(f"{inst}/buffer_size_kb", "w").write("16384")
        for e in [*NOISE_EVENTS, "sample_threshold"]:
            open(f"{inst}/events/osnoise/{e}/enable", "w").write("1")
        result = run()
        open(f"{inst}/tracing_on", "w").write("0")
        text = open(f"{inst}/trace").read()
        overrun = re.search(r"overrun: (\d+)", open(f"{inst}/per_cpu/cpu{cpu}/stats").read())
    finally:
        os.rmdir(inst)
    if overrun and int(overrun.group(1)):
        raise SystemExit(f"osnoise's events overran the instance's buffer: {overrun.group(1)} lost")
    ns = {c: 0 for c in CLASSES}
    for m in re.finditer(r"\[(\d+)\] \S+ +[\d.]+: (\w+): .*? duration (\d+) ns(?: interference (\d+))?", text):
        if int(m.group(1)) != int(cpu):
            continue
        if m.group(2) in NOISE_EVENTS:
            ns[NOISE_EVENTS[m.group(2)]] += int(m.group(3))
        elif m.group(2) == "sample_threshold" and m.group(4) == "0":
            ns["HW"] += int(m.group(3))
    return result, ns

def rtla():
    cmd = ["rtla", "osnoise", "top", "-q", "-c", cpu, "-d", f"{dur}s", "-T", thresh, "-P", "f:95",
           "-p", "1000000", "-r", "900000"]
    out, ns = osnoise_time(lambda: subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for line in out.splitlines():
        f = line.split()
        # CPU, #periods, Runtime, Noise, % CPU Aval, Max Noise, Max Single, HW, NMI, IRQ, Softirq, Thread
        if len(f) == 12 and f[0] == cpu and f[1].startswith("#"):
            runtime_us, noise_us = float(f[2]), float(f[3])
            per_s = runtime_us / 1e6
            counts = {"HW": int(f[7]), "IRQ": int(f[9]), "softirq": int(f[10]), "thread": int(f[11])}
            return {"noise_per_s": noise_us / per_s, "avail": float(f[4]), "max_single": float(f[6]),
                    "per_s": {c: n / per_s for c, n in counts.items()}, "nmi_per_s": int(f[8]) / per_s,
                    "time_per_s": {c: n / 1e3 / per_s for c, n in ns.items()}}
    raise SystemExit(f"no line for CPU {cpu} in rtla's output:\n{out}")

def rtbench_noise(*flags):
    """Runs `rtbench noise` with `flags`; its output, its run's export and seconds measured."""
    cmd = [rtbench, "noise", *flags, "--threshold", thresh, "-a", cpu, "-D", f"{dur}s", "-q", "--db", f"{tmp}/rtbench.db"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    run = re.search(r"stored as run (\d+)", out).group(1)
    doc = json.loads(subprocess.run([rtbench, "export", run, "--db", f"{tmp}/rtbench.db"], capture_output=True,
                                    text=True, check=True).stdout)
    return out, doc, doc["run"]["params"]["noise"][0]["measured_ns"] / 1e9

def plain():
    """rtbench's loop without the classification: what its BPF programs add."""
    _, doc, per_s = rtbench_noise()
    noise = doc["run"]["params"]["noise"][0]
    return {"noise_per_s": noise["noise_ns"] / 1e3 / per_s, "max_single": doc["threads"][0]["max_ns"] / 1e3,
            "gaps_per_s": doc["threads"][0]["count"] / per_s}

def ours():
    out, doc, per_s = rtbench_noise("--classify")
    noise = doc["run"]["params"]["noise"][0]
    events = doc["run"]["params"]["classify"]["threads"][0]["interference"]
    counts, share = {}, {}
    for line in out.splitlines():
        # The class table: class, gaps, gaps/s, noise µs, share, max µs[, most noise].
        f = line.replace("HW/hypervisor", "HW").split()
        if len(f) >= 6 and f[0] in CLASSES and f[4].endswith("%"):
            counts[f[0]], share[f[0]] = int(f[1]), float(f[4][:-1])
    assert set(counts) == set(CLASSES), f"no class table in:\n{out}"
    hw_class, class_counts = counts["HW"], list(counts.values())
    counts.update({"IRQ": events["irq"], "softirq": events["softirq"], "thread": events["thread"]})
    # osnoise's HW: gaps in which nothing ran (builds before it was counted: the wider class).
    counts["HW"] = events.get("hw", hw_class)
    return {"noise_per_s": noise["noise_ns"] / 1e3 / per_s, "avail": noise["available_percent"],
            "max_single": doc["threads"][0]["max_ns"] / 1e3, "per_s": {c: n / per_s for c, n in counts.items()},
            "share": share, "hw_class_per_s": hw_class / per_s, "gaps_per_s": sum(class_counts) / per_s,
            "time_per_s": {c: events["time"][k] / 1e3 / per_s for c, k in zip(CLASSES, ["hw", "irq", "softirq", "thread"])},
            "own_per_s": doc["run"]["params"]["classify"].get("programs_ns", 0) / 1e3 / per_s}

def oslat():
    """oslat (rt-tests): a user-space busy loop as rtbench's, where rtla's is a kernel thread.
    Its histogram has 1 µs buckets (bucket k: [k-1, k) µs) up to 1024, the last holding every
    longer gap; those are counted at 1023 µs, a floor (their count is printed). It never pauses,
    so RT throttling is off while it runs (put back after)."""
    knob = "/proc/sys/kernel/sched_rt_runtime_us"
    old = open(knob).read().strip()
    try:
        open(knob, "w").write("-1")
        subprocess.run(["oslat", "-c", cpu, "-C", "0", "-D", dur, "-f", "95", "-b", "1024", "-q",
                        f"--json={tmp}/oslat.json"], capture_output=True, text=True, check=True)
    finally:
        open(knob, "w").write(old)
    t = json.load(open(f"{tmp}/oslat.json"))["thread"]["0"]
    over = {int(k): n for k, n in t["histogram"].items() if int(k) - 1 >= float(thresh)}
    noise_us = sum(n * (k - 0.5 if k < 1024 else 1023) for k, n in over.items())
    return {"noise_per_s": noise_us / t["duration"], "max_single": float(t["max"]),
            "gaps_per_s": sum(over.values()) / t["duration"], "floored": over.get(1024, 0)}

TOOLS = {"rtla osnoise": rtla, "rtbench noise --classify": ours}
if subprocess.run(["sh", "-c", "command -v oslat"], capture_output=True).returncode == 0:
    TOOLS["oslat"] = oslat
else:
    print("no oslat here (rt-tests): rtbench is held against rtla only")
if PLAIN:
    TOOLS["rtbench noise"] = plain
print(f"load average in the guest at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
runs = interleaved(TOOLS, rounds, lambda t, x: f"{t} {x['noise_per_s']:.0f} µs/s")

med = statistics.median
spread = lambda v: f"{min(v):.2f}-{max(v):.2f}" if v else "-"
# Less own: rtbench's noise less its classification's programs' own time (they run inside the
# gaps they classify); rtla's as it is.
STATS = [("noise µs/s", lambda x: x["noise_per_s"]), ("less own µs/s", lambda x: x["noise_per_s"] - x.get("own_per_s", 0)),
         ("max single µs", lambda x: x["max_single"])] + [
    (f"{c}/s", (lambda c: lambda x: x["per_s"][c])(c)) for c in CLASSES] + [
    (f"{c} µs/s", (lambda c: lambda x: x["time_per_s"][c])(c)) for c in CLASSES]

print(f"\nOS noise on CPU {cpu}, threshold {thresh} µs, {dur} s a run, {rounds} rounds (median over rounds)")
print(f"{'':18}{'rtla':>10}{'rtbench':>10}{'ratio':>8}{'wider A/A':>12}{'':>5}{'rtla A/A':>13}{'rtbench A/A':>13}")
ours_name, rtla_name = "rtbench noise --classify", "rtla osnoise"
for name, get in STATS:
    a, b = med(get(x) for x, _ in runs[rtla_name]), med(get(x) for x, _ in runs[ours_name])
    if a == 0 and b == 0:
        print(f"{name:18}{a:10.1f}{b:10.1f}{'-':>8}  (none in either)")
        continue
    ratio = b / a if a else float("nan")
    mine, theirs = aa(runs[ours_name], get), aa(runs[rtla_name], get)
    print(f"{name:18}{a:10.1f}{b:10.1f}{ratio:8.2f}{judged(ratio, mine, theirs)}{spread(theirs):>13}{spread(mine):>13}")
print(f"{'HW/hypervisor/s':18}{'':>10}{med(x['hw_class_per_s'] for x, _ in runs[ours_name]):10.1f}"
      "  rtbench's class: also the gaps whose events explain less than half of them")
print(f"{'% CPU available':18}{med(x['avail'] for x, _ in runs[rtla_name]):10.3f}{med(x['avail'] for x, _ in runs[ours_name]):10.3f}")
print(f"{'NMI/s (rtla)':18}{med(x['nmi_per_s'] for x, _ in runs[rtla_name]):10.1f}")
print("rtbench's share of the noise time: " + ", ".join(
    f"{c} {med(x['share'][c] for x, _ in runs[ours_name]):.1f}%" for c in CLASSES))
if "oslat" in runs:
    print(f"\nAgainst oslat, a user-space busy loop as rtbench's ({sum(x['floored'] for x, _ in runs['oslat'])} "
          "gaps over 1 ms in its runs, counted at 1023 µs)")
    print(f"{'':18}{'oslat':>10}{'rtbench':>10}{'ratio':>8}{'wider A/A':>12}{'':>5}{'oslat A/A':>13}{'rtbench A/A':>13}")
    for name, get in STATS[:3] + [("gaps/s", lambda x: x["gaps_per_s"])]:
        a, b = med(get(x) for x, _ in runs["oslat"]), med(get(x) for x, _ in runs[ours_name])
        ratio = b / a if a else float("nan")
        mine, theirs = aa(runs[ours_name], get), aa(runs["oslat"], get)
        print(f"{name:18}{a:10.1f}{b:10.1f}{ratio:8.2f}{judged(ratio, mine, theirs)}{spread(theirs):>13}{spread(mine):>13}")
if PLAIN:
    # The CPU's noise as rtbench's loop sees it with nothing of rtbench's in its gaps: the
    # figure to hold against rtla's and oslat's; the classified one adds the classification's cost.
    print("\nrtbench noise without --classify (plain) beside the classified run, rtla and oslat")
    others = [("rtla", rtla_name)] + ([("oslat", "oslat")] if "oslat" in runs else [])
    print(f"{'':18}{'plain':>10}{'classify':>10}{'ratio':>8}{'wider A/A':>12}{'':>5}"
          + "".join(f"{label:>10}{'plain/' + label:>13}{'wider A/A':>12}{'':>5}" for label, _ in others))
    plain_stats = STATS[:1] + STATS[2:3] + [("gaps/s", lambda x: x["gaps_per_s"])]
    for name, get in plain_stats:
        p, c = med(get(x) for x, _ in runs["rtbench noise"]), med(get(x) for x, _ in runs[ours_name])
        row = f"{name:18}{p:10.1f}{c:10.1f}{c / p:8.2f}{judged(c / p, aa(runs[ours_name], get), aa(runs['rtbench noise'], get))}"
        for _, other in others:
            if name == "gaps/s" and other == rtla_name:
                row += f"{'':>40}"  # rtla counts interfering events, not gaps
                continue
            o = med(get(x) for x, _ in runs[other])
            row += f"{o:10.1f}{p / o:13.2f}{judged(p / o, aa(runs['rtbench noise'], get), aa(runs[other], get))}"
        print(row)
# What the classification's programs take: they run inside the gaps they classify.
cost = programs_cost([rtbench, "noise", "--classify", "--threshold", thresh, "-a", cpu, "-D", "14s", "-q",
                      "--db", f"{tmp}/rtbench.db"])
print_cost(cost)
if cost and PLAIN:
    extra = med(x["noise_per_s"] for x, _ in runs[ours_name]) - med(x["noise_per_s"] for x, _ in runs["rtbench noise"])
    print(f"classified minus plain noise: {extra:.0f} µs/s, beside the programs' {sum(t for *_, t in cost) / 1e3:.0f} µs/s")
print(f"load average in the guest at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
