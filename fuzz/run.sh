#!/usr/bin/env bash
# Fuzzes every target for a bounded time (libFuzzer through cargo fuzz, nightly Rust):
#   fuzz/run.sh [SECONDS_PER_TARGET]      (default 60)
# Each target starts from the committed seeds in fuzz/corpus/TARGET (new inputs it finds go to
# a scratch copy, not the repository). A crash stops the script with the input saved under
# fuzz/artifacts/TARGET; make it a regression test, fix it, and run again. Prints executions
# per target.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
command -v cargo-fuzz >/dev/null || { echo "fuzz: cargo install cargo-fuzz (needs a nightly toolchain)" >&2; exit 2; }
cargo build --release --manifest-path ../Cargo.toml --bin rtbench >/dev/null
export RTBENCH="$PWD/../target/release/rtbench"   # store_rows makes its template store with it
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in samplelog cyclictest_import fail_if packet flags store_rows; do
    mkdir -p "$scratch/$target"
    cp corpus/$target/* "$scratch/$target/" 2>/dev/null || true
    cargo +nightly fuzz run -O "$target" "$scratch/$target" -- -max_total_time="$secs" -rss_limit_mb=2048 \
        >"$scratch/$target.log" 2>&1 || { tail -30 "$scratch/$target.log"; echo "fuzz: $target crashed" >&2; exit 1; }
    runs=$(grep -o 'Done [0-9]* runs' "$scratch/$target.log" | grep -o '[0-9]*' || echo "?")
    printf '%-20s %12s executions in %s s\n' "$target" "$runs" "$secs"
done
