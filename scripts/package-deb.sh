#!/usr/bin/env bash
# Builds rtbench_VERSION_ARCH.deb with dpkg-deb, which every Debian has: the binary, a man page
# per command (`rtbench __man`), bash/zsh/fish completions (`rtbench completions`), the
# monitor's systemd unit and its defaults file, and the shared libraries it links declared by
# dpkg-shlibdeps. (cargo-deb would do the same, but it is built from source in minutes, or
# comes as an old third-party wheel; the man pages and completions need generating first
# either way.)
#   scripts/package-deb.sh [OUT_DIR]              builds the release binary, then the package
#   scripts/package-deb.sh --arch arm64|armhf [OUT_DIR]
#                                                 cross-builds it for that architecture
#                                                 (scripts/cross.sh), then the package
#   RTBENCH_BIN=PATH scripts/package-deb.sh ...   packages an already built binary
# Prints the path of the package.
set -euo pipefail
cd "$(dirname "$0")/.."
native=$(dpkg --print-architecture)
arch=$native
if [ "${1:-}" = --arch ]; then
  arch=${2:?package-deb: --arch needs arm64 or armhf}
  shift 2
fi
out=${1:-target/debian}

# A package for another architecture: its binary runs here under qemu-user, to write its own
# man pages and completions; its tools are the cross toolchain's.
run=() tools=
. scripts/arm-arch.sh
if [ "$arch" != "$native" ]; then
  arm_arch "$arch" || { echo "package-deb: cannot build for '$arch' (arm64, armhf or $native)" >&2; exit 2; }
  tools=$gnu- run=("$qemu")
fi
bin=${RTBENCH_BIN:-}
if [ -z "$bin" ] && [ "$arch" = "$native" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/rtbench
elif [ -z "$bin" ]; then
  scripts/cross.sh "$arch" build --release --quiet
  bin=${CARGO_TARGET_DIR:-target/cross}/$triple/release/rtbench
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root

install -D -m 0755 "$bin" "$root/usr/bin/rtbench"
# Debian ships binaries without their debug sections.
"${tools}strip" --strip-debug --remove-section=.comment "$root/usr/bin/rtbench"

mkdir -p "$stage/man" "$root/usr/share/man/man1"
"${run[@]}" "$root/usr/bin/rtbench" __man "$stage/man" >/dev/null
for page in "$stage"/man/*.1; do
  gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
done

install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d"
"${run[@]}" "$root/usr/bin/rtbench" completions bash >"$root/usr/share/bash-completion/completions/rtbench"
"${run[@]}" "$root/usr/bin/rtbench" completions zsh >"$root/usr/share/zsh/vendor-completions/_rtbench"
"${run[@]}" "$root/usr/bin/rtbench" completions fish >"$root/usr/share/fish/vendor_completions.d/rtbench.fish"

# The unit in deploy/ runs a hand-installed /usr/local/bin/rtbench; the package's is /usr/bin.
install -d "$root/lib/systemd/system"
sed 's#/usr/local/bin/rtbench#/usr/bin/rtbench#g' deploy/rtbench-monitor.service \
  >"$root/lib/systemd/system/rtbench-monitor.service"
chmod 0644 "$root/lib/systemd/system/rtbench-monitor.service"
install -D -m 0600 deploy/rtbench-monitor.default "$root/etc/default/rtbench-monitor"

install -d "$root/usr/share/doc/rtbench"
printf 'rtbench %s\nLicense: MIT\n' "$version" >"$root/usr/share/doc/rtbench/copyright"

# dpkg-shlibdeps reads a debian/control; a minimal one in the staging directory will do.
mkdir -p "$stage/debian"
printf 'Source: rtbench\n\nPackage: rtbench\nArchitecture: any\n' >"$stage/debian/control"
depends=$(cd "$stage" && DEB_HOST_ARCH=$arch dpkg-shlibdeps -O root/usr/bin/rtbench 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# sysbench's process helper, embedded in the binary and so unseen by dpkg-shlibdeps, is linked
# with -ltirpc as LMbench's programs are (build.rs); a toolchain that links --as-needed drops it,
# one that does not keeps it, so the package depends on it either way; a cross build without
# the architecture's libtirpc-dev linked the helper without it (build.rs).
if [ "$arch" = "$native" ] || dpkg -s "libtirpc-dev:$arch" >/dev/null 2>&1; then
  depends="$depends, libtirpc3"
fi

install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: rtbench
Version: $version
Architecture: $arch
Maintainer: rtbench developers <rtbench@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends, debconf (>= 0.5) | debconf-2.0
Recommends: libcap2-bin
Suggests: stress-ng, rt-tests, qemu-system-x86
Section: utils
Priority: optional
Description: real-time latency laboratory for Linux
 Measures how a kernel serves real-time work (timer wake-ups as cyclictest,
 clock reads, message round trips, trigger response, OS noise), idle and
 under load, stores every run in SQLite and draws kernels side by side.
 The rtbench-monitor service watches latency continuously for Prometheus.
EOF
echo /etc/default/rtbench-monitor >"$root/DEBIAN/conffiles"
# Real-time privileges without root are an opt-in (a debconf question, default no): with it,
# /usr/bin/rtbench gets cap_sys_nice and cap_ipc_lock, so every user who may run it gets
# SCHED_FIFO and locked memory. Preseed: `echo rtbench rtbench/realtime-capabilities boolean
# true | debconf-set-selections`; change later: `dpkg-reconfigure rtbench`.
cat >"$root/DEBIAN/templates" <<'EOF'
Template: rtbench/realtime-capabilities
Type: boolean
Default: false
Description: Give rtbench real-time privileges for every user?
 With this, /usr/bin/rtbench carries the capabilities cap_sys_nice and
 cap_ipc_lock: any user who may run it measures at SCHED_FIFO with locked
 memory, without root. Tracing, the shield and the preemption switch still
 need root. Say no on a shared machine where users must not get real-time
 priority.
EOF
cat >"$root/DEBIAN/config" <<'EOF'
#!/bin/sh
set -e
. /usr/share/debconf/confmodule
db_input low rtbench/realtime-capabilities || true
db_go || true
EOF
# The monitor puts every CPU under a FIFO thread: installing does not start it, upgrading or
# removing stops it, and systemd is told about the unit only where systemd runs.
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  . /usr/share/debconf/confmodule
  db_get rtbench/realtime-capabilities
  if [ "$RET" = true ]; then
    if command -v setcap >/dev/null; then
      setcap cap_sys_nice,cap_ipc_lock+ep /usr/bin/rtbench
    else
      echo "rtbench: setcap is missing (install libcap2-bin): no real-time capabilities given" >&2
    fi
  elif command -v setcap >/dev/null; then
    setcap -r /usr/bin/rtbench 2>/dev/null || true
  fi
  db_stop
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
EOF
cat >"$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl stop rtbench-monitor.service || true; fi
EOF
cat >"$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = purge ] && [ -e /usr/share/debconf/confmodule ]; then
  . /usr/share/debconf/confmodule
  db_purge
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
EOF
chmod 0755 "$root/DEBIAN/config" "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/rtbench_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
