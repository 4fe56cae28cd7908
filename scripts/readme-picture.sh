#!/usr/bin/env bash
# Takes the README's picture again: a short study of this machine (as root, for real-time
# priority), its report's first screen as headless Chromium shows it at 1280×860.
#   scripts/readme-picture.sh [RTBENCH]    (default target/release/rtbench)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rtbench="$(realpath "${1:-$repo/target/release/rtbench}")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$rtbench" study -D 4s
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --hide-scrollbars --user-data-dir="$work/profile" --window-size=1280,860 --virtual-time-budget=3000 \
  --screenshot="$repo/docs/report.png" "file://$work/rtbench-report/index.html"
echo "docs/report.png: the first screen of $work/rtbench-report/index.html"
