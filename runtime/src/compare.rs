//! The elementwise comparisons, generated from the op table
//! (`blaze_spec::ops::COMPARE`): [`CmpOp`], and per op a type (`lt::Kernel`)
//! whose [`Comparison::holds`] is its operator. A backend runs a
//! comparison by asking [`CmpOp::visit`] for it as a type, so its loop is
//! compiled once per op and names none; a shader prints
//! [`CmpOp::symbol`].

/// One comparison as a type: what a backend's loop calls per element.
pub trait Comparison {
    /// The operator, the same in Rust, WGSL and `#[cube]` code.
    const SYMBOL: &'static str;
    /// Its value when either operand is NaN (IEEE 754: true for `!=`
    /// alone), for shaders that decide NaN by the bits.
    const UNORDERED: bool;
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
