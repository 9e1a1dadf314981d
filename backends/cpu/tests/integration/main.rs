//! The CPU backend's conformance and autodiff suites.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

mod autodiff;
mod conformance;
