//! What the audit reads differently on x86 and on ARM: how a hypervisor shows itself (x86's
//! CPUID leaf; on ARM the firmware's description of the machine), which clock source is the
//! cheap one (the TSC; the architected timer's counter), and whether SMIs exist at all.

use super::{ev, read};
use crate::model::Evidence;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    X86,
    Arm,
    Other,
}

/// The processor family rtbench runs on (the kernel's, since the kernel runs rtbench).
pub fn family() -> Family {
    match std::env::consts::ARCH {
        "x86_64" | "x86" => Family::X86,
        "aarch64" | "arm" => Family::Arm,
        _ => Family::Other,
    }
}

/// DMI vendors and products of virtual machines, as their firmware names them.
const VM_DMI: &[&str] = &["QEMU", "KVM", "VMware", "innotek", "Xen", "Microsoft Corporation", "Parallels"];

/// The hypervisor this machine runs under (None: bare metal), and what says so.
pub fn hypervisor() -> (Option<String>, Evidence) {
    if family() == Family::X86 {
        let vendor = crate::sys::hypervisor_vendor();
        let said = vendor.clone().unwrap_or_else(|| "no hypervisor bit".into());
        return (vendor, ev("cpuid 0x40000000", said));
    }
    let compatible = std::fs::read("/proc/device-tree/compatible").ok();
    firmware_hypervisor(
        read("/sys/hypervisor/type").as_deref(),
        read("/sys/class/dmi/id/sys_vendor").as_deref(),
        compatible.as_deref(),
    )
}

/// ARM has no CPUID leaf for a hypervisor: Xen says so in sysfs, an ACPI machine's DMI names
/// its vendor, and a device-tree machine its board (QEMU's `virt` board: "linux,dummy-virt").
fn firmware_hypervisor(xen: Option<&str>, dmi: Option<&str>, compatible: Option<&[u8]>) -> (Option<String>, Evidence) {
    if let Some(kind) = xen.filter(|k| !k.is_empty()) {
        return (Some(kind.to_string()), ev("/sys/hypervisor/type", kind));
    }
    if let Some(vendor) = dmi.filter(|v| VM_DMI.iter().any(|k| v.contains(k))) {
        return (Some(vendor.to_string()), ev("/sys/class/dmi/id/sys_vendor", vendor));
    }
    let boards: Vec<String> = compatible
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    let source = "/proc/device-tree/compatible";
    if boards.iter().any(|b| b == "linux,dummy-virt") {
        return (Some("QEMU virt board".into()), ev(source, boards.join(", ")));
    }
    match (dmi, boards.is_empty()) {
        (Some(vendor), true) => (None, ev("/sys/class/dmi/id/sys_vendor", vendor)),
        (_, false) => (None, ev(source, boards.join(", "))),
        (None, true) => (None, ev(source, "unreadable, and no DMI vendor")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arm_machine_is_known_as_a_guest_by_its_firmware_s_words() {
        let (vm, e) = firmware_hypervisor(None, None, Some(b"linux,dummy-virt\0"));
        assert_eq!((vm.as_deref(), e.value.as_str()), (Some("QEMU virt board"), "linux,dummy-virt"));
        let (vm, e) = firmware_hypervisor(None, Some("QEMU"), None);
        assert_eq!((vm.as_deref(), e.source.as_str()), (Some("QEMU"), "/sys/class/dmi/id/sys_vendor"));
        assert_eq!(firmware_hypervisor(Some("xen"), None, None).0.as_deref(), Some("xen"));
        let pi = b"raspberrypi,4-model-b\0brcm,bcm2711\0";
        let (vm, e) = firmware_hypervisor(None, None, Some(pi));
        assert_eq!((vm, e.value.as_str()), (None, "raspberrypi,4-model-b, brcm,bcm2711"), "a board is bare metal");
        let (vm, e) = firmware_hypervisor(None, Some("Ampere(R)"), None);
        assert_eq!((vm, e.value.as_str()), (None, "Ampere(R)"), "a server's own vendor is bare metal");
    }
}
