//! The activations that are ops of the op table (`blaze_spec::ops::UNARY`
//! entries with `layer: true`), generated from it: `Relu`, `Gelu`,
//! `Sigmoid`, `Tanh`, ... Each is a unit struct whose forward is the op's
//! tensor method, whose cache is what the op's derivative reads (the
//! output, so that a `Linear` or `Conv2d` before it can apply it in its
//! bias pass, else the input) and whose backward is the op's adjoint
//! kernel.

blaze_macros::__unary_layers!();
