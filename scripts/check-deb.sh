#!/usr/bin/env bash
# What CI checks of the Debian package: it installs with dpkg -i, the binary, a man page and
# the bash completion work from where the package put them, the monitor's unit passes
# systemd-analyze verify, real-time capabilities come only with the debconf opt-in, and removing
# (then purging) it leaves none of its files behind. A package for arm64 or armhf is checked the
# same way on this machine, installed beside its architecture's libraries (multiarch: see
# scripts/setup-arm.sh), its binary run under qemu-user, and it measures for a second too.
#   scripts/check-deb.sh PACKAGE.deb     (as root)
set -euo pipefail
deb=$1
fail() { echo "check-deb: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root to install $deb"
arch=$(dpkg-deb -f "$deb" Architecture)
. "$(dirname "$0")/arm-arch.sh"
run=() machine=
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  arm_arch "$arch" || fail "$deb is for $arch, which this check cannot run"
  run=("$qemu")
fi
rtbench() { "${run[@]}" /usr/bin/rtbench "$@"; }

dpkg -i "$deb" >/dev/null
# A check that fails below still takes the package off the machine.
trap 'dpkg -P rtbench >/dev/null 2>&1 || true' EXIT
files=$(dpkg -L rtbench | while read -r f; do [ -d "$f" ] || echo "$f"; done)
conffiles=$(dpkg-query -W -f='${Conffiles}\n' rtbench | awk 'NF {print $1}')

[ "$(type -P rtbench)" = /usr/bin/rtbench ] || fail "rtbench is not /usr/bin/rtbench on PATH"
if [ -n "$machine" ]; then
  found=$(readelf -h /usr/bin/rtbench | sed -n 's/^ *Machine: *//p')
  [ "$found" = "$machine" ] || fail "the $arch package's binary is for '$found'"
  db=$(mktemp -d)
  rtbench timer -D 1s -t 1 --db "$db/runs.db" >"$db/out" 2>&1 || fail "timer under ${run[*]}: $(tail -n3 "$db/out")"
  grep -q 'stored as run 1' "$db/out" || fail "timer under ${run[*]} stored no run: $(tail -n3 "$db/out")"
  rm -rf "$db"
fi
rtbench --version | grep -q '^rtbench ' || fail "rtbench --version printed nothing like a version"
page=$(man -w rtbench-study) || fail "man finds no rtbench-study page"
[ "$page" = /usr/share/man/man1/rtbench-study.1.gz ] || fail "man found rtbench-study at $page"
completion=/usr/share/bash-completion/completions/rtbench
offered=$(bash --norc --noprofile -c "source $completion; f=\$(complete -p rtbench); f=\${f##*-F }; f=\${f%% *};
  COMP_WORDS=(rtbench st); COMP_CWORD=1; COMP_LINE='rtbench st'; COMP_POINT=10; \"\$f\" rtbench st rtbench;
  echo \"\${COMPREPLY[*]}\"")
[ "$offered" = study ] || fail "bash completes 'rtbench st' as '$offered', not 'study'"

unit=/lib/systemd/system/rtbench-monitor.service
if ! command -v systemd-analyze >/dev/null; then
  echo "check-deb: skipped systemd-analyze verify: systemd-analyze is not installed"
elif ! systemd-analyze verify /lib/systemd/system/basic.target >/dev/null 2>&1; then
  echo "check-deb: skipped systemd-analyze verify: it cannot run here (checked on basic.target)"
else
  # verify exits 0 on an unknown key and only warns: any word it says about the unit fails.
  said=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $said"
  [ -z "$said" ] || fail "systemd-analyze verify: $said"
fi

# Real-time capabilities are an opt-in: none by default, both once the question says yes, none
# again once it says no.
caps() { getcap /usr/bin/rtbench 2>/dev/null | sed 's#^/usr/bin/rtbench ##'; }
[ -z "$(caps)" ] || fail "rtbench has capabilities nobody asked for: $(caps)"
echo rtbench rtbench/realtime-capabilities boolean true | debconf-set-selections
DEBIAN_FRONTEND=noninteractive dpkg-reconfigure rtbench >/dev/null
given=$(caps)
{ grep -q cap_ipc_lock <<<"$given" && grep -q cap_sys_nice <<<"$given"; } || fail "the opt-in gave '$given'"
echo rtbench rtbench/realtime-capabilities boolean false | debconf-set-selections
DEBIAN_FRONTEND=noninteractive dpkg-reconfigure rtbench >/dev/null
[ -z "$(caps)" ] || fail "saying no again left $(caps)"

dpkg -r rtbench >/dev/null
for f in $files; do
  if [ -e "$f" ] && ! grep -qx "$f" <<<"$conffiles"; then fail "$f is left after dpkg -r"; fi
done
dpkg -P rtbench >/dev/null
for f in $conffiles; do [ ! -e "$f" ] || fail "$f is left after dpkg -P"; done
! dpkg -s rtbench >/dev/null 2>&1 || fail "dpkg still knows rtbench after purging it"
echo "check-deb: $(basename "$deb") installs, works${run[*]:+ under ${run[*]}} and removes cleanly"
