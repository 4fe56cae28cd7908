#!/usr/bin/env bash
# Installs what building, testing and packaging rtbench for arm64 and armhf needs on a Debian
# x86_64 machine (scripts/cross.sh uses it): Debian's Rust toolchain with the two architectures'
# standard libraries, the GNU cross compilers, each architecture's C library (to link, and to
# run the binaries under qemu-user) and qemu-user; and for `rtbench kernels` with an arm64
# or armhf kernel, QEMU's ARM system emulators, mmdebstrap (which makes the guest's ARM roots)
# and Debian's arm64 and armhf RT kernels in the kernel cache. Safe to run again. As root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "setup-arm: needs root to install packages" >&2; exit 1; }

kernels_cache="${XDG_CACHE_HOME:-$HOME/.cache}/rtbench/kernels/debs"
ready() {
  command -v aarch64-linux-gnu-g++ >/dev/null && command -v arm-linux-gnueabihf-g++ >/dev/null \
    && command -v qemu-aarch64-static >/dev/null && [ -x /usr/bin/rustc ] \
    && command -v qemu-system-aarch64 >/dev/null && command -v mmdebstrap >/dev/null \
    && ls "$kernels_cache"/linux-image-[0-9]*-rt-arm64_*.deb >/dev/null 2>&1 \
    && ls "$kernels_cache"/linux-image-[0-9]*-rt-armmp_*.deb >/dev/null 2>&1 \
    && [ -d /usr/lib/rustlib/aarch64-unknown-linux-gnu ] \
    && [ -e /usr/lib/aarch64-linux-gnu/libstdc++.so.6 ] && [ -e /usr/lib/arm-linux-gnueabihf/libstdc++.so.6 ] \
    && { [ -d /usr/lib/rustlib/armv7-unknown-linux-gnueabihf ] \
      || [ -d target/cross/sysroot-armhf/usr/lib/rustlib/armv7-unknown-linux-gnueabihf ]; }
}
if ready; then echo "setup-arm: ready"; exit 0; fi

dpkg --add-architecture arm64
dpkg --add-architecture armhf
# A mirror caught mid-sync serves one architecture's index with the wrong size (seen here for
# bookworm-security's armhf): apt keeps the indexes it read, and what they lack is handled below.
apt-get update -qq || echo "setup-arm: some package indexes could not be read; going on with the others" >&2

# rustc-web is in bookworm-security: its standard library for each target must be the same build.
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
apt_install rustc-web cargo-web qemu-user-static qemu-system-arm mmdebstrap \
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf \
  libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 libc6:armhf libgcc-s1:armhf libstdc++6:armhf
version=$(dpkg-query -W -f='${Version}' rustc-web)

# The fork helper links -ltirpc as LMbench does (build.rs); without the library it is built
# without it, and says so.
for arch in arm64 armhf; do
  apt_install "libtirpc-dev:$arch" 2>/dev/null \
    || echo "setup-arm: libtirpc-dev:$arch cannot be installed here: the $arch fork helper links without -ltirpc" >&2
done

for arch in arm64 armhf; do
  if apt_install "libstd-rust-web-dev:$arch=$version" 2>/dev/null; then continue; fi
  # The index that lists it could not be read (above): the same build, fetched from the pool
  # the amd64 compiler came from, and unpacked into a sysroot of the project's own, which
  # scripts/cross.sh gives rustc.
  uri=$(apt-get download --print-uris "rustc-web=$version" | awk -F"'" 'NR == 1 {print $2}')
  [ -n "$uri" ] || { echo "setup-arm: apt knows no URI for rustc-web $version" >&2; exit 1; }
  file="libstd-rust-web-dev_${version/:/%3a}_$arch.deb"
  deb=$(mktemp -d)
  curl -fsS -o "$deb/$file" "${uri%/*}/$file" \
    || { echo "setup-arm: could not fetch $file (the standard library for $arch)" >&2; exit 1; }
  rm -rf "target/cross/sysroot-$arch"
  mkdir -p "target/cross/sysroot-$arch"
  dpkg-deb -x "$deb/$file" "target/cross/sysroot-$arch"
  rm -rf "$deb"
  echo "setup-arm: libstd-rust-web-dev:$arch $version unpacked into target/cross/sysroot-$arch"
done
# The ARM guest tests boot Debian's arm64 and armhf RT kernels: downloaded once, here, into the
# cache `rtbench kernels deb:PACKAGE` reads, as scripts/setup.sh does for the x86 kernels.
mkdir -p "$kernels_cache"
for pair in arm64:rt-arm64 armhf:rt-armmp; do
  arch=${pair%%:*} meta=linux-image-${pair#*:}
  (cd "$kernels_cache" && apt-get download -qq "$meta:$arch" 2>/dev/null) \
    || { echo "setup-arm: could not download $meta" >&2; exit 1; }
  kernel=$(dpkg-deb -f "$(ls "$kernels_cache"/"$meta"_*.deb | tail -n1)" Depends | grep -o 'linux-image-[^ ,|:]*' | head -n1)
  (cd "$kernels_cache" && apt-get download -qq "$kernel:$arch" 2>/dev/null) \
    || { echo "setup-arm: could not download $kernel" >&2; exit 1; }
done
ready || { echo "setup-arm: something is still missing after installing" >&2; exit 1; }
echo "setup-arm: ready"
