//! The elementwise ops of two tensors, generated from the op table
//! (`blaze_spec::ops::BINARY`): [`BinaryOp`], and per op with a float
//! body a module holding its kernel (`maximum::Kernel`: the CPU's loop
//! body, the WGSL the wgpu backend runs, its partial derivatives by `a`
//! and `b`). A backend runs an op's float form by asking
//! [`BinaryOp::visit`] for its kernel as a type, so it names no op; the
//! integer and bool forms are each backend's own (`wrapping_add`, `&`).

use crate::kernel_def::Elementwise;

/// What a caller does with an op's kernel: [`BinaryOp::visit`] calls
/// [`BinaryVisitor::visit`] with it, so the caller's loop is compiled
/// once per op.
pub trait BinaryVisitor {
    /// What the visit returns.
    type Out;
    /// Called with the op's kernel `K`, a function of `a` and `b`.
    fn visit<K: Elementwise>(self) -> Self::Out;
}

blaze_macros::__binary_ops!();
