#!/usr/bin/env bash
# Runs cargo for an ARM target with Debian's Rust toolchain and cross compilers (installed by
# scripts/setup-arm.sh), so rtbench builds, tests and packages for the boards real-time Linux
# ships on without one:
#   scripts/cross.sh arm64|armhf CARGO_ARGS...     e.g. scripts/cross.sh arm64 build --release
# Prints nothing of its own; the build lands in target/cross/TRIPLE/. `cargo test` and
# `cargo run` run the ARM binaries under qemu-user, with the target's own libraries from
# Debian's multiarch packages (qemu's -L with the cross compilers' libc loads a libc of another
# build than the dynamic loader's, and the first thread a program starts then hangs).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-}
. scripts/arm-arch.sh
arm_arch "$arch" || { echo "cross: give arm64 or armhf, not '${arch}'" >&2; exit 2; }
shift
# Debian's rustc-web comes with the ARM standard libraries (libstd-rust-web-dev:ARCH); rustup's
# toolchain, first on PATH, has none.
for tool in /usr/bin/rustc /usr/bin/cargo "$gnu-gcc" "$gnu-g++" "$qemu"; do
  command -v "$tool" >/dev/null || { echo "cross: $tool is missing: run scripts/setup-arm.sh" >&2; exit 1; }
done
upper=$(tr 'a-z-' 'A-Z_' <<<"$triple")
lower=${triple//-/_}
export RUSTC=/usr/bin/rustc
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/cross}
export "CARGO_TARGET_${upper}_LINKER=$gnu-gcc" "CARGO_TARGET_${upper}_RUNNER=$qemu"
# Tests that cannot run under the emulator are ignored with the reason (testkit's `native`).
export RTBENCH_QEMU_USER=$qemu
export "CC_${lower}=$gnu-gcc" "CXX_${lower}=$gnu-g++" "AR_${lower}=$gnu-ar" PKG_CONFIG_ALLOW_CROSS=1
# Where the distribution's index could not give the standard library, setup-arm.sh unpacked it
# into a sysroot of the project's own.
sysroot=target/cross/sysroot-$arch/usr
if [ ! -d "/usr/lib/rustlib/$triple" ] && [ -d "$sysroot/lib/rustlib/$triple" ]; then
  export "CARGO_TARGET_${upper}_RUSTFLAGS=--sysroot $(pwd)/$sysroot"
fi
[ $# -gt 0 ] || { echo "cross: give a cargo command" >&2; exit 2; }
# The target goes right after the command, so arguments after `--` stay the test binary's.
exec /usr/bin/cargo "$1" --target "$triple" "${@:2}"
