//! The CubeCL backend's tests on whatever adapter the machine has.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

mod autotune;
mod conformance;
mod half;
mod in_place;
mod kernels;
