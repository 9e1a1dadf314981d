//! Shape arithmetic shared by the runtime and the backends: broadcasting,
//! dim arguments, strides and convolution output sizes. The rules that
//! `#[model]` checks too come from `blaze_spec::rules`.

use blaze_spec::rules;

/// A dim argument: `usize`, or a signed integer where `-1` is the last dim,
/// as in PyTorch.
pub trait Dim: Copy {
    /// The dim as an index into a shape of `rank` dims; panics, naming `op`,
    /// when it is out of range.
    fn index(self, rank: usize, op: &str) -> usize;
}

impl Dim for usize {
    fn index(self, rank: usize, op: &str) -> usize {
        dim_index(i64::try_from(self).unwrap_or(i64::MAX), rank, op)
    }
}

macro_rules! impl_signed_dim {
    ($($t:ty),*) => {$(
        impl Dim for $t {
            fn index(self, rank: usize, op: &str) -> usize {
                dim_index(self as i64, rank, op)
            }
        }
    )*};
}
impl_signed_dim!(i32, i64, isize);

/// The op table's dim rule (`-1` is the last dim), panicking as `op`.
fn dim_index(dim: i64, rank: usize, op: &str) -> usize {
    rules::dim::<usize>(dim, rank).unwrap_or_else(|e| panic!("{}", e.message(op, &[], usize::to_string)))
}

/// Row-major strides of `shape`, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The NumPy broadcast of two shapes of equal rank (the shared rule,
/// `blaze_spec::rules::broadcast`), or `None` when a pair of dims differs
/// and neither is 1.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Dims> {
    rules::broadcast(a, b).ok().map(|dims| dims.copied().collect())
}

/// The broadcast of several shapes of one rank, which the tensor op has
/// checked; panics, naming them, where they do not broadcast.
pub fn broadcast_all(shapes: &[&[usize]]) -> Dims {
    let (first, rest) = shapes.split_first().expect("broadcast_all: no shapes");
    rest.iter().fold(Dims::from(*first), |acc, s| {
        broadcast_shapes(&acc, s).unwrap_or_else(|| panic!("broadcast_all: {shapes:?} do not broadcast"))
    })
}

/// Dims without a heap allocation up to rank [`Dims::INLINE`] (every op
/// computes a few shapes, and a training step should not allocate).
#[derive(Clone)]
pub struct Dims {
    len: usize,
    inline: [usize; Dims::INLINE],
    /// Used instead of `inline` past its capacity.
    spill: Vec<usize>,
}

impl Dims {
    /// Ranks held without allocating.
    pub const INLINE: usize = 8;

    /// No dims.
    pub const fn new() -> Self {
        Dims { len: 0, inline: [0; Dims::INLINE], spill: Vec::new() }
    }

    /// Appends a dim.
    pub fn push(&mut self, d: usize) {
        if self.len < Self::INLINE {
            self.inline[self.len] = d;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(d);
        }
        self.len += 1;
    }
}

impl Default for Dims {
    fn default() -> Self {
        Self::new()
    }
}

impl From<&[usize]> for Dims {
    fn from(dims: &[usize]) -> Self {
        let mut out = Dims::new();
        out.extend(dims.iter().copied());
        out
    }
}

impl FromIterator<usize> for Dims {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut out = Dims::new();
        out.extend(iter);
        out
    }
}

impl Extend<usize> for Dims {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, iter: I) {
        iter.into_iter().for_each(|d| self.push(d));
    }
}

impl std::ops::Deref for Dims {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        if self.len <= Self::INLINE { &self.inline[..self.len] } else { &self.spill }
    }
}

impl std::ops::DerefMut for Dims {
    fn deref_mut(&mut self) -> &mut [usize] {
        if self.len <= Self::INLINE { &mut self.inline[..self.len] } else { &mut self.spill }
    }
}

impl std::fmt::Debug for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Dims {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// Output size of a sliding window along one axis, as PyTorch computes it:
/// `(size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`, or
/// `None` when the window does not fit.
pub fn window_output_size(size: usize, kernel: usize, stride: usize, padding: usize, dilation: usize) -> Option<usize> {
    let span = dilation.checked_mul(kernel.checked_sub(1)?)?.checked_add(1)?;
    let padded = padding.checked_mul(2)?.checked_add(size)?;
    if span > padded || stride == 0 {
        return None;
    }
    Some((padded - span) / stride + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[1, 4, 3]).as_deref(), Some(&[2, 4, 3][..]));
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 5]).as_deref(), Some(&[0, 5][..]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 3]), None);
        assert_eq!(broadcast_shapes(&[], &[]).as_deref(), Some(&[][..]));
        let long: Vec<usize> = (1..12).collect();
        assert_eq!(broadcast_shapes(&long, &long).as_deref(), Some(&long[..]), "past the inline capacity");
    }

    #[test]
    fn window_sizes_match_pytorch() {
        assert_eq!(window_output_size(28, 5, 1, 2, 1), Some(28));
        assert_eq!(window_output_size(28, 2, 2, 0, 1), Some(14));
        assert_eq!(window_output_size(7, 3, 2, 1, 2), Some(3));
        assert_eq!(window_output_size(4, 5, 1, 0, 1), None);
    }

    #[test]
    fn negative_dims_count_from_the_end() {
        assert_eq!((-1i32).index(3, "t"), 2);
        assert_eq!(0usize.index(1, "t"), 0);
    }

    #[test]
    #[should_panic(expected = "sum_dim: dim 3 is out of range for a tensor of rank 3")]
    fn out_of_range_dim_names_the_op() {
        3usize.index(3, "sum_dim");
    }
}
