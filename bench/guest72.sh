#!/usr/bin/env bash
# The real check past 64 CPUs (issue 38): a TCG guest with one vCPU more than it measures (72
# measured, the last one left to the collector), booted by `rtbench kernels`, runs
# `timer -a 0-71 --split`, then, in a second boot, `noise --classify -a 0-71` (a guest that
# hangs in the noise run does not take the timer run with it); the runs come back into a store
# on this host and are checked from there (`show`, the JSON export).
#
#   bench/guest72.sh                          72 measured vCPUs, timer every 100 ms for 30 s, noise 20 s
#   CPUS=72 INTERVAL=100ms TIMER_S=30 NOISE_S=20 NOISE_POLICY=other bench/guest72.sh
#   KERNEL=deb:linux-image-amd64 bench/guest72.sh   the kernel booted (default)
#   DB=FILE bench/guest72.sh                  keep the runs in FILE (default: a scratch store, removed)
#   NOHZ_FULL= bench/guest72.sh               the noise guest keeps its measured vCPUs' tick
#
# The noise probe's threads run at SCHED_OTHER (NOISE_POLICY=fifo for FIFO 95): 72 busy FIFO
# loops on vCPUs emulated by 2 host CPUs starved the guest's own kernel threads (RCU stalls, soft
# lockups for minutes: the guest never finished). The interval is sized for a 2-core host emulating every vCPU (TCG): 8 vCPUs at 10 ms kept
# about 90 % of their wake-ups there; 72 at 100 ms ask the emulator for fewer wake-ups a second.
# `kernels` keeps an emulated guest's time on the TSC (see src/vm/guest.rs): on the emulated
# HPET, 72 busy loops reading the clock stalled this guest in every try. With the TSC the
# guest boots in about 80 s, but the noise run still stalled it (vCPUs spinning on the BPF ring
# buffer's lock in their timer interrupts) until the measured vCPUs ran without their tick
# (--kernel-param nohz_full=0-71, below). A noise run lasts minutes whatever NOISE_S says: its
# 72 busy threads are started one after another, each start slower than the last. Bounded: each boot by `kernels --timeout` (BOOT, default 20m), each `kernels` by
# `timeout` (LIMIT, default 30m); nothing is left behind but DB when given (`kernels` stops its guest
# however it ends). Needs root, QEMU, virtme-ng, apt's lists and a release build (`cargo build
# --release`; RTBENCH for another binary). The last lines give, per run: threads, samples per
# thread (min/median/max), the IRQ split's matched share, the noise classes present, the lost
# counters and the collector's CPUs, then the wall time.
set -euo pipefail

CPUS=${CPUS:-72}
INTERVAL=${INTERVAL:-100ms}
TIMER_S=${TIMER_S:-30}
NOISE_S=${NOISE_S:-20}
NOISE_POLICY=${NOISE_POLICY:-other}
KERNEL=${KERNEL:-deb:linux-image-amd64}
BOOT=${BOOT:-20m}
LIMIT=${LIMIT:-30m}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "guest72: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "guest72: FIFO threads and tracing in the guest need root" >&2; exit 2; }
for tool in qemu-system-x86_64 vng python3; do
    command -v "$tool" >/dev/null || { echo "guest72: $tool is not installed (scripts/setup.sh)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=${DB:-$tmp/rtbench.db}
last=$((CPUS - 1))

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) host CPUs; guest: $((CPUS + 1)) vCPUs, CPUs 0-$last measured"
started=$(date +%s)
failed=0
# One boot per command: a guest that hangs in the second keeps the first's runs in the store.
# boot NAME [KERNELS FLAG...] -- COMMAND...
boot() {
    local name=$1 flags=()
    shift
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    shift
    timeout --kill-after=30s "$LIMIT" "$RTBENCH" kernels "$KERNEL" --cpus $((CPUS + 1)) --memory 2G --allow-emulated \
        --timeout "$BOOT" --db "$db" -o "$tmp/report" "${flags[@]}" -- "$@" >"$tmp/$name.out" 2>&1 || {
        rc=$?
        tail -n 30 "$tmp/$name.out" >&2
        echo "guest72: kernels ($name) ended with $rc" >&2
        failed=1
    }
    grep -E '^kernels: .*(booted in|FAILED)' "$tmp/$name.out" | sed "s/^/$name: /" || true
}
boot timer -- timer -a "0-$last" -i "$INTERVAL" --split -D "${TIMER_S}s" -q
# The noise guest's measured vCPUs run without their tick (nohz_full; NOHZ_FULL= keeps it): each
# holds one busy loop, and with the tick 72 vCPUs each taking 250 interrupts a second, each one
# a record through the classification's one BPF ring buffer, on 2 host CPUs stalled the guest.
nohz=(--kernel-param "nohz_full=0-$last")
[ "${NOHZ_FULL-1}" ] || nohz=()
boot noise "${nohz[@]}" -- noise --classify -a "0-$last" --policy "$NOISE_POLICY" -D "${NOISE_S}s" -q
took=$(($(date +%s) - started))

# The two runs just merged: the last timer and the last noise run in the store (a probe whose
# boot failed has none: it is said missing and the check fails).
ids=$("$RTBENCH" runs --db "$db" --json 2>/dev/null | python3 -c '
import json, sys
runs = json.load(sys.stdin)
for p in ("timer", "noise"):
    found = [r["id"] for r in runs if r["probe"] == p]
    print(max(found) if found else "", end=" ")
    if not found:
        print(f"guest72: no {p} run came back", file=sys.stderr)') || true
for id in $ids; do
    "$RTBENCH" show "$id" --db "$db" >"$tmp/show-$id.txt"
    "$RTBENCH" export "$id" --db "$db" --format json >"$tmp/run-$id.json"
done
python3 - "$CPUS" "$took" "$failed" $(for id in $ids; do echo "$tmp/run-$id.json"; done) <<'PY'
import json, statistics, sys
cpus, took = int(sys.argv[1]), int(sys.argv[2])
paths = sys.argv[4:]
ok = sys.argv[3] == "0" and len(paths) == 2
for path in paths:
    doc = json.load(open(path))
    run, threads = doc["run"], doc["threads"]
    params = run["params"]
    counts = sorted(t["count"] for t in threads)
    empty = [t["cpu"] for t in threads if t["count"] == 0]
    where = sorted({t["cpu"] for t in threads})
    collector = params.get("collector") or {}
    on = collector.get("cpus", [])
    line = (f"{run['probe']} run {run['id']} ({run['status']}): {len(threads)} threads on {len(where)} CPUs, "
            f"samples per thread min {counts[0]} median {statistics.median(counts):g} max {counts[-1]}")
    if run["probe"] == "timer":
        split = params["split"]
        paired = sum(t.get("irq", {}).get("count", 0) for t in threads)
        without = [t["cpu"] for t in threads if not t.get("irq", {}).get("count")]
        line += (f"; IRQ split {paired}/{sum(counts)} samples matched ({100 * paired / max(1, sum(counts)):.1f} %), "
                 f"{len(without)} threads without, lost {split['lost_events']}, mode {split['mode']}")
        ok &= split["lost_events"] == 0 and not without
    else:
        classify = params["classify"]
        per = [{c["class"] for c in t["totals"]} for t in classify["threads"]]
        present = sorted(set().union(*per)) if per else []
        none = len([p for p in per if not p])
        line += (f"; classes {','.join(present)} ({len(per)} threads classified, {none} without a class), "
                 f"lost {classify['lost_events']}")
        ok &= classify["lost_events"] == 0 and none == 0 and len(per) == cpus
    measured = set(where)
    line += f"; collector on CPUs {on} ({collector.get('chosen')}), {'off' if not measured & set(on) else 'ON'} the measured ones"
    ok &= len(threads) == cpus and not empty and bool(on) and not measured & set(on) and run["status"] == "complete"
    print(line)
print(f"guest72: {'pass' if ok else 'FAIL'}: {cpus} measured vCPUs, {took} s in all")
sys.exit(0 if ok else 1)
PY
