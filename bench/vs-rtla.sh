#!/usr/bin/env bash
# rtbench's timer latency beside rtla timerlat's, on a kernel with the timerlat tracer, the same
# CPU and period, in interleaved rounds.
#
#   bench/vs-rtla.sh                  on a host whose kernel has the tracer (root, rtla installed)
#   GUEST=VMLINUZ bench/vs-rtla.sh    boots VMLINUZ with virtme-ng (2 vCPUs, TCG: no usable KVM
#                                     here) on this root file system and runs itself inside
#
# Each round runs, in an order that alternates by round, `rtla timerlat hist`, `rtbench timerlat`
# (the kernel's own stamps, read by rtbench) and `rtbench timer --split` (rtbench's own thread,
# its IRQ part from BPF), each twice: the second against the first is that tool's A/A, what the
# machine's noise alone makes of a ratio. It prints, for IRQ and thread latency, each tool's
# median over the rounds of its median, p99 and max, the ratio to rtla's, and the spread of each
# tool's own A/A ratios. A ratio inside the larger A/A spread is agreement. With HOG=1 (the
# default) rtla also runs beside a busy loop on another CPU: under TCG, work on one vCPU delays
# the others, and each tool's own CPU time (shown) is such work.
#
#   ROUNDS=5 DURATION=10 CPU=1 PERIOD_US=1000 BUCKET_US=1 RANGE_MS=100 HOG=1 RTBENCH=target/release/rtbench
#   RTLA=rtla
#
# Where that rtla has user-space threads (`-u`, rtla 6.7 on) and the kernel lets them measure
# (`osnoise/per_cpu/cpuN/timerlat_fd`, kernels 6.7 on: Debian's 6.12 RT kernel, not its 6.1),
# `rtla timerlat hist -u` runs too: its thread is a user-space process as rtbench's sleeper is,
# and rtla gives that thread's latency twice, when it runs in the kernel (thread) and when it
# has gone back to user space and asks again (usr). rtbench's sleeper reads its clock in user
# space, between the two: its thread latency is held against both. rtla's own thread (the
# kernel's) is then asked for with -k, the default of these rtla versions being -u.
#
# rtla prints only the buckets that hold a sample, and counts a sample past its last bucket in
# `over:` (and in `count:`), not in any row. Its percentiles here are taken over every sample it
# counted: the rows plus `over`, checked against its `count:` line; a percentile that falls among
# the `over` samples is shown as unknown (inf), never as the last bucket. The buckets are
# BUCKET_US wide (1: rtla's own resolution, it truncates to the µs) and reach RANGE_MS, past
# TCG's tails; a sample is read as its bucket's middle. rtbench's percentiles are its own (3
# significant digits). Under TCG the latencies are the emulator's: only the agreement means
# something. The load average is printed before and after: the interleaving keeps the
# comparison fair on a shared machine, not the absolute numbers.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
. "$here/bench/rtla-guest.sh"
rtla_where vs-rtla timerlat "RTLA=${RTLA:-rtla} ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} PERIOD_US=${PERIOD_US:-1000} BUCKET_US=${BUCKET_US:-1} RANGE_MS=${RANGE_MS:-100} HOG=${HOG:-1}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/bench" python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${PERIOD_US:-1000}" "${BUCKET_US:-1}" "${RANGE_MS:-100}" "$tmp" <<'PY'
import os, re, resource, statistics, subprocess, sys
from rtla_compare import aa, judged

rtbench, rounds, dur, cpu, period, bucket, range_ms, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
entries = range_ms * 1000 // bucket
OVER = float("inf")  # a percentile among rtla's `over` samples: past the range, value unknown

def quantile(rows, over, q):
    """The q-quantile of bucketed samples (rows: (lower bound, count), over: past the last bucket),
    the sample of rank floor(n*q) (0-based) as rtbench's own sorted-list rule, read as its
    bucket's middle."""
    n = sum(c for _, c in rows) + over
    rank, seen = min(n - 1, int(n * q)), 0
    for lower, c in sorted(rows):
        seen += c
        if seen > rank:
            return lower + bucket / 2
    return OVER

RTLA = os.environ.get("RTLA", "rtla")
def has_user_threads():
    """Whether this rtla has user-space threads and the kernel lets them measure."""
    usage = subprocess.run([RTLA, "timerlat", "hist", "-h"], capture_output=True, text=True)
    fd = f"/sys/kernel/tracing/osnoise/per_cpu/cpu{cpu}/timerlat_fd"
    return "--user-threads" in usage.stdout + usage.stderr and os.path.exists(fd)
USER = has_user_threads()

def rtla(mode=None):
    """rtla timerlat hist's result; mode: "-u" (user-space threads: IRQ, thread, usr), "-k"
    (the kernel's threads, where -u is the default), None (an rtla without either)."""
    out = subprocess.run([RTLA, "timerlat", "hist", "-c", cpu, "-d", f"{dur}s", "-p", period, "-b", str(bucket),
                          "-E", str(entries), *([mode] if mode else [])], capture_output=True, text=True,
                         check=True).stdout
    sides = ["irq", "thread", "usr"] if mode == "-u" else ["irq", "thread"]
    rows = {side: [] for side in sides}
    summary = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 1 + len(sides) and f[0].isdigit():
            for i, side in enumerate(sides):
                rows[side].append((int(f[0]), int(f[1 + i])))
        elif len(f) == 1 + len(sides) and f[0].endswith(":"):
            summary[f[0][:-1]] = f[1:]
    res = {}
    for i, side in enumerate(sides):
        over, count = int(summary["over"][i]), int(summary["count"][i])
        in_rows = sum(c for _, c in rows[side])
        # rtla's own count is every sample it took: the rows and `over` must add up to it.
        assert in_rows + over == count, f"rtla {side}: rows {in_rows} + over {over} != count {count}:\n{out}"
        if over:
            print(f"  rtla {side}: {over} of {count} samples past {range_ms} ms (over)", flush=True)
        q = [quantile(rows[side], over, x) for x in (0.5, 0.99)]
        res[side] = (q[0], q[1], float(summary["max"][i]), count)
    return res

def ours(args):
    # Quiet, as rtla's hist is until its end: a live display is console output from the guest
    # during the run, work rtla does not do.
    cmd = [rtbench, *args, "-a", cpu, "-D", f"{dur}s", "-q", "--db", f"{tmp}/rtbench.db"]
    ran = subprocess.run(cmd, capture_output=True, text=True)
    if ran.returncode != 0:
        # Said, and tried once more: one failed run must not lose the rounds before it.
        print(f"  {' '.join(args)} failed ({ran.returncode}): {ran.stderr.strip()}; once more", flush=True)
        ran = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out = ran.stdout
    res = {}
    for line in out.splitlines():
        # The percentile table: "0" or "0 IRQ", samples, mean, stddev, p50, p90, p99, ..., p100.
        f = line.split()
        side = "irq" if f[1:2] == ["IRQ"] else "thread"
        nums = f[2:] if side == "irq" else f[1:]
        if f[:1] == ["0"] and len(nums) == 11 and all(re.fullmatch(r"[\d.]+", x) for x in nums):
            res[side] = (float(nums[3]), float(nums[5]), float(nums[10]), int(nums[0]))
    assert "irq" in res and "thread" in res, f"no IRQ and thread rows in: {out}"
    return res

def measured(tool):
    """tool's result with the CPU time (user + system, s) its processes took: the work a tool
    does beside the kernel's thread, on the other CPUs."""
    def run():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = tool()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        res["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return res
    return run

def beside_a_hog(tool):
    """tool while a busy loop at SCHED_OTHER holds one other CPU: what work off the measured CPU
    alone makes of the latencies (under TCG, a busy vCPU takes host time from the measured one)."""
    others = sorted(os.sched_getaffinity(0) - {int(cpu)})
    def run():
        hog = subprocess.Popen(["taskset", "-c", str(others[0]), "sh", "-c", "while :; do :; done"])
        try:
            return tool()
        finally:
            hog.kill()
            hog.wait()
    return run

TOOLS = {
    "rtla": measured(lambda: rtla("-k" if USER else None)),
    "rtbench timerlat": measured(lambda: ours(["timerlat", "-i", period])),
    "rtbench timer --split": measured(lambda: ours(["timer", "--split", "-i", period])),
}
if USER:
    TOOLS["rtla -u"] = measured(lambda: rtla("-u"))
if os.environ.get("HOG", "1") == "1" and len(os.sched_getaffinity(0)) > 1:
    TOOLS["rtla, other CPU busy"] = beside_a_hog(TOOLS["rtla"])
def load():
    return open("/proc/loadavg").read().split()[:3]

# The guest's load average is the guest's; the host's is what the other builds make of the
# emulator, and only the caller can see it.
print(f"load average in the guest at the start: {' '.join(load())}", flush=True)
runs = {t: [] for t in TOOLS}  # per round: (first, second)
for r in range(rounds):
    order = list(TOOLS) if r % 2 == 0 else list(reversed(TOOLS))
    first = {}
    for t in order:
        first[t] = TOOLS[t]()
    for t in reversed(order):
        runs[t].append((first[t], TOOLS[t]()))
    print(f"round {r + 1} of {rounds}: " + "; ".join(
        f"{t} irq p50/p99 {runs[t][-1][0]['irq'][0]:.0f}/{runs[t][-1][0]['irq'][1]:.0f}, "
        f"thread {runs[t][-1][0]['thread'][0]:.0f}/{runs[t][-1][0]['thread'][1]:.0f} µs" for t in TOOLS), flush=True)

med = statistics.median
pick = lambda side, k: lambda x: x[side][k]  # statistic k (0: p50, 1: p99) of one side of a result

print(f"\nIRQ and thread latency on CPU {cpu}, period {period} µs, {dur} s a run, {rounds} rounds (µs; median over rounds)")
print(f"{'tool':24}{'side':8}{'p50':>10}{'p99':>10}{'max':>10}{'n':>8}{'CPU s':>8}")
for side in ["irq", "thread", "usr"]:
    for t in [t for t in TOOLS if side in runs[t][0][0]]:
        vals = [med(a[side][k] for a, _ in runs[t]) for k in range(4)]
        cpu_s = med(a["cpu"] for a, _ in runs[t])
        print(f"{t:24}{side:8}{vals[0]:10.1f}{vals[1]:10.1f}{vals[2]:10.1f}{vals[3]:8.0f}{cpu_s:8.1f}")
print(f"\nagainst rtla: ratio of the medians over rounds, beside the wider of the two tools' A/A spreads")
print(f"{'tool':24}{'side':8}{'p50/rtla':>10}{'A/A p50':>12}{'':>5}{'p99/rtla':>10}{'A/A p99':>12}")
for side in ["irq", "thread"]:
    ref = [med(a[side][k] for a, _ in runs["rtla"]) for k in range(2)]
    for t in [t for t in TOOLS if t != "rtla"]:
        cells = []
        for k in range(2):
            ratio = med(a[side][k] for a, _ in runs[t]) / ref[k] if ref[k] else float("nan")
            cells.append(f"{ratio:10.2f}{judged(ratio, aa(runs[t], pick(side, k)), aa(runs['rtla'], pick(side, k)))}")
        print(f"{t:24}{side:8}{cells[0]}{cells[1]}")
if USER:
    # The same kind of thread: rtbench's sleeper against rtla's user-space one, in the kernel and
    # back in user space.
    split, them = "rtbench timer --split", "rtla -u"
    print(f"\n{split}'s thread latency against {them}'s thread, in the kernel (thread) and back in user space (usr)")
    print(f"{'':32}{'p50 ratio':>10}{'A/A p50':>12}{'':>5}{'p99 ratio':>10}{'A/A p99':>12}")
    for side in ["thread", "usr"]:
        cells = []
        for k in range(2):
            ratio = med(a["thread"][k] for a, _ in runs[split]) / med(a[side][k] for a, _ in runs[them])
            cells.append(f"{ratio:10.2f}{judged(ratio, aa(runs[split], pick('thread', k)), aa(runs[them], pick(side, k)))}")
        print(f"{'against ' + side:32}{cells[0]}{cells[1]}")
print(f"rtla's percentiles: its {bucket} µs buckets' middles over every sample it counted; inf: among its `over`")
print(f"load average in the guest at the end: {' '.join(load())}")
PY
