#!/usr/bin/env bash
# `rtbench ipc` and `rtbench deadline` against rt-tests' tools on one ruler that both can be
# read with: the kernel's own scheduler events. rt-tests' ptsematest, sigwaittest, svsematest,
# pmqtest and cyclicdeadline report min, avg and max only, so their medians and p99 cannot be
# compared with rtbench's; here each run (rtbench's or the tool's, same settings, interleaved
# rounds, each tool also against itself) is recorded with `perf sched record`, and the wake-ups
# it cares about are timed from `sched_waking` to the `sched_switch` that runs the woken thread,
# in ns (`perf script --ns`):
#   ipc:      every wake-up of a thread of the pair by the other (the receiver woken by the
#             sender, and the way back), on the pair's CPU;
#   deadline: the kernel's deadline timer (`dl_task_timer`, which gives the thread its runtime
#             back at each period: a yielded deadline thread is not woken, it is replenished)
#             to the next `sched_switch` into a SCHED_DEADLINE thread (prio -1), any CPU.
# Medians and p99 per run, then rtbench/tool and each tool's A/A.
#
#   bench/vs-rt-tests-sched.sh [ROUNDS] [LOOPS] [WAYS]   (defaults: 3 rounds, 5000 wake-ups,
#                                                         "mutex signal sem mq deadline")
#
# Needs root, perf (Debian's linux-perf) and rt-tests; CPU as the pair's CPU (default: the last).
# deadline runs one thread with a 4 ms period for LOOPS/4 periods (cyclicdeadline needs HRTICK
# below 3.3 ms).
set -euo pipefail
ROUNDS=${1:-3}
LOOPS=${2:-5000}
WAYS=${3:-mutex signal sem mq deadline}
CPU=${CPU:-$(( $(nproc) - 1 ))}
RTBENCH=${RTBENCH:-target/release/rtbench}
for t in perf ptsematest sigwaittest svsematest pmqtest cyclicdeadline; do
    command -v "$t" >/dev/null || { echo "vs-rt-tests-sched: $t not found (apt-get install linux-perf rt-tests)" >&2; exit 2; }
done
[ -x "$RTBENCH" ] || { echo "vs-rt-tests-sched: build first (cargo build --release)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tool_of() { case $1 in mutex) echo ptsematest;; signal) echo sigwaittest;; sem) echo svsematest;; mq) echo pmqtest;; deadline) echo cyclicdeadline;; esac; }
periods=$(( LOOPS / 4 ))

record() { # out command...
    perf record -q -a -e sched:sched_waking -e sched:sched_switch -e timer:hrtimer_expire_entry \
        -o "$1.data" -- "${@:2}" >/dev/null 2>&1
    perf script -i "$1.data" --ns -F comm,tid,cpu,time,event,trace 2>/dev/null \
        | grep -E 'sched:sched_(waking|switch):|dl_task_timer' >"$1.txt"
    rm -f "$1.data"
}
ours() { # way out
    if [ "$1" = deadline ]; then
        record "$2" "$RTBENCH" deadline -t 1 -i 4000 -l "$periods" -q --db "$tmp/s.db"
    else
        record "$2" "$RTBENCH" ipc --via "$1" -t 1 -a "$CPU" -p 95 -i 1000 -l "$LOOPS" -q --db "$tmp/s.db"
    fi
}
theirs() { # way out
    if [ "$1" = deadline ]; then
        record "$2" cyclicdeadline -t 1 -i 4000 -D "$(( periods * 4 / 1000 > 0 ? periods * 4 / 1000 : 1 ))" -q
    else
        record "$2" "$(tool_of "$1")" -t 1 -a "$CPU" -p 95 -i 1000 -l "$LOOPS" -q
    fi
}

for r in $(seq 1 "$ROUNDS"); do
    for w in $WAYS; do
        echo "round $r/$ROUNDS: $w ..." >&2
        ours "$w" "$tmp/ours-a.$w.$r"; theirs "$w" "$tmp/theirs-a.$w.$r"
        theirs "$w" "$tmp/theirs-b.$w.$r"; ours "$w" "$tmp/ours-b.$w.$r"
    done
done
python3 - "$tmp" "$ROUNDS" "$WAYS" "$CPU" <<'PY'
import math, re, statistics, sys
tmp, rounds, ways, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4])
tools = {"mutex": "ptsematest", "signal": "sigwaittest", "sem": "svsematest", "mq": "pmqtest", "deadline": "cyclicdeadline"}
line = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+\w+:(\w+):\s+(.*)$")

def delays(path, way, prog, after=None):
    """ns from each wake-up that counts to the switch that runs the woken thread; with `after`
    (a list), also how long the waker ran on after each such wake-up until it gave up the CPU
    (ipc: on one CPU at one priority the woken thread runs only then)."""
    waking, out, timer, waker = {}, [], None, {}
    for raw in open(path + ".txt"):
        m = line.match(raw)
        if not m:
            continue
        comm, tid, on, sec, frac, event, rest = m.groups()
        t = int(sec) * 10**9 + int(frac.ljust(9, "0")[:9])
        f = dict(kv.split("=", 1) for kv in re.findall(r"(\w+=\S+)", rest))
        if way == "deadline":
            if event == "hrtimer_expire_entry" and timer is None:
                timer = t
            elif event == "sched_switch" and f["next_prio"] == "-1" and timer is not None:
                out.append(t - timer)
                timer = None
        elif event == "sched_waking":
            if int(on) == cpu and comm.startswith(prog) and f["comm"].startswith(prog):
                waking[f["pid"]] = t
                waker[tid] = t
        elif event == "sched_switch":
            woke = waker.pop(f["prev_pid"], None)
            if woke is not None and after is not None:
                after.append(t - woke)
            woken = waking.pop(f["next_pid"], None)
            if woken is not None:
                out.append(t - woken)
    return sorted(out)

def nearest(v, q):
    return v[max(math.ceil(q * len(v)), 1) - 1]

def run(who, side, w, r):
    prog = "rtbench" if who == "ours" else tools[w][:15]
    after = []
    d = delays(f"{tmp}/{who}-{side}.{w}.{r}", w, prog, after)
    after.sort()
    ran_on = nearest(after, 0.5) if after else float("nan")
    return (nearest(d, 0.5), nearest(d, 0.99), len(d), ran_on) if d else (float("nan"),) * 4

med = statistics.median
print("wake-up to running, from the kernel's sched_waking and sched_switch (ns): medians of the runs")
print(f"{'way':9} {'tool':15} {'stat':4} {'rtbench':>9} {'tool':>9} {'rtb/tool':>9} {'rtb A/A':>15} {'tool A/A':>15} {'wake-ups/run':>14}")
for w in ways:
    o = [[run("ours", s, w, r) for s in "ab"] for r in range(1, rounds + 1)]
    t = [[run("theirs", s, w, r) for s in "ab"] for r in range(1, rounds + 1)]
    for k, name in ((0, "p50"), (1, "p99")):
        ov = med(x[k] for p in o for x in p)
        tv = med(x[k] for p in t for x in p)
        aa_o = [p[1][k] / p[0][k] for p in o]
        aa_t = [p[1][k] / p[0][k] for p in t]
        n = f"{med(x[2] for p in o for x in p):.0f}/{med(x[2] for p in t for x in p):.0f}"
        print(f"{w:9} {tools[w]:15} {name:4} {ov:9.0f} {tv:9.0f} {ov / tv:9.3f} "
              f"{min(aa_o):6.3f}…{max(aa_o):<7.3f} {min(aa_t):6.3f}…{max(aa_t):<7.3f} {n:>14}")
print()
print("ipc: how long the waker ran on after its wake-up before giving up the CPU (ns, median of the runs'")
print("medians): on one CPU at one priority the woken thread runs once the waker blocks, so the delays")
print("above are the waker's own path after its wake-up, which each tool's code makes")
for w in (w for w in ways if w != "deadline"):
    o = med(run("ours", s, w, r)[3] for s in "ab" for r in range(1, rounds + 1))
    t = med(run("theirs", s, w, r)[3] for s in "ab" for r in range(1, rounds + 1))
    print(f"{w:9} {tools[w]:15} rtbench {o:7.0f}  tool {t:7.0f}  difference {t - o:6.0f}")
PY
