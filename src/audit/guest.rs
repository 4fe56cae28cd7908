//! Inside a virtual machine: how its idle vCPUs wait (a halted vCPU wakes only when the host
//! runs its thread again) and what KVM tells the guest about its vCPUs. On bare metal both are
//! ok with nothing to tune; the hypervisor itself and its steal are `virtualization`'s.

use super::platform::{self, Family};
use super::{cmdline_param, ev, ev_file, finding, fix, read};
use crate::model::{Evidence, Finding, Severity};

/// KVM_FEATURE_* bits of CPUID 0x40000001 EAX worth naming for real time.
const FEATURES: [(u32, &str); 4] =
    [(3, "clocksource2 (kvm-clock)"), (7, "pv_unhalt"), (12, "poll_control"), (13, "pv_sched_yield")];
/// KVM_HINTS_REALTIME, bit 0 of EDX: the vCPUs are never preempted on the host.
const HINT_REALTIME: u32 = 1;

pub fn checks() -> Vec<Finding> {
    match platform::hypervisor() {
        (Some(_), said) if platform::family() != Family::X86 => vec![guest_idle(), no_kvm_leaf(said)],
        (Some(vendor), _) => vec![guest_idle(), kvm_hints(&vendor)],
        (None, said) => vec![bare_metal("guest-idle", said.clone()), bare_metal("kvm-hints", said)],
    }
}

fn bare_metal(check: &str, said: Evidence) -> Finding {
    finding(check, Severity::Ok, "bare metal: not a guest", vec![said])
}

/// KVM's paravirtual features and hints are CPUID leaves: an ARM guest has none to read.
fn no_kvm_leaf(said: Evidence) -> Finding {
    let summary = format!("KVM's paravirtual hints are x86 CPUID leaves: none on {}", std::env::consts::ARCH);
    finding("kvm-hints", Severity::Ok, summary, vec![said])
}

fn guest_idle() -> Finding {
    let (driver_ev, driver) = ev_file("/sys/devices/system/cpu/cpuidle/current_driver");
    let (governor_ev, governor) = ev_file("/sys/devices/system/cpu/cpuidle/current_governor_ro");
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let idle = cmdline_param(&cmdline, "idle");
    let evidence = vec![driver_ev, governor_ev, ev("/proc/cmdline", format!("idle={}", idle.unwrap_or("(not given)")))];
    let f = match (driver.as_deref(), idle) {
        (_, Some("poll")) => {
            finding("guest-idle", Severity::Ok, "idle=poll: an idle vCPU never halts, it polls", evidence)
        }
        (Some("haltpoll"), _) => finding(
            "guest-idle",
            Severity::Ok,
            format!(
                "haltpoll (governor {}): an idle vCPU polls a while before it halts",
                governor.as_deref().unwrap_or("?")
            ),
            evidence,
        ),
        (d, _) => finding(
            "guest-idle",
            Severity::Warn,
            format!(
                "cpuidle {} (governor {}): an idle vCPU halts, and its next wake-up waits for the host to run its thread again",
                d.unwrap_or("unreadable"),
                governor.as_deref().unwrap_or("?")
            ),
            evidence,
        ),
    };
    fix(f, "boot the guest with cpuidle_haltpoll.force=1 (KVM only; rtbench kernels --host-cpus does) or idle=poll")
}

fn kvm_hints(vendor: &str) -> Finding {
    let (clock_ev, _) = ev_file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    let Some((features, hints)) = crate::sys::kvm_features() else {
        let evidence = vec![ev("cpuid 0x40000000", vendor), clock_ev];
        let f = finding(
            "kvm-hints",
            Severity::Unknown,
            format!("not KVM ({vendor}): no KVM paravirtual features or hints to read"),
            evidence,
        );
        return fix(f, "run real-time guests under KVM");
    };
    let named: Vec<&str> = FEATURES.iter().filter(|(bit, _)| features & (1 << bit) != 0).map(|(_, n)| *n).collect();
    let evidence = vec![
        ev(
            "cpuid 0x40000001 eax",
            format!("{features:#x}: {}", if named.is_empty() { "none".into() } else { named.join(", ") }),
        ),
        ev("cpuid 0x40000001 edx", format!("{hints:#x}{}", if hints & HINT_REALTIME != 0 { ": realtime" } else { "" })),
        clock_ev,
    ];
    let f = if hints & HINT_REALTIME != 0 {
        finding(
            "kvm-hints",
            Severity::Ok,
            "KVM hints the vCPUs are dedicated (realtime): the guest polls, never yields them",
            evidence,
        )
    } else {
        finding(
            "kvm-hints",
            Severity::Warn,
            "KVM gives no realtime hint: the guest treats its vCPUs as shared with other host work",
            evidence,
        )
    };
    fix(f, "give each vCPU a host CPU of its own (rtbench kernels --host-cpus) and tell the guest: QEMU -cpu host,kvm-hint-dedicated=on")
}
