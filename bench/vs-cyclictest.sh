#!/usr/bin/env bash
# rtbench timer vs cyclictest: same settings, interleaved rounds, idle machine.
#
#   bench/vs-cyclictest.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s per tool)
#   GUEST=VMLINUZ [GUEST_ARCH=arm64] bench/vs-cyclictest.sh ...
#                 boots that kernel and runs itself inside (bench/rtla-guest.sh: an arm64 one on
#                 the arm64 root, RTBENCH then an arm64 rtbench)
#
# Needs root (FIFO priority, mlock), python3, `cyclictest` (Debian/Ubuntu package `rt-tests`;
# this script installs nothing), and a release build (`cargo build --release`); set RTBENCH to
# use another binary. Each round runs both tools once, alternating which goes first. Per round it
# prints:
#   ct_avg      cyclictest "# Avg Latencies", count-weighted over threads (integer µs, truncated)
#   ct_avg_h    mean of cyclictest's 1-µs histogram, +0.5 µs (its buckets truncate to whole µs)
#   ct_p99      nearest-rank p99 of cyclictest's histogram (all threads), bucket midpoint (+0.5 µs)
#   rb_avg      rtbench `total.mean_ns` (JSON export): every sample, the hypervisor's stalls too
#   rb_avg_h    the same method as ct_avg_h, on rtbench's own cyclictest-hist export: both drop
#               the samples past the last bucket (a 50 ms stall moves a 30 000-sample mean by 1.7 µs)
#   rb_p99      rtbench `total.percentiles_ns["99"]` (HDR bucket upper bound, ≤ 0.1 % above)
#   rb_p99_h    the same p99 method as ct_p99, on rtbench's own cyclictest-hist export
# then the medians over the rounds and the ratios rtbench / cyclictest. With AA=1 each tool runs
# twice a round, and each tool's second run against its first (its A/A: what the machine's noise
# alone makes of a ratio) is printed beside: a ratio inside the A/A spread is agreement. Load averages are shown
# because nothing here can make the machine idle: check them before trusting a round.
set -euo pipefail

ROUNDS=${1:-${ROUNDS:-5}}
SECS=${2:-${SECS:-10}}
THREADS=${THREADS:-2}
AFFINITY=${AFFINITY:-0-$((THREADS - 1))}
PRIO=${PRIO:-95}
INTERVAL=${INTERVAL:-1000}
BUCKETS=${BUCKETS:-20000}   # 1-µs histogram buckets (20 ms); later samples count as overflows

here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
if [ -n "${GUEST:-}" ]; then
    . "$here/bench/rtla-guest.sh"
    rtla_where vs-cyclictest "" "AA=${AA:-0} ROUNDS=$ROUNDS SECS=$SECS THREADS=$THREADS AFFINITY=$AFFINITY PRIO=$PRIO INTERVAL=$INTERVAL BUCKETS=$BUCKETS" no-rtla
fi

if ! command -v cyclictest >/dev/null 2>&1; then
    echo "vs-cyclictest: cyclictest not found; install it first (Debian/Ubuntu: apt-get install rt-tests)" >&2
    exit 2
fi
if [ ! -x "$RTBENCH" ]; then
    echo "vs-cyclictest: $RTBENCH not found; run 'cargo build --release' first (or set RTBENCH)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "vs-cyclictest: python3 is needed for the arithmetic" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/rtbench.db
# Each run gets its duration plus this much slack before it is killed.
limit=$((SECS + 60))

run_ct() { # round
    timeout -s INT "$limit" cyclictest -t "$THREADS" -a "$AFFINITY" -p "$PRIO" -i "$INTERVAL" -m \
        -D "$SECS" -q -h "$BUCKETS" --histfile="$tmp/ct.$1.hist" >"$tmp/ct.$1.out" 2>&1
    cut -d' ' -f1-3 /proc/loadavg >"$tmp/ct.$1.load"
}

run_rb() { # round
    timeout -s INT "$limit" "$RTBENCH" timer -t "$THREADS" -a "$AFFINITY" -p "$PRIO" -i "$INTERVAL" -m \
        -D "${SECS}s" -q --db "$db" >"$tmp/rb.$1.out" 2>&1
    cut -d' ' -f1-3 /proc/loadavg >"$tmp/rb.$1.load"
    # The last line reads "stored as run N in PATH".
    local id
    id=$(tail -n 1 "$tmp/rb.$1.out" | sed -n 's/^stored as run \([0-9]*\) in .*/\1/p')
    if [ -z "$id" ]; then
        echo "vs-cyclictest: rtbench timer did not store a run:" >&2
        cat "$tmp/rb.$1.out" >&2
        exit 1
    fi
    "$RTBENCH" export "$id" --db "$db" --format json >"$tmp/rb.$1.json"
    "$RTBENCH" export "$id" --db "$db" --format cyclictest-hist --buckets "$BUCKETS" >"$tmp/rb.$1.hist"
}

echo "settings: -t $THREADS -a $AFFINITY -p $PRIO -i $INTERVAL -m, $SECS s per run, $ROUNDS rounds; $(nproc) CPUs, kernel $(uname -r)"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS ..." >&2
    if [ $((r % 2)) -eq 1 ]; then run_ct "$r"; run_rb "$r"; else run_rb "$r"; run_ct "$r"; fi
    if [ "${AA:-0}" = 1 ]; then
        if [ $((r % 2)) -eq 1 ]; then run_rb "aa$r"; run_ct "aa$r"; else run_ct "aa$r"; run_rb "aa$r"; fi
    fi
done

python3 - "$tmp" "$ROUNDS" "${AA:-0}" <<'PY'
import json, math, statistics, sys

tmp, rounds, aa = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"

def hist(path):
    """cyclictest histogram file -> (bucket counts summed over threads, overflows, header lines)."""
    counts, head = {}, {}
    for line in open(path):
        if line.startswith("#"):
            key, _, rest = line[1:].partition(":")
            head[key.strip()] = [int(x) for x in rest.split()]
            continue
        cols = line.split()
        if len(cols) >= 2:
            n = sum(int(c) for c in cols[1:])
            if n:
                counts[int(cols[0])] = counts.get(int(cols[0]), 0) + n
    return counts, sum(head.get("Histogram Overflows", [])), head

def p99_mid(counts, overflows):
    """Nearest-rank p99 over buckets; a bucket b holds [b, b+1) µs, reported as b + 0.5."""
    total = sum(counts.values()) + overflows
    rank = max(1, math.ceil(0.99 * total))
    seen = 0
    for b in sorted(counts):
        seen += counts[b]
        if seen >= rank:
            return b + 0.5
    return float("inf")  # p99 lies among the overflows

def load(path):
    return open(path).read().strip()

rows = []
for r in range(1, rounds + 1):
    c, over, head = hist(f"{tmp}/ct.{r}.hist")
    totals, avgs = head["Total"], head["Avg Latencies"]
    ct_avg = sum(t * a for t, a in zip(totals, avgs)) / sum(totals)
    ct_avg_h = sum(b * n for b, n in c.items()) / sum(c.values()) + 0.5
    ct_p99 = p99_mid(c, over)
    total = json.load(open(f"{tmp}/rb.{r}.json"))["total"]
    rb_avg = total["mean_ns"] / 1000
    rb_p99 = total["percentiles_ns"]["99"] / 1000
    rc, rover, _ = hist(f"{tmp}/rb.{r}.hist")
    rb_p99_h = p99_mid(rc, rover)
    rb_avg_h = sum(b * n for b, n in rc.items()) / sum(rc.values()) + 0.5
    rows.append((r, ct_avg, ct_avg_h, ct_p99, rb_avg, rb_p99, rb_p99_h, rb_avg_h, over, rover,
                 sum(totals), total["count"], load(f"{tmp}/ct.{r}.load"), load(f"{tmp}/rb.{r}.load")))

print()
print("all values in µs")
print(f"{'round':>5} {'ct_avg':>7} {'ct_avg_h':>8} {'ct_p99':>7} {'rb_avg':>7} {'rb_p99':>7} {'rb_p99_h':>8}"
      f" {'rb_avg_h':>8} {'ct_over':>7} {'rb_over':>7} {'ct_n':>7} {'rb_n':>7}  load(ct) / load(rb)")
for r, a, ah, p, ra, rp, rph, rah, o, ro, n, rn, lc, lr in rows:
    print(f"{r:>5} {a:7.2f} {ah:8.2f} {p:7.1f} {ra:7.2f} {rp:7.2f} {rph:8.1f} {rah:8.2f} {o:7d} {ro:7d}"
          f" {n:7d} {rn:7d}  {lc} / {lr}")
med = [statistics.median(col) for col in list(zip(*rows))[1:8]]
print(f"{'med':>5} {med[0]:7.2f} {med[1]:8.2f} {med[2]:7.1f} {med[3]:7.2f} {med[4]:7.2f} {med[5]:8.1f} {med[6]:8.2f}")
print()
print(f"ratio rtbench/cyclictest  avg: {med[6] / med[1]:.3f} (same histogram method)"
      f"  {med[3] / med[1]:.3f} (rtbench's exact mean vs cyclictest's histogram mean)"
      f"  {med[3] / med[0]:.3f} (vs # Avg Latencies)")
print(f"ratio rtbench/cyclictest  p99: {med[4] / med[2]:.3f} (rtbench HDR)"
      f"  {med[5] / med[2]:.3f} (same histogram method)")

if aa:
    # Each tool's second run of a round against its first, by the same histogram method.
    def stats(path):
        c, over, _ = hist(path)
        return sum(b * n for b, n in c.items()) / sum(c.values()) + 0.5, p99_mid(c, over)
    for tool, name in (("ct", "cyclictest"), ("rb", "rtbench")):
        pairs = [(stats(f"{tmp}/{tool}.{r}.hist"), stats(f"{tmp}/{tool}.aa{r}.hist")) for r in range(1, rounds + 1)]
        avg = [b[0] / a[0] for a, b in pairs]
        p99 = [b[1] / a[1] for a, b in pairs]
        print(f"A/A {name:<10}  avg: {min(avg):.3f}-{max(avg):.3f}  p99: {min(p99):.3f}-{max(p99):.3f}"
              "  (second run / first, per round)")
PY
