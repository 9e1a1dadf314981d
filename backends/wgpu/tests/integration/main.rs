//! The wgpu backend's tests on whatever adapter the machine has.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

/// The test kernels every backend's tests launch, written once.
#[path = "../../../../tests/common/kernels.rs"]
#[allow(dead_code)]
mod common_kernels;
mod conformance;
mod faults;
mod kernels;
mod models;
mod placement;
