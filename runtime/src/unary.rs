//! The elementwise ops of one tensor, generated from the op table
//! (`blaze_spec::ops::UNARY`): [`UnaryOp`], the tensor methods
//! (`Tensor::sigmoid`, `Tensor::leaky_relu`, ...), and per op a module holding
//! its kernel (`sigmoid::Kernel`: the CPU's loop body, the WGSL the wgpu
//! backend runs, its partial derivatives) and its adjoint
//! (`sigmoid::adjoint::Kernel`, `g * ∂f/∂x` in one pass).
//!
//! A backend runs an op by asking [`UnaryOp::visit`] for its kernels as
//! types, so it names no op; a fused group of `#[model]` calls the same
//! kernels, so an op computes the same bits fused and unfused.

pub use blaze_spec::ops::MAX_UNARY_PARAMS;

use crate::kernel_def::Elementwise;

/// An op of the table as types: its kernel (arguments: the input, then
/// the op's parameters) and its adjoint (the input, or the output where
/// [`UnaryOp::grad_of_output`] says so, the parameters, then the output's
/// gradient).
pub trait UnaryKernel {
    /// The op.
    type Value: Elementwise;
    /// `g * ∂f/∂x`.
    type Adjoint: Elementwise;
}

/// What a caller does with an op's kernels: [`UnaryOp::visit`] calls
/// [`UnaryVisitor::visit`] with the op's kernels and its parameters, so
/// the caller's loop is compiled once per op.
pub trait UnaryVisitor {
    /// What the visit returns.
    type Out;
    /// Called with the op's kernels `K` and its parameters, in order.
    fn visit<K: UnaryKernel>(self, params: &[f64]) -> Self::Out;
}

blaze_macros::__unary_ops!();
