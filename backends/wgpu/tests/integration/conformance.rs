//! The runtime's conformance suite on the wgpu backend. Without an adapter
//! each test prints a notice and passes, unless `BLAZE_REQUIRE_WGPU=1`.

use blaze_wgpu::WgpuDevice;

/// The backend tensors use: the device's dtypes on the GPU, f64 and i64 on
/// the CPU.
type Wgpu = blaze::runtime::fallback::HostFallback<blaze_wgpu::WgpuNative, blaze::Cpu>;

blaze_conformance::conformance_suite!(Wgpu, WgpuDevice::default(), if WgpuDevice::probe().is_some());
