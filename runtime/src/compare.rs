//! The elementwise comparisons, generated from the op table
//! (`blaze_spec::ops::COMPARE`): [`CmpOp`], and per op a type (`lt::Kernel`)
//! whose [`Comparison::holds`] is its operator. A backend runs a
//! comparison by asking [`CmpOp::visit`] for it as a type, so its loop is
//! compiled once per op and names none; a shader prints
//! [`CmpOp::symbol`] and decides NaN by [`CmpOp::unordered`].

/// One comparison as a type: what a backend's loop calls per element.
pub trait Comparison {
    /// `a <op> b`; for floats IEEE 754's answer, NaN included.
    fn holds<T: PartialOrd>(a: T, b: T) -> bool;
}

/// What a caller does with a comparison: [`CmpOp::visit`] calls
/// [`CmpVisitor::visit`] with it.
pub trait CmpVisitor {
    /// What the visit returns.
    type Out;
    /// Called with the comparison `K`.
    fn visit<K: Comparison>(self) -> Self::Out;
}

blaze_macros::__compare_ops!();
