//! Which products run in 16 bits under a 16-bit precision policy: one
//! rule, read by the runtime as each product runs and by `#[model]` to
//! list the plan of a model's products at compile time.

/// The depth (the summed dim, `k` of `m x k` by `k x n`) below which a
/// product of f32 tensors stays f32 under a bf16 or f16 policy. Rounding
/// the operands costs a pass over them, and a shallow product does too
/// little work per value for the 16-bit units to pay it back: measured
/// on AMX, a 64 x 16 by 16 x 64 product per attention head ran at 0.56x
/// of f32, while depths of 64 and up ran at 2x and more.
pub const MIN_ROUNDED_DEPTH: usize = 32;

/// Whether a product of depth `k` rounds its operands under a 16-bit policy.
pub const fn rounds(k: usize) -> bool {
    k >= MIN_ROUNDED_DEPTH
}

/// One product a layer runs, forward or backward, whose depth its sizes
/// fix (`g^T x`, summed over the batch, is not one: its depth is large).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Product {
    /// What it computes, as a plan lists it (`x W^T`, `per-head scores`).
    pub what: &'static str,
    /// Its depth.
    pub depth: usize,
}

/// A product of depth `depth`.
pub const fn product(what: &'static str, depth: usize) -> Product {
    Product { what, depth }
}
