#!/usr/bin/env bash
# `rtbench wcet` on a 24-hour-sized run: 65.5 M samples (what 758 Hz gives in a day) from the
# synthetic probe, timed from its raw sample log and from the histogram alone.
#
#   bench/wcet-large.sh [SAMPLES]      (default 65500000)
#
# Needs a release build and /usr/bin/time (Debian package `time`); about 400 MB of disk in the
# system temp dir (or BIG_DIR) for the sample log, removed at the end.
set -euo pipefail

N=${1:-65500000}
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "wcet-large: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "wcet-large: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }

tmp=$(mktemp -d "${BIG_DIR:-${TMPDIR:-/tmp}}/wcet-large.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$RTBENCH" synthetic -t 1 -l "$N" -q --db "$tmp/db" --samples "$tmp/s.log" >/dev/null
id=$("$RTBENCH" runs --db "$tmp/db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
echo "run $id: $N samples, sample log $(du -h "$tmp/s.log" | cut -f1)"
for from in samples histogram; do
    [ "$from" = histogram ] && rm -f "$tmp/s.log"
    for i in 1 2; do
        /usr/bin/time -f "$from (try $i): %e s wall, %M kB max RSS" \
            "$RTBENCH" wcet "$id" --db "$tmp/db" --json >"$tmp/out.json"
    done
    python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print("  from", e["from"], "verdict", e["verdict"], "threshold", e["threshold_ns"], "exceedances", e["exceedances"])' "$tmp/out.json"
done
