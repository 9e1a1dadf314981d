//! Dims that may be known only by name: the batch dim and a sequence
//! length are symbolic in an exported model, and shape arithmetic (a
//! reshape to `[-1, T, 8]` after `[batch, 4, T, 8]`) multiplies and divides
//! them. The spec's monomial dims (`blaze_spec::dim`), named by string.

/// An integer times a product of names.
pub type Dim = blaze_spec::dim::Dim<String>;

/// `[a, b, c]`.
pub fn show(dims: &[Dim]) -> String {
    blaze_spec::dim::show(dims, String::clone)
}
