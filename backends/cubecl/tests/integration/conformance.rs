//! The runtime's conformance suite on the CubeCL backend. Without an
//! adapter each test prints a notice and passes, unless
//! `BLAZE_REQUIRE_CUBECL=1`.
//!
//! The device measures no kernels (autotuning off): each op takes its
//! fixed choice, checked once per shape class against its reference
//! kernel, so the suite's many shapes compile one or two kernels each;
//! `tests/integration/autotune.rs` covers the tuner, and each tuned convolution and
//! pooling kernel is compared with the CPU in `conv.rs`'s unit tests.

use std::sync::OnceLock;

use blaze_cubecl::{CubeDevice, CubeOptions};

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type CubeCl = blaze_fallback::HostFallback<blaze_cubecl::CubeNative, blaze_cpu::Cpu>;

fn device() -> Option<CubeDevice> {
    static DEVICE: OnceLock<Option<CubeDevice>> = OnceLock::new();
    DEVICE
        .get_or_init(|| CubeDevice::probe_with(CubeOptions { autotune: Some(false), ..CubeOptions::default() }))
        .clone()
}

blaze_conformance::conformance_suite!(CubeCl, device().expect("checked"), if device().is_some());
