//! Shape arithmetic shared by the runtime and the backends: broadcasting,
//! dim arguments, strides and convolution output sizes.

/// A dim argument: `usize`, or a signed integer where `-1` is the last dim,
/// as in PyTorch.
pub trait Dim: Copy {
    /// The dim as an index into a shape of `rank` dims; panics, naming `op`,
    /// when it is out of range.
    fn index(self, rank: usize, op: &str) -> usize;
}

impl Dim for usize {
    fn index(self, rank: usize, op: &str) -> usize {
        assert!(self < rank, "{op}: dim {self} is out of range for a tensor of rank {rank}");
        self
    }
}

macro_rules! impl_signed_dim {
    ($($t:ty),*) => {$(
        impl Dim for $t {
            fn index(self, rank: usize, op: &str) -> usize {
                let r = rank as i64;
                let d = self as i64;
                let i = if d < 0 { d + r } else { d };
                assert!(
                    (0..r).contains(&i),
                    "{op}: dim {self} is out of range for a tensor of rank {rank}"
                );
                i as usize
            }
        }
    )*};
}
impl_signed_dim!(i32, i64, isize);

/// Row-major strides of `shape`, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The NumPy broadcast of two shapes of equal rank, or `None` when a pair of
/// dims differs and neither is 1.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    if a.len() != b.len() {
        return None;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, _) => Some(y),
            (_, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Output size of a sliding window along one axis, as PyTorch computes it:
/// `(size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`, or
/// `None` when the window does not fit.
pub fn window_output_size(size: usize, kernel: usize, stride: usize, padding: usize, dilation: usize) -> Option<usize> {
    let span = dilation * (kernel.checked_sub(1)?) + 1;
    let padded = size + 2 * padding;
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
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[1, 4, 3]), Some(vec![2, 4, 3]));
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 5]), Some(vec![0, 5]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 3]), None);
        assert_eq!(broadcast_shapes(&[], &[]), Some(vec![]));
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
