//! The back end of `#[model]`: what `blaze-macros` hands over once a model
//! is parsed, checked and lowered, and the passes from there to Rust.
//!
//! ```text
//! ir.rs      the model as written: its fields (layers), their options, its precision
//! ops.rs     the one op IR (SSA, symbolic per-sample shapes) both front ends lower to
//! fuse.rs    ops -> fused ops: elementwise groups as one `Fused` op each (a kernel of
//!            `blaze_kernel_dsl::ir`), softmaxes with their scale and mask as `SoftmaxWith`
//! diff.rs    fused ops -> the reverse pass, as steps of adjoints (what they read is what
//!            the training forward keeps)
//! emit/      printing: the forward passes, the backward's steps, the cache, the plan,
//!            the export (from the ops before fusion) and the decoding step
//! generate.rs  the traits and inherent API around the passes; structs.rs the struct,
//!            its gradients and `Module` impl; quant.rs, load.rs, precision.rs,
//!            fallback.rs (the items next to errors), export.rs the other items
//! ```
//!
//! A library rather than part of the proc-macro crate, as `kernel!`'s
//! compiler is (`blaze-kernel-dsl`): the IR and its passes hold plain
//! values, so they are built and tested as any library is.

pub mod diff;
pub mod emit;
pub mod export;
pub mod fallback;
pub mod fuse;
pub mod generate;
pub mod ir;
pub mod load;
pub mod ops;
pub mod precision;
pub mod quant;
pub mod structs;
