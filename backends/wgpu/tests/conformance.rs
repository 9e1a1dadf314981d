//! The runtime's conformance suite on the wgpu backend. Without an adapter
//! each test prints a notice and passes, unless `BLAZE_REQUIRE_WGPU=1`.

use blaze_wgpu::{Wgpu, WgpuDevice};

blaze_runtime::conformance_suite!(Wgpu, WgpuDevice::default(), if WgpuDevice::probe().is_some());
