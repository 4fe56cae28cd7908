//! What the processor says about itself.

/// The hypervisor's vendor signature from CPUID leaf 0x40000000 ("KVMKVMKVM", "VMwareVMware",
/// "Microsoft Hv", …) when the CPU reports running under one; `None` on bare metal or non-x86.
pub fn hypervisor_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        let leaf1 = __cpuid(1);
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        // With the hypervisor bit set, leaf 0x40000000 is the hypervisor's.
        let r = __cpuid(0x4000_0000);
        let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx].iter().flat_map(|w| w.to_le_bytes()).collect();
        let name = String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string();
        Some(if name.is_empty() { "unnamed".into() } else { name })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// KVM's paravirtual CPUID leaf 0x40000001: its feature bits (EAX) and hints (EDX), when the
/// hypervisor is KVM; `None` elsewhere.
pub fn kvm_features() -> Option<(u32, u32)> {
    if hypervisor_vendor().as_deref() != Some("KVMKVMKVM") {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let r = std::arch::x86_64::__cpuid(0x4000_0001);
        Some((r.eax, r.edx))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}
