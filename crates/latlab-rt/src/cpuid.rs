//! CPU identification the kernel does not expose in one file.

/// The hypervisor's vendor signature from CPUID leaf 0x4000_0000 (`KVMKVMKVM`,
/// `Microsoft Hv`, `VMwareVMware`, ...), when the CPU reports running under one.
#[cfg(target_arch = "x86_64")]
pub fn hypervisor_vendor() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 ECX bit 31 says whether the
    // hypervisor leaves at 0x4000_0000 are defined, and we only read them if so.
    #[allow(unused_unsafe)]
    let (leaf1, leaf_hv) = unsafe { (__cpuid(1), __cpuid(0x4000_0000)) };
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(12);
    for reg in [leaf_hv.ebx, leaf_hv.ecx, leaf_hv.edx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    let text: String = String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    Some(if text.is_empty() {
        "unknown hypervisor".to_string()
    } else {
        text
    })
}

/// Not available on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub fn hypervisor_vendor() -> Option<String> {
    None
}
