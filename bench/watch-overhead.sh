#!/usr/bin/env bash
# Does watching change the application? The demonstration application's own measure of its
# period's jitter (tests/apps/rtdemo.c: its FIFO-80 thread's lateness at each 1 ms wake-up, on
# CPU 0) with and without `rtbench watch --pid` on it, in interleaved rounds, beside the same
# application unwatched twice (its A/A: what the machine's noise alone makes of a ratio).
#
#   bench/watch-overhead.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s per run)
#
# Needs root, cc, python3 and a release build (`cargo build --release`; set RTBENCH to use
# another binary). Each round runs the application three times, unwatched, watched and
# unwatched again, rotating which comes first; per round it prints each run's p50, p99 and max
# lateness (µs), then the medians of watched/unwatched and of unwatched/unwatched, with their
# spreads over the rounds. It also prints what the watch read (events, the reader's CPU time),
# and per watched run the watch's own measure of the period's jitter (each absolute sleep's
# lateness at the switch in) beside the application's (at its return, a clock read later).
set -euo pipefail

ROUNDS=${1:-${ROUNDS:-5}}
SECS=${2:-${SECS:-10}}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
for tool in cc python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "watch-overhead: $tool not found" >&2; exit 2; }
done
[ -x "$RTBENCH" ] || { echo "watch-overhead: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
cc -O2 -Wall -pthread -o "$tmp/rtdemo" "$here/tests/apps/rtdemo.c"

alone() { # name
    "$tmp/rtdemo" -D "$SECS" >"$tmp/$1" 2>&1
}

watched() { # name
    "$tmp/rtdemo" -D "$SECS" >"$tmp/$1" 2>&1 &
    local app=$!
    sleep 0.2
    /usr/bin/time -f "%U %S" -o "$tmp/$1.cpu" "$RTBENCH" watch --pid "$app" -D "$((SECS + 5))s" \
        --db "$tmp/rtbench.db" >"$tmp/$1.watch" 2>&1
    wait "$app"
}

echo "rtdemo (FIFO 80, 1 ms, CPU 0), $SECS s per run, $ROUNDS rounds; $(nproc) CPUs, kernel $(uname -r)"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..." >&2
    case $((r % 3)) in
        1) alone "a.$r"; watched "w.$r"; alone "b.$r" ;;
        2) watched "w.$r"; alone "b.$r"; alone "a.$r" ;;
        0) alone "b.$r"; alone "a.$r"; watched "w.$r" ;;
    esac
done

python3 - "$tmp" "$ROUNDS" <<'PY'
import re, statistics, sys

tmp, rounds = sys.argv[1], int(sys.argv[2])

def jitter(path):
    for line in open(path):
        if line.startswith("jitter "):
            _, n, p50, p99, mx = line.split()
            return int(n), float(p50), float(p99), float(mx)
    raise SystemExit(f"no jitter line in {path}")

def watch_line(path):
    for line in open(path):
        if "scheduler events" in line:
            return line.strip()
    return "?"

print(f"{'round':>5} {'alone p50':>10} {'watched':>10} {'again':>10} {'alone p99':>10} {'watched':>10} {'again':>10}  watch CPU s (user sys)")
w50, a50, w99, a99 = [], [], [], []
for r in range(1, rounds + 1):
    a, w, b = (jitter(f"{tmp}/{k}.{r}") for k in "awb")
    cpu = open(f"{tmp}/w.{r}.cpu").read().split()[-2:]
    print(f"{r:>5} {a[1]:>10.3f} {w[1]:>10.3f} {b[1]:>10.3f} {a[2]:>10.3f} {w[2]:>10.3f} {b[2]:>10.3f}  {' '.join(cpu)}")
    w50.append(w[1] / a[1]); a50.append(b[1] / a[1]); w99.append(w[2] / a[2]); a99.append(b[2] / a[2])
spread = lambda xs: f"{min(xs):.3f}-{max(xs):.3f}"
print(f"p50 watched/alone median {statistics.median(w50):.3f} ({spread(w50)})   A/A again/alone {statistics.median(a50):.3f} ({spread(a50)})")
print(f"p99 watched/alone median {statistics.median(w99):.3f} ({spread(w99)})   A/A again/alone {statistics.median(a99):.3f} ({spread(a99)})")
print("last watch:", watch_line(f"{tmp}/w.{rounds}.watch"))

# The watch's own view of the period's jitter (each absolute sleep's lateness, at the switch in)
# beside the application's (at its return to user space, a clock read later).
def lateness(path):
    for line in open(path):
        if "late after its absolute sleeps" in line:
            m = re.search(r"p50 ([\d.]+), p99 ([\d.]+), max ([\d.]+) µs of (\d+)", line)
            return tuple(float(x) for x in m.groups())
    return None

print(f"{'round':>5} {'app p50':>9} {'watch p50':>10} {'app p99':>9} {'watch p99':>10}   (the watched run, µs)")
for r in range(1, rounds + 1):
    app, seen = jitter(f"{tmp}/w.{r}"), lateness(f"{tmp}/w.{r}.watch")
    if seen:
        print(f"{r:>5} {app[1]:>9.3f} {seen[0]:>10.3f} {app[2]:>9.3f} {seen[1]:>10.3f}")
PY
