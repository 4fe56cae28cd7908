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
