//! The `/dev/cpu_dma_latency` PM QoS request that keeps CPUs out of deep C-states.

use crate::RtError;
use std::fs::{File, OpenOptions};
use std::io::Write;

/// Holds a CPU DMA latency request open; the kernel drops it when the file closes.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: File,
    /// The requested latency in microseconds.
    pub microseconds: i32,
}

impl DmaLatencyGuard {
    /// The device file.
    pub const PATH: &'static str = "/dev/cpu_dma_latency";

    /// Requests a maximum C-state exit latency of `microseconds` (0 = stay in C0/C1).
    pub fn request(microseconds: i32) -> Result<DmaLatencyGuard, RtError> {
        let mut file = OpenOptions::new()
            .write(true)
            .open(Self::PATH)
            .map_err(|e| RtError::new(format!("open {}", Self::PATH), e))?;
        // The kernel accepts the value as a 4-byte binary integer.
        file.write_all(&microseconds.to_ne_bytes())
            .map_err(|e| RtError::new(format!("write {}", Self::PATH), e))?;
        Ok(DmaLatencyGuard {
            _file: file,
            microseconds,
        })
    }
}
