#!/bin/sh
# The steps of rtbench-study.yaml: install rtbench if asked, run the study with its store in a
# temporary directory, and let rtbench print its checks as LAVA test cases (--lava).
#   rtbench-study.sh DEB_URL DURATION LOAD BASELINE_DB_URL BASELINE FAIL_IF EXTRA_ARGS
set -u
deb_url=$1 duration=$2 load=$3 baseline_url=$4 baseline=$5 fail_if=$6 extra=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
signal() { echo "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=$1 RESULT=$2>"; }

if [ -n "$deb_url" ]; then
  if curl -fsSL -o "$work/rtbench.deb" "$deb_url" && apt-get install -y "$work/rtbench.deb" >/dev/null; then
    signal rtbench-install pass
  else
    signal rtbench-install fail
    exit 0
  fi
fi
export RTBENCH_DB="$work/rtbench.db" RTBENCH_STATE_DIR="$work/state" TMPDIR="$work"
rtbench audit
set -- study -D "$duration" --load "$load" --no-report -q
if [ -n "$baseline_url" ] && [ -n "$baseline" ]; then
  if ! curl -fsSL -o "$work/baseline.db" "$baseline_url" || ! rtbench merge "$work/baseline.db"; then
    signal rtbench-baseline fail
    exit 0
  fi
  set -- "$@" --baseline "$baseline" --fail-if "$fail_if" --lava
fi
# EXTRA_ARGS is split on spaces, as a shell would.
# shellcheck disable=SC2086
rtbench "$@" $extra
code=$?
# 0: every check passed, 1: a condition held or a cell failed (said case by case above).
if [ "$code" -le 1 ]; then signal rtbench-study pass; else signal rtbench-study fail; fi
