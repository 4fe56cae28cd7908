# Sourced by the vs-rtla scripts: where they run, and what the kernel there must have.
#
#   rtla_where NAME TRACER ENV [no-rtla]
#                                 with GUEST=VMLINUZ, boots VMLINUZ with virtme-ng (2 vCPUs, TCG:
#                                 no usable KVM here, the clock on the TSC; KEEP=DIR writable
#                                 there; APPEND=PARAMS more kernel parameters, e.g.
#                                 pti=off; MONITOR=SOCK QEMU's monitor on that unix socket and
#                                 the guest's console on stderr, to see where a guest that
#                                 stops answering is: `info registers -a` over the socket, the
#                                 addresses against /proc/kallsyms of another boot, both with
#                                 APPEND=nokaslr: Debian's System.map is a placeholder)
#                                 on this root file system and runs the
#                                 calling script inside with ENV; else checks that rtla and the
#                                 kernel's TRACER are here (rtla not, with no-rtla: the script
#                                 drives the tracer itself) and mounts tracefs.
#                                 With GUEST_ARCH=arm64 too (GUEST: Debian's arm64 RT kernel,
#                                 RTBENCH: an arm64 rtbench, scripts/cross.sh), it boots on the
#                                 arm64 root `rtbench kernels` made (GUEST_ROOT, default in its
#                                 cache), with the bench scripts and RTBENCH copied into it.
#                                 TRACER empty: no tracer is needed.
rtla_where() {
    local name=$1 tracer=$2 env=$3 rtla=${4:-}
    [ -x "$RTBENCH" ] || { echo "$name: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
    if [ -n "${GUEST:-}" ]; then
        [ -r "$GUEST" ] || { echo "$name: GUEST=$GUEST is not a readable kernel image" >&2; exit 2; }
        command -v vng >/dev/null || { echo "$name: virtme-ng (vng) is not installed; scripts/setup.sh installs it" >&2; exit 2; }
        if [ "${GUEST_ARCH:-}" = arm64 ]; then
            local root=${GUEST_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rtbench/kernels/root-arm64} share
            [ -e "$root/.rtbench-packages" ] || { echo "$name: no arm64 root in $root: run rtbench kernels with an arm64 kernel once" >&2; exit 2; }
            # virtme-ng shares with a guest of another root only what that root holds.
            mkdir -p "$root/rtbench"
            share=$(mktemp -d "$root/rtbench/bench-XXXXXX")
            cp -r "$(dirname "$(realpath "$0")")" "$share/bench"
            cp "$RTBENCH" "$share/rtbench"
            local seen=/rtbench/$(basename "$share")
            # vng's own status is the guest's end (a panic once its init returns): the script's
            # is the one it wrote.
            vng -r "$GUEST" --arch arm64 --root "$root" --disable-kvm --cpus 2 --memory 1G --force-9p \
                --qemu-opts=-nodefaults --rwdir "$share" ${APPEND:+--append "$APPEND"} \
                --exec "env $env RTBENCH=$seen/rtbench bash $seen/bench/$(basename "$0") >$seen/out.txt 2>&1; echo \$? >$seen/status" || true
            # Without virtio-serial (QEMU's default devices are off) the guest's output goes to
            # its console, not here: it is kept in the share instead.
            cat "$share/out.txt" 2>/dev/null || echo "$name: the guest wrote no output" >&2
            local status
            status=$(cat "$share/status" 2>/dev/null || echo 1)
            rm -rf "$share"
            exit "$status"
        fi
        # As rtbench's own emulated guests (src/vm/guest.rs): TCG's `max` CPU with Intel's vendor
        # string and no TSC watchdog, or Linux keeps time on the emulated HPET and every clock
        # read of rtbench's is a system call and a device access under QEMU's one lock, while
        # the kernel's tracers read the TSC.
        exec vng -r "$GUEST" --disable-kvm --cpus 2 --qemu-opt=-cpu --qemu-opt=max,vendor=GenuineIntel \
            --append "tsc=nowatchdog${APPEND:+ $APPEND}" ${KEEP:+--rwdir "$KEEP"} \
            ${MONITOR:+--verbose --qemu-opt=-monitor --qemu-opt=unix:$MONITOR,server,nowait} --exec "env $env RTBENCH=$RTBENCH $(realpath "$0")"
    fi
    [ "$rtla" = no-rtla ] || command -v rtla >/dev/null || { echo "$name: rtla is not installed (apt-get install rtla)" >&2; exit 2; }
    mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
    # Whether the kernel isolates page tables: a user-space loop pays for each kernel exit that
    # switches them (under TCG the emulator flushes its TLB), a kernel thread does not. With it
    # on, oslat's user-space loop saw 1.00-1.07x the noise of rtla's kernel thread in the RT
    # guest: not a difference that shows there.
    echo "$name in $(uname -r) ($(uname -m)): Meltdown $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo unknown)"
    [ -z "$tracer" ] || grep -qw "$tracer" /sys/kernel/tracing/available_tracers || { echo "$name: this kernel ($(uname -r)) has no $tracer tracer" >&2; exit 2; }
}
