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
# tool's own A/A ratios. A ratio inside the larger A/A spread is agreement.
#
#   ROUNDS=5 DURATION=10 CPU=1 PERIOD_US=1000 BUCKET_US=10 RTBENCH=target/release/rtbench
#
# rtla's percentiles come from its buckets (BUCKET_US wide, each sample read as its bucket's
# lower bound, as rtbench's import reads them); rtbench's are its own (3 significant digits).
# Under TCG the latencies are the emulator's: only the agreement means something.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "vs-rtla: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
if [ -n "${GUEST:-}" ]; then
    [ -r "$GUEST" ] || { echo "vs-rtla: GUEST=$GUEST is not a readable kernel image" >&2; exit 2; }
    command -v vng >/dev/null || { echo "vs-rtla: virtme-ng (vng) is not installed; scripts/setup.sh installs it" >&2; exit 2; }
    env="ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} CPU=${CPU:-1} PERIOD_US=${PERIOD_US:-1000} BUCKET_US=${BUCKET_US:-10} RTBENCH=$RTBENCH"
    exec vng -r "$GUEST" --disable-kvm --cpus 2 --exec "env $env $here/bench/vs-rtla.sh"
fi
command -v rtla >/dev/null || { echo "vs-rtla: rtla is not installed (apt-get install rtla)" >&2; exit 2; }
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
grep -qw timerlat /sys/kernel/tracing/available_tracers || { echo "vs-rtla: this kernel ($(uname -r)) has no timerlat tracer" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$RTBENCH" "${ROUNDS:-5}" "${DURATION:-10}" "${CPU:-1}" "${PERIOD_US:-1000}" "${BUCKET_US:-10}" "$tmp" <<'PY'
import re, statistics, subprocess, sys

rtbench, rounds, dur, cpu, period, bucket, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7]
entries = 20000 // bucket  # 20 ms of buckets: TCG's tails stay inside

def rtla():
    out = subprocess.run(["rtla", "timerlat", "hist", "-c", cpu, "-d", f"{dur}s", "-p", period, "-b", str(bucket),
                          "-E", str(entries)], capture_output=True, text=True, check=True).stdout
    hist = {"irq": [], "thread": []}
    summary = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[0].isdigit():
            hist["irq"] += [int(f[0])] * int(f[1])
            hist["thread"] += [int(f[0])] * int(f[2])
        elif len(f) == 3 and f[0].endswith(":"):
            summary[f[0][:-1]] = (f[1], f[2])
    if int(summary.get("over", ("0", "0"))[0]) or int(summary.get("over", ("0", "0"))[1]):
        print(f"  rtla: {summary['over']} samples past the last bucket", flush=True)
    res = {}
    for i, side in enumerate(["irq", "thread"]):
        v = sorted(hist[side])
        res[side] = (v[len(v) // 2], v[min(len(v) - 1, int(len(v) * 0.99))], float(summary["max"][i]), len(v))
    return res

def ours(args):
    out = subprocess.run([rtbench, *args, "-a", cpu, "-D", f"{dur}s", "--db", f"{tmp}/rtbench.db"],
                         capture_output=True, text=True, check=True).stdout
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

TOOLS = {
    "rtla": rtla,
    "rtbench timerlat": lambda: ours(["timerlat", "-i", period]),
    "rtbench timer --split": lambda: ours(["timer", "--split", "-i", period]),
}
runs = {t: [] for t in TOOLS}  # per round: (first, second)
for r in range(rounds):
    order = list(TOOLS) if r % 2 == 0 else list(reversed(TOOLS))
    first = {}
    for t in order:
        first[t] = TOOLS[t]()
    for t in reversed(order):
        runs[t].append((first[t], TOOLS[t]()))
    print(f"round {r + 1} of {rounds}: " + "; ".join(
        f"{t} irq/thread p50 {runs[t][-1][0]['irq'][0]:.0f}/{runs[t][-1][0]['thread'][0]:.0f} µs" for t in TOOLS), flush=True)

med = statistics.median
print(f"\nIRQ and thread latency on CPU {cpu}, period {period} µs, {dur} s a run, {rounds} rounds (µs; median over rounds)")
print(f"{'tool':24}{'side':8}{'p50':>9}{'p99':>9}{'max':>9}{'n':>8}{'p50/rtla':>10}{'p99/rtla':>10}{'A/A p50':>14}{'A/A p99':>14}")
for side in ["irq", "thread"]:
    ref = [med(a[side][k] for a, _ in runs["rtla"]) for k in range(3)]
    for t in TOOLS:
        vals = [med(a[side][k] for a, _ in runs[t]) for k in range(4)]
        aa = [[b[side][k] / a[side][k] for a, b in runs[t] if a[side][k]] for k in range(2)]
        spread = [f"{min(x):.2f}-{max(x):.2f}" if x else "-" for x in aa]
        ratio = [vals[k] / ref[k] if ref[k] else float("nan") for k in range(2)]
        print(f"{t:24}{side:8}{vals[0]:9.1f}{vals[1]:9.1f}{vals[2]:9.1f}{vals[3]:8d}{ratio[0]:10.2f}{ratio[1]:10.2f}{spread[0]:>14}{spread[1]:>14}")
print(f"rtla's percentiles are its {bucket} µs buckets' lower bounds; a ratio inside the larger A/A spread is agreement")
PY
