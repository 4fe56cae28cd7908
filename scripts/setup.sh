#!/usr/bin/env bash
# Installs what rtbench's tests and benchmarks need on a fresh Debian machine. Crates come
# through cargo. Safe to run again.
#   scripts/setup.sh          packages the tests need (both tiers: README)
#   scripts/setup.sh --bench  also the reference tools the benchmarks compare against
set -euo pipefail

# The full tier runs under cargo-nextest (its JUnit file times each test), built from crates.io:
# without its self-update (an HTTP client and TLS stack of its own) and unoptimised, which only
# starts and watches test processes, with no debug info: 1 min 33 s of build on two CPUs, not 7.
# It builds while the packages below download and unpack. (cargo links with the system's cc,
# so a machine that has cargo has what this build needs.)
nextest_pid=
if ! cargo nextest --version >/dev/null 2>&1; then
  nextest_log=$(mktemp)
  CARGO_PROFILE_DEV_DEBUG=0 cargo install --locked --quiet --debug --no-default-features \
    --features default-no-update cargo-nextest >"$nextest_log" 2>&1 &
  nextest_pid=$!
  # A setup that fails below does not leave the build running.
  trap 'kill "$nextest_pid" 2>/dev/null || true; rm -f "$nextest_log"' EXIT
fi

need=()
command -v setpriv >/dev/null || need+=(util-linux)   # the unprivileged-run test drops to nobody
command -v setcap >/dev/null || need+=(libcap2-bin)  # the capabilities test gives a copy cap_sys_nice
command -v kill >/dev/null || need+=(procps)          # the signal tests send signals
command -v script >/dev/null || need+=(bsdutils)      # the live-view test needs a terminal
command -v chromium >/dev/null || need+=(chromium)    # the report test renders index.html
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)  # text in PNG figures
command -v ip >/dev/null || need+=(iproute2)          # the two-host tests use network namespaces
command -v make >/dev/null || need+=(make)            # the compile load
command -v cc >/dev/null || need+=(gcc)
[ -e /usr/include/tirpc/rpc/rpc.h ] || need+=(libtirpc-dev)  # sysbench's fork helper links -ltirpc, as LMbench
command -v cyclictest >/dev/null || need+=(rt-tests)   # the import test reads real cyclictest output
command -v prometheus >/dev/null || need+=(prometheus) # the fleet test scrapes two monitors with it
command -v curl >/dev/null || need+=(curl)             # and queries it inside a network namespace
command -v man >/dev/null || need+=(man-db)         # the man page test reads every page with man -l
[ -x /usr/sbin/sshd ] || need+=(openssh-server)     # the Ansible test's two hosts each run an sshd
command -v ssh >/dev/null || need+=(openssh-client) # which Ansible reaches over SSH
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)  # Ansible's virtual environment
# CI builds the Debian package (scripts/package-deb.sh) and verifies its systemd unit.
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v strip >/dev/null || need+=(binutils)
command -v systemd-analyze >/dev/null || need+=(systemd)
# The kernels test boots Debian's kernels in QEMU through virtme-ng, whose initramfs needs busybox.
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v depmod >/dev/null || need+=(kmod)
# The timerlat guest test runs an rtla 6.3 or later (below), which links these.
[ -e /usr/lib/x86_64-linux-gnu/libtracefs.so.1 ] || need+=(libtracefs1)
[ -e /usr/lib/x86_64-linux-gnu/libtraceevent.so.1 ] || need+=(libtraceevent1)
if [ "${1:-}" = "--bench" ]; then
  command -v stress-ng >/dev/null || need+=(stress-ng)
  command -v sockperf >/dev/null || need+=(sockperf)
  command -v bpftool >/dev/null || need+=(bpftool)     # the split bench reads its program's run time
  command -v bc >/dev/null || need+=(bc)
  command -v /usr/bin/time >/dev/null || need+=(time)
  python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
fi
if [ "${1:-}" != "--bench" ] && ! python3 -c 'import numpy' 2>/dev/null; then
  # The fidelity test checks rtbench's statistics against numpy on the same samples.
  python3 -m pip install -q numpy 2>/dev/null || need+=(python3-numpy)
fi
if ! command -v vng >/dev/null; then
  python3 -m pip install -q virtme-ng 2>/dev/null || { echo "setup: could not install virtme-ng" >&2; exit 1; }
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${need[*]}" >&2
    exit 1
  fi
  # A foreign architecture's index read mid-sync fails the update (scripts/setup-arm.sh): apt
  # keeps the indexes it could read, and the install below says what it cannot find.
  apt-get update -qq || echo "setup: some package indexes could not be read; going on with the others" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The guest tests boot Debian's standard and RT kernels: their packages are downloaded once, here,
# into the cache `rtbench kernels deb:PACKAGE` reads, not at each test.
kernels_cache="${XDG_CACHE_HOME:-$HOME/.cache}/rtbench/kernels/debs"
mkdir -p "$kernels_cache"
for meta in linux-image-amd64 linux-image-rt-amd64; do
  ls "$kernels_cache/${meta}_"*.deb >/dev/null 2>&1 \
    || (cd "$kernels_cache" && apt-get download -qq "$meta") \
    || { echo "setup: could not download $meta" >&2; exit 1; }
  kernel=$(dpkg-deb -f "$(ls "$kernels_cache/${meta}_"*.deb | tail -n1)" Depends | grep -o 'linux-image-[^ ,|]*' | head -n1)
  ls "$kernels_cache/${kernel}_"*.deb >/dev/null 2>&1 \
    || (cd "$kernels_cache" && apt-get download -qq "$kernel") \
    || { echo "setup: could not download $kernel" >&2; exit 1; }
done
# The Ansible test runs the collection with the ansible-core and ansible-lint its requirements
# pin, from a virtual environment of the repository's own (made once, kept in target/).
venv="$(dirname "$0")/../target/ansible-venv"
reqs="$(dirname "$0")/../deploy/ansible/requirements.txt"
if ! cmp -s "$reqs" "$venv/requirements.txt" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" || { echo "setup: could not make a Python virtual environment" >&2; exit 1; }
  "$venv/bin/pip" install -q -r "$reqs" || { echo "setup: could not install ansible-core and ansible-lint" >&2; exit 1; }
  cp "$reqs" "$venv/requirements.txt"
fi
# The timerlat guest test holds rtbench's breach breakdown against rtla timerlat's auto-analysis
# (-a), which rtla has from 6.3 on; Debian 12's rtla is 6.1. bookworm-backports has a newer one:
# it is unpacked into target/rtla, beside (not over) the system's, through an apt state of its
# own so the machine's sources stay as they are.
rtla_dir="$(dirname "$0")/../target/rtla"
# Not having it leaves that full-tier test ignored with the reason (a failure under CI): a
# warning here, not a failure.
rtla_backport() {
  local apt_dir mirror opts
  apt_dir="$(cd "$(dirname "$0")/.." && pwd)/target/rtla-apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  # The Debian archive the machine already uses.
  mirror=$(grep -rhoE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')
  mirror=${mirror:-$(grep -hoE '^deb +[^ ]+/debian/? ' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $2}')}
  [ -n "$mirror" ] || { echo "setup: no Debian archive in apt's sources: no rtla 6.3+" >&2; return 0; }
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" > "$apt_dir/sources.list"
  opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=- \
    -o "Dir::State::lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update -qq || { echo "setup: could not read bookworm-backports: no rtla 6.3+" >&2; return 0; }
  (cd "$apt_dir" && rm -f rtla_*.deb && apt-get "${opts[@]}" download -qq rtla/bookworm-backports) \
    || { echo "setup: could not download rtla from bookworm-backports" >&2; return 0; }
  rm -rf "$rtla_dir" && dpkg-deb -x "$apt_dir"/rtla_*.deb "$rtla_dir"
}
if ! "$rtla_dir/usr/bin/rtla" timerlat top -h 2>&1 | grep -q -- --no-aa; then
  rtla_backport
fi
if [ -n "$nextest_pid" ] && ! wait "$nextest_pid"; then
  cat "$nextest_log" >&2
  echo "setup: could not install cargo-nextest" >&2
  exit 1
fi
echo "setup: ready"
