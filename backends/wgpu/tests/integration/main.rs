//! The wgpu backend's tests on whatever adapter the machine has.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

mod conformance;
mod faults;
mod kernels;
mod models;
mod placement;
