#!/usr/bin/env bash
# A long run under load, for what must not drift: rtbench timer at 10 kHz on 2 threads under
# --load paper. Checks that
#   - the resident memory, sampled every minute, stays flat (within 1 MiB after the first minute),
#   - each thread's samples plus counted overruns equal the intervals that elapsed,
#   - the store passes SQLite's integrity check.
#
#   bench/soak.sh [DURATION]     (default 1h; anything rtbench's -D takes)
#
# Needs a release build and root for FIFO priority. Writes into a temporary directory that it
# removes at the end.
set -euo pipefail
DUR=${1:-1h}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "soak: build with 'cargo build --release' first" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$RTBENCH" timer -t 2 -i 100 -D "$DUR" --load paper -q --db "$dir/soak.db" --tmpdir "$dir" >"$dir/out" 2>"$dir/err" &
pid=$!
start=$(date +%s)
echo "soak: rtbench timer -t 2 -i 100 -D $DUR --load paper (pid $pid); RSS every 60 s"
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && echo "$(( $(date +%s) - start )) $rss" | tee -a "$dir/rss"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
done
wait "$pid" || { cat "$dir/err"; echo "soak: rtbench failed" >&2; exit 1; }
"$RTBENCH" export 1 --db "$dir/soak.db" >"$dir/run.json"
python3 - "$dir/rss" "$dir/run.json" "$dir/soak.db" <<'PY'
import json, sqlite3, sys
from datetime import datetime

rss = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
later = [kb for t, kb in rss if t >= 60]
run = json.load(open(sys.argv[2]))
ok = True
if later:
    spread = max(later) - min(later)
    flat = spread <= 1024
    ok &= flat
    print(f"RSS after the first minute: {min(later)}..{max(later)} kB (spread {spread} kB) -> {'flat' if flat else 'NOT flat'}")
else:
    print("RSS: fewer than two samples (run shorter than a minute)")
t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
measured = run["run"]["params"]["duration_s"]
interval_ns = run["run"]["params"]["interval_us"] * 1000
for th in run["threads"]:
    expected = measured * 1e9 / interval_ns
    got = th["count"] + th["overruns"]
    diff = got - expected
    # The edges, not lost samples: the threads start a little after the run's clock, and stop
    # up to one runner poll (20 ms = 200 intervals) and a wake-up after the duration.
    fine = -100 <= diff <= 300
    ok &= fine
    print(f"thread {th['thread']}: {th['count']} samples + {th['overruns']} overruns = {got} of {expected:.0f} intervals ({diff:+.0f}) -> {'ok' if fine else 'MISMATCH'}")
print(f"max {run['total']['max_ns'] / 1000:.1f} us, p99.99 {run['total']['percentiles_ns']['99.99'] / 1000:.1f} us, status {run['run']['status']}")
for w in run["run"]["warnings"]:
    print("  warning:", w[:200])
check = sqlite3.connect(sys.argv[3]).execute("PRAGMA integrity_check").fetchone()[0]
ok &= check == "ok"
print("integrity_check:", check)
sys.exit(0 if ok else 1)
PY
