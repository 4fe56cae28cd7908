#!/usr/bin/env bash
# `rtbench analyze` on a large sample log, against numpy on the same number of samples.
#
#   bench/analyze-large.sh [LOOPS_PER_THREAD]      (default 107300000: 2 threads, 214.6M samples)
#
# 1. Writes a sample log with the synthetic probe (2 threads, no privileges needed) and reports
#    its size and bytes per sample.
# 2. Times `rtbench analyze LOG` (wall time, max RSS) with /usr/bin/time -v.
# 3. numpy cannot read rtbench's varint log, so it gets a raw little-endian uint64 file of the same
#    number of samples drawn from a similar distribution (lognormal body, median 5 µs, σ 0.25;
#    0.1 % Pareto tail; 1e-6 spikes of 1–5 ms). Generating it is not timed; timed is
#    np.fromfile + np.percentile (the 8 reported percentiles, nearest rank) + mean + std.
# 4. Prints the ratio rtbench / numpy and removes the large files.
#
# Both timed programs read files just written, so both read from the page cache; each is run
# twice and both runs are shown. Needs python3 with numpy, /usr/bin/time (Debian package `time`)
# and a release build. BIG_DIR chooses where the files go (default: the system temp dir); about
# 2.5 GB of disk and 5 GB of free memory are needed at the default size.
set -euo pipefail

LOOPS=${1:-107300000}
THREADS=2
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}

need() { echo "analyze-large: $*" >&2; exit 2; }
[ -x "$RTBENCH" ] || need "$RTBENCH not found; run 'cargo build --release' first (or set RTBENCH)"
[ -x /usr/bin/time ] || need "/usr/bin/time not found (Debian/Ubuntu: apt-get install time)"
python3 -c 'import numpy' 2>/dev/null || need "python3 with numpy is needed (pip install numpy)"

samples=$((LOOPS * THREADS))
dir=$(mktemp -d "${BIG_DIR:-${TMPDIR:-/tmp}}/rtbench-analyze.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# Room: the log takes ~3 B/sample, the raw file 8 B/sample; numpy holds the array twice.
need_disk_kb=$((samples * 12 / 1024 + 65536))
free_disk_kb=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
need_mem_kb=$((samples * 17 / 1024 + 262144))
free_mem_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
echo "samples: $samples ($THREADS threads x $LOOPS); free disk $((free_disk_kb / 1024)) MiB (need $((need_disk_kb / 1024))), free memory $((free_mem_kb / 1024)) MiB (need $((need_mem_kb / 1024)))"
[ "$free_disk_kb" -ge "$need_disk_kb" ] || need "not enough free disk in $dir"
[ "$free_mem_kb" -ge "$need_mem_kb" ] || need "not enough free memory for numpy"

# "/usr/bin/time -v" report -> "wall_s rss_mib"
timed() { # label outfile cmd...
    local label=$1 out=$2
    shift 2
    /usr/bin/time -v -o "$dir/time.txt" timeout 900 "$@" >"$out" 2>&1
    python3 - "$dir/time.txt" "$label" "$dir/results.tsv" <<'PY'
import sys
wall = rss = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("Elapsed (wall clock) time"):
        parts = [float(p) for p in line.rsplit(" ", 1)[1].split(":")]
        wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    elif line.startswith("Maximum resident set size"):
        rss = int(line.rsplit(" ", 1)[1]) / 1024
print(f"{sys.argv[2]:<28} wall {wall:8.2f} s   max RSS {rss:8.1f} MiB")
with open(sys.argv[3], "a") as f:
    f.write(f"{sys.argv[2]}\t{wall}\t{rss}\n")
PY
}

log=$dir/samples.log
raw=$dir/samples.u64
echo
echo "== 1. write the log: rtbench synthetic -t $THREADS -l $LOOPS -q --samples LOG --db DB"
timed "rtbench synthetic" "$dir/synthetic.out" \
    "$RTBENCH" synthetic -t "$THREADS" -l "$LOOPS" -q --samples "$log" --db "$dir/run.db"
log_bytes=$(stat -c %s "$log")
python3 -c "import sys; b, n = int(sys.argv[1]), int(sys.argv[2]); print(f'log: {b} bytes ({b / 2**20:.1f} MiB), {b / n:.3f} bytes/sample')" "$log_bytes" "$samples"

echo
echo "== 2. rtbench analyze LOG"
for i in 1 2; do
    timed "rtbench analyze (run $i)" "$dir/analyze.out" "$RTBENCH" analyze "$log"
done
grep '^all' "$dir/analyze.out"
if diff <(grep '^all' "$dir/analyze.out") <(grep '^all' "$dir/synthetic.out") >/dev/null; then
    echo "   analyze == recorded run: yes"
else
    echo "   analyze == recorded run: NO"; grep '^all' "$dir/synthetic.out"
fi
rm -f "$log"   # free the disk before the raw file is written

echo
echo "== 3. numpy on a raw uint64 file of $samples samples"
cat >"$dir/gen.py" <<'PY'
import sys
import numpy as np

n, path = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(1)
chunk = 10_000_000
with open(path, "wb") as f:
    left = n
    while left > 0:
        k = min(chunk, left)
        v = np.exp(np.log(5000.0) + 0.25 * rng.standard_normal(k))
        u = rng.random(k)
        tail = u < 1e-3
        v[tail] = np.minimum(40000.0 / (1.0 - rng.random(tail.sum())) ** (1 / 1.5), 1e6)
        spike = u < 1e-6
        v[spike] = 1e6 + 4e6 * rng.random(spike.sum())
        v.astype("<u8").tofile(f)
        left -= k
PY
cat >"$dir/np_stats.py" <<'PY'
import sys, time
import numpy as np

t0 = time.perf_counter()
a = np.fromfile(sys.argv[1], dtype="<u8")
t1 = time.perf_counter()
q = [50, 90, 99, 99.9, 99.99, 99.999, 99.9999, 100]
p = np.percentile(a, q, method="inverted_cdf")  # nearest rank, as rtbench reports
mean, std = a.mean(), a.std()
t2 = time.perf_counter()
print(f"n={a.size} read {t1 - t0:.2f} s, percentiles+mean+std {t2 - t1:.2f} s")
print("mean %.1f ns, std %.1f ns; " % (mean, std) + ", ".join(f"p{k}={v:.0f}" for k, v in zip(q, p)))
PY
timeout 900 python3 "$dir/gen.py" "$samples" "$raw"
echo "raw file: $(stat -c %s "$raw") bytes (8 bytes/sample)"
for i in 1 2; do
    timed "numpy (run $i)" "$dir/numpy.out" python3 "$dir/np_stats.py" "$raw"
    cat "$dir/numpy.out"
done
rm -f "$raw"

echo
python3 - "$dir/results.tsv" <<'PY'
import sys
best = {}
for line in open(sys.argv[1]):
    label, wall, rss = line.rstrip("\n").split("\t")
    key = label.split(" (")[0]
    if key not in best or float(wall) < best[key][0]:
        best[key] = (float(wall), float(rss))
a, n = best["rtbench analyze"], best["numpy"]
print(f"best of 2: rtbench analyze {a[0]:.2f} s / {a[1]:.0f} MiB, numpy {n[0]:.2f} s / {n[1]:.0f} MiB")
print(f"ratio rtbench/numpy: wall {a[0] / n[0]:.3f}, max RSS {a[1] / n[1]:.4f}")
PY
