//! The importer's tests: generated models against their ONNX files, and
//! seeded fuzzing of the reader.
//! One test binary for the package: its files are modules here, so the
//! test command compiles and links the stack once instead of once per
//! file. Binaries with their own `main` or global state stay apart.

// The digits model both the export and the round trip build, compiled once.
#[path = "../../../examples/common/digits.rs"]
#[allow(dead_code)]
mod digits;
mod export;
mod fuzz;
mod generated;
mod import;
mod refusals;
mod roundtrip;
