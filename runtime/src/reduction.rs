//! The reductions over one dim, generated from the op table
//! (`blaze_spec::ops::REDUCE`): [`ReduceOp`], and per op a type
//! (`max::Kernel`) whose [`Reduction::step`] is its fold or selection. A
//! backend runs a reduction by asking [`ReduceOp::visit`] for it as a
//! type, so its loop is compiled once per op and names none; a shader
//! prints [`ReduceOp::symbol`].

/// One reduction as a type: what a backend's loop calls per element.
pub trait Reduction {
    /// A selection (the first winner, NaN winning) rather than a fold.
    const SELECTS: bool;
    /// The result is the winner's position (as i64), not its value.
    const POSITION: bool;
    /// Whether `v` beats `best` under a selection: a NaN beats every
    /// number and stays; otherwise the table's operator. Never for a fold.
    fn beats<T: PartialOrd>(v: T, best: T) -> bool;
    /// The accumulator after `v`: a fold's `acc <op> v`, or a selection's
    /// winner of the two (`acc` on a tie).
    fn step<T: Copy + PartialOrd + core::ops::Add<Output = T>>(acc: T, v: T) -> T;
}

/// What a caller does with a reduction: [`ReduceOp::visit`] calls
/// [`ReduceVisitor::visit`] with it.
pub trait ReduceVisitor {
    /// What the visit returns.
    type Out;
    /// Called with the reduction `R`.
    fn visit<R: Reduction>(self) -> Self::Out;
}

blaze_macros::__reduce_ops!();
