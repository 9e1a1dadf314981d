//! Reductions: over all elements (a rank-0 result) and over one dim (kept
//! with size 1, PyTorch's `keepdim=True`; `.squeeze(dim)` drops it, changing
//! the rank in the type).

use super::{Tensor, fmt_shape};
use crate::backend::{Backend, ReduceOp};
use crate::dtype::DType;
use crate::shape::Dim;

impl<B: Backend, const D: usize> Tensor<B, D> {
    fn reduce_dim(&self, op: ReduceOp, dim: usize) -> Self {
        let dtype = self.dtype();
        assert!(dtype != DType::Bool, "{}: not defined for dtype bool (cast to i64 first)", op.name());
        if op.selects() {
            assert!(self.shape()[dim] > 0, "{}: dim {dim} of shape {} is empty", op.name(), fmt_shape(&self.shape()));
        }
        Self::wrap(B::reduce(op, &self.storage, dim))
    }

    fn reduce_all(&self, op: ReduceOp) -> Tensor<B, 0> {
        let flat = B::reshape(&self.storage, &[self.numel()]);
        let r: Tensor<B, 1> = Tensor::wrap(flat).reduce_dim(op, 0);
        Tensor::wrap(B::reshape(&r.storage, &[]))
    }

    /// Sum of every element, as a rank-0 tensor.
    pub fn sum(&self) -> Tensor<B, 0> {
        self.reduce_all(ReduceOp::Sum)
    }

    /// Mean of every element (floats).
    pub fn mean(&self) -> Tensor<B, 0> {
        self.assert_float("mean");
        self.sum().div_scalar(self.numel() as f64)
    }

    /// Largest element; NaN if any is NaN.
    pub fn max(&self) -> Tensor<B, 0> {
        self.reduce_all(ReduceOp::Max)
    }

    /// Smallest element; NaN if any is NaN.
    pub fn min(&self) -> Tensor<B, 0> {
        self.reduce_all(ReduceOp::Min)
    }

    /// Sum over `dim`, kept with size 1.
    pub fn sum_dim(&self, dim: impl Dim) -> Self {
        self.reduce_dim(ReduceOp::Sum, dim.index(D, "sum_dim"))
    }

    /// Mean over `dim`, kept with size 1 (floats).
    pub fn mean_dim(&self, dim: impl Dim) -> Self {
        self.assert_float("mean_dim");
        let d = dim.index(D, "mean_dim");
        self.reduce_dim(ReduceOp::Sum, d).div_scalar(self.shape()[d] as f64)
    }

    /// Variance over `dim`, kept with size 1, dividing by `n - correction`
    /// (`correction = 1` is PyTorch's default unbiased estimate, 0 the
    /// population variance that normalisation layers use).
    pub fn var_dim(&self, dim: impl Dim, correction: usize) -> Self {
        self.assert_float("var_dim");
        let d = dim.index(D, "var_dim");
        let n = self.shape()[d];
        let centred = self.sub(&self.mean_dim(d));
        centred.square().sum_dim(d).div_scalar(n.saturating_sub(correction) as f64)
    }

    /// Maximum over `dim`, kept with size 1.
    pub fn max_dim(&self, dim: impl Dim) -> Self {
        self.reduce_dim(ReduceOp::Max, dim.index(D, "max_dim"))
    }

    /// Minimum over `dim`, kept with size 1.
    pub fn min_dim(&self, dim: impl Dim) -> Self {
        self.reduce_dim(ReduceOp::Min, dim.index(D, "min_dim"))
    }

    /// Index (i64) of the first maximum over `dim`, kept with size 1.
    pub fn argmax(&self, dim: impl Dim) -> Self {
        self.reduce_dim(ReduceOp::ArgMax, dim.index(D, "argmax"))
    }

    /// Index (i64) of the first minimum over `dim`, kept with size 1.
    pub fn argmin(&self, dim: impl Dim) -> Self {
        self.reduce_dim(ReduceOp::ArgMin, dim.index(D, "argmin"))
    }

    pub(crate) fn assert_float(&self, op: &str) {
        let dtype = self.dtype();
        assert!(dtype.is_float(), "{op}: not defined for dtype {dtype} (convert with .to_dtype(DType::F32))");
    }
}
