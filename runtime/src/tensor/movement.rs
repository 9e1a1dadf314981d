//! Shape and movement ops (reshape, permute, slice, cat, pad, ...) and
//! indexing (gather, scatter_add, index_select, index_add).

use std::ops::Range;

use super::{Tensor, check_same_device, fmt_shape};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::shape::Dim;
use blaze_spec::rules;

/// A target shape of `R` dims where one entry may be `-1` (inferred), as in
/// `torch.reshape`. Implemented for `[usize; R]` and signed integer arrays.
pub trait ShapeArg<const R: usize> {
    /// The entries, `-1` for "infer".
    fn entries(&self) -> [i64; R];
}

impl<const R: usize> ShapeArg<R> for [usize; R] {
    fn entries(&self) -> [i64; R] {
        self.map(|d| d as i64)
    }
}

macro_rules! impl_shape_arg {
    ($($t:ty),*) => {$(
        impl<const R: usize> ShapeArg<R> for [$t; R] {
            fn entries(&self) -> [i64; R] {
                self.map(|d| d as i64)
            }
        }
    )*};
}
impl_shape_arg!(i32, i64, isize);

impl<B: Backend, const D: usize> Tensor<B, D> {
    /// The same values in another shape; one entry may be `-1`.
    pub fn reshape<const R: usize>(&self, shape: impl ShapeArg<R>) -> Tensor<B, R> {
        let from = self.shape();
        let entries = shape.entries();
        let mut infer = None;
        for (i, &e) in entries.iter().enumerate() {
            if e == -1 && infer.is_none() {
                infer = Some(i);
            } else if e < 0 {
                panic!("reshape: {entries:?} is not a shape (one entry may be -1, none may be below it)");
            }
        }
        let mut out = entries.map(|e| e.max(0) as usize);
        if let Some(e) = rules::reshape(&from, &mut out, infer).err() {
            panic!("{}", e.message("reshape", &[&fmt_shape(&from), &format!("{entries:?}")], usize::to_string));
        }
        if out[..] == from[..] {
            return Tensor::wrap(self.storage.clone());
        }
        Tensor::wrap(B::reshape(&self.storage, &out))
    }

    /// Merges dims `start..=end` into one, as `torch.flatten`; `R` must be
    /// `D - (end - start)`.
    pub fn flatten<const R: usize>(&self, start: impl Dim, end: impl Dim) -> Tensor<B, R> {
        let (s, e) = (start.index(D, "flatten"), end.index(D, "flatten"));
        assert!(s <= e, "flatten: start dim {s} is after end dim {e}");
        assert!(
            R == D - (e - s),
            "flatten: merging dims {s}..={e} of a rank-{D} tensor gives rank {}, not {R}",
            D - (e - s)
        );
        let shape = self.shape();
        let mut out = [0usize; R];
        out[..s].copy_from_slice(&shape[..s]);
        out[s] = shape[s..=e].iter().product();
        out[s + 1..].copy_from_slice(&shape[e + 1..]);
        self.reshape(out)
    }

    /// Removes dim `dim`, which must have size 1; `R` must be `D - 1`.
    pub fn squeeze<const R: usize>(&self, dim: impl Dim) -> Tensor<B, R> {
        let d = dim.index(D, "squeeze");
        let shape = self.shape();
        assert!(R + 1 == D, "squeeze: a rank-{D} tensor squeezes to rank {}, not {R}", D - 1);
        assert!(shape[d] == 1, "squeeze: dim {d} of {} has size {}, not 1", fmt_shape(&shape), shape[d]);
        let mut out = [0usize; R];
        out[..d].copy_from_slice(&shape[..d]);
        out[d..].copy_from_slice(&shape[d + 1..]);
        self.reshape(out)
    }

    /// Inserts a dim of size 1 at `dim` of the result; `R` must be `D + 1`.
    pub fn unsqueeze<const R: usize>(&self, dim: impl Dim) -> Tensor<B, R> {
        assert!(R == D + 1, "unsqueeze: a rank-{D} tensor unsqueezes to rank {}, not {R}", D + 1);
        let d = dim.index(R, "unsqueeze");
        let shape = self.shape();
        let mut out = [1usize; R];
        out[..d].copy_from_slice(&shape[..d]);
        out[d + 1..].copy_from_slice(&shape[d..]);
        self.reshape(out)
    }

    /// Reorders dims: dim `i` of the result is dim `axes[i]` of this tensor.
    pub fn permute(&self, axes: [usize; D]) -> Self {
        if let Err(e) = rules::permute::<usize>(&axes, D) {
            panic!("{}", e.message("permute", &[&fmt_shape(&self.shape())], usize::to_string));
        }
        Self::wrap(B::permute(&self.storage, &axes))
    }

    /// Swaps two dims.
    pub fn transpose(&self, dim0: impl Dim, dim1: impl Dim) -> Self {
        let (a, b) = (dim0.index(D, "transpose"), dim1.index(D, "transpose"));
        let mut axes: [usize; D] = std::array::from_fn(|i| i);
        axes.swap(a, b);
        self.permute(axes)
    }

    /// Broadcasts size-1 dims (and new leading dims) to `shape`; `-1` keeps
    /// a dim, as `torch.Tensor.expand`.
    pub fn expand<const R: usize>(&self, shape: impl ShapeArg<R>) -> Tensor<B, R> {
        let entries = shape.entries();
        let from = self.shape();
        assert!(R >= D, "expand: cannot expand {} to fewer dims {:?}", fmt_shape(&from), entries);
        let lead = R - D;
        let mut out = [0usize; R];
        for i in 0..R {
            let e = entries[i];
            out[i] = if i < lead {
                assert!(e >= 0, "expand: new leading dim {i} of {entries:?} cannot be -1");
                e as usize
            } else {
                let f = from[i - lead];
                match e {
                    -1 => f,
                    e if e >= 0 && (f == e as usize || f == 1) => e as usize,
                    _ => panic!("expand: cannot expand {} to {:?} (dim {i})", fmt_shape(&from), entries),
                }
            };
        }
        let mut padded = [1usize; R];
        padded[lead..].copy_from_slice(&from);
        let x = B::reshape(&self.storage, &padded);
        if out == padded {
            return Tensor::wrap(x);
        }
        Tensor::wrap(B::expand(&x, &out))
    }

    /// `length` entries of `dim` from `start`, as `torch.narrow`.
    pub fn narrow(&self, dim: impl Dim, start: usize, length: usize) -> Self {
        let d = dim.index(D, "narrow");
        let shape = self.shape();
        let at = i64::try_from(start).unwrap_or(i64::MAX);
        if let Err(e) = rules::narrow(&shape[d], d, at, length) {
            panic!("{}", e.message("narrow", &[&fmt_shape(&shape)], usize::to_string));
        }
        let ranges: [Range<usize>; D] =
            std::array::from_fn(|i| if i == d { start..start + length } else { 0..shape[i] });
        Self::wrap(B::slice(&self.storage, &ranges))
    }

    /// Takes `ranges[i]` of the first `ranges.len()` dims and all of the
    /// rest, as `x[a:b, c:d]`.
    pub fn slice(&self, ranges: &[Range<usize>]) -> Self {
        let shape = self.shape();
        assert!(ranges.len() <= D, "slice: {} ranges for a rank-{D} tensor", ranges.len());
        let full: Vec<Range<usize>> = (0..D)
            .map(|i| match ranges.get(i) {
                Some(r) => {
                    assert!(
                        r.start <= r.end && r.end <= shape[i],
                        "slice: range {r:?} is out of bounds for dim {i} of {}",
                        fmt_shape(&shape)
                    );
                    r.clone()
                }
                None => 0..shape[i],
            })
            .collect();
        Self::wrap(B::slice(&self.storage, &full))
    }

    /// Splits `dim` into pieces of `size` (the last may be smaller), as `torch.split`.
    pub fn split(&self, size: usize, dim: impl Dim) -> Vec<Self> {
        assert!(size > 0, "split: size must be positive");
        let d = dim.index(D, "split");
        let n = self.shape()[d];
        (0..n).step_by(size).map(|s| self.narrow(d, s, size.min(n - s))).collect()
    }

    /// Splits `dim` into `chunks` nearly equal pieces, as `torch.chunk`.
    pub fn chunk(&self, chunks: usize, dim: impl Dim) -> Vec<Self> {
        assert!(chunks > 0, "chunk: chunks must be positive");
        let d = dim.index(D, "chunk");
        let n = self.shape()[d];
        self.split(n.div_ceil(chunks).max(1), d)
    }

    /// Joins tensors along `dim`, as `torch.cat`.
    pub fn cat(tensors: &[Self], dim: impl Dim) -> Self {
        assert!(!tensors.is_empty(), "cat: no tensors given");
        let d = dim.index(D, "cat");
        if let Err(e) = rules::cat(tensors.iter().map(|t| B::shape(&t.storage)), d) {
            let shapes: Vec<String> = tensors.iter().map(|t| fmt_shape(&t.shape())).collect();
            let shapes: Vec<&str> = shapes.iter().map(String::as_str).collect();
            panic!("{}", e.message("cat", &shapes, usize::to_string));
        }
        let dtype = tensors[0].dtype();
        for (i, t) in tensors.iter().enumerate().skip(1) {
            assert!(t.dtype() == dtype, "cat: tensor {i} has dtype {}, tensor 0 has {dtype}", t.dtype());
            check_same_device::<B>("cat", &[&tensors[0].storage, &t.storage]);
        }
        if tensors.len() == 1 {
            return tensors[0].clone();
        }
        let storages: Vec<B::Storage> = tensors.iter().map(|t| t.storage.clone()).collect();
        Self::wrap(B::cat(&storages, d))
    }

    /// Stacks tensors of one shape along a new dim, as `torch.stack`; `R`
    /// must be `D + 1`.
    pub fn stack<const R: usize>(tensors: &[Self], dim: impl Dim) -> Tensor<B, R> {
        assert!(!tensors.is_empty(), "stack: no tensors given");
        let d = dim.index(R, "stack");
        let first = tensors[0].shape();
        for (i, t) in tensors.iter().enumerate() {
            assert!(
                t.shape() == first,
                "stack: tensor {i} has shape {}, tensor 0 has {}",
                fmt_shape(&t.shape()),
                fmt_shape(&first)
            );
        }
        let parts: Vec<Tensor<B, R>> = tensors.iter().map(|t| t.unsqueeze(d)).collect();
        Tensor::cat(&parts, d)
    }

    /// Pads every dim with `pads[d] = (before, after)` copies of `value`.
    /// (Unlike `torch.nn.functional.pad`, pairs are listed from dim 0.)
    pub fn pad(&self, pads: [(usize, usize); D], value: f64) -> Self {
        if pads.iter().all(|&(a, b)| a == 0 && b == 0) {
            return self.clone();
        }
        Self::wrap(B::pad(&self.storage, &pads, value))
    }

    fn check_index(&self, op: &str, index_dtype: DType) {
        assert!(index_dtype == DType::I64, "{op}: indices must be i64, got {index_dtype}");
    }

    /// Picks along `dim` by an i64 index tensor of this rank, as `torch.gather`.
    pub fn gather(&self, dim: impl Dim, index: &Self) -> Self {
        let d = dim.index(D, "gather");
        self.check_index("gather", index.dtype());
        let (s, is) = (self.shape(), index.shape());
        for i in 0..D {
            assert!(
                i == d || is[i] <= s[i],
                "gather: index {} is larger than input {} at dim {i}",
                fmt_shape(&is),
                fmt_shape(&s)
            );
        }
        check_bounds("gather", index, s[d]);
        check_same_device::<B>("gather", &[&self.storage, &index.storage]);
        Self::wrap(B::gather(&self.storage, d, &index.storage))
    }

    /// A copy with `src` added at the positions `index` names along `dim`,
    /// as `torch.Tensor.scatter_add`.
    pub fn scatter_add(&self, dim: impl Dim, index: &Self, src: &Self) -> Self {
        let d = dim.index(D, "scatter_add");
        self.check_index("scatter_add", index.dtype());
        assert!(
            index.shape() == src.shape(),
            "scatter_add: index {} and src {} differ in shape",
            fmt_shape(&index.shape()),
            fmt_shape(&src.shape())
        );
        assert!(src.dtype() == self.dtype(), "scatter_add: src has dtype {}, self {}", src.dtype(), self.dtype());
        let (s, is) = (self.shape(), index.shape());
        for i in 0..D {
            assert!(
                i == d || is[i] <= s[i],
                "scatter_add: index {} is larger than self {} at dim {i}",
                fmt_shape(&is),
                fmt_shape(&s)
            );
        }
        check_bounds("scatter_add", index, s[d]);
        check_same_device::<B>("scatter_add", &[&self.storage, &index.storage, &src.storage]);
        Self::wrap(B::scatter_add(&self.storage, d, &index.storage, &src.storage))
    }

    /// The entries `index` of `dim`, as `torch.index_select`.
    pub fn index_select(&self, dim: impl Dim, index: &Tensor<B, 1>) -> Self {
        let d = dim.index(D, "index_select");
        self.check_index("index_select", index.dtype());
        check_bounds("index_select", index, self.shape()[d]);
        check_same_device::<B>("index_select", &[&self.storage, &index.storage]);
        Self::wrap(B::index_select(&self.storage, d, &index.storage))
    }

    /// A copy with slice `i` of `src` along `dim` added to slice `index[i]`,
    /// as `torch.Tensor.index_add`.
    pub fn index_add(&self, dim: impl Dim, index: &Tensor<B, 1>, src: &Self) -> Self {
        let d = dim.index(D, "index_add");
        self.check_index("index_add", index.dtype());
        let (s, ss) = (self.shape(), src.shape());
        let fits = (0..D).all(|i| if i == d { ss[i] == index.numel() } else { ss[i] == s[i] });
        assert!(
            fits,
            "index_add: src {} does not fit self {} with {} indices along dim {d}",
            fmt_shape(&ss),
            fmt_shape(&s),
            index.numel()
        );
        assert!(src.dtype() == self.dtype(), "index_add: src has dtype {}, self {}", src.dtype(), self.dtype());
        check_bounds("index_add", index, s[d]);
        check_same_device::<B>("index_add", &[&self.storage, &index.storage, &src.storage]);
        Self::wrap(B::index_add(&self.storage, d, &index.storage, &src.storage))
    }
}

impl<B: Backend> Tensor<B, 2> {
    /// The transpose of a matrix.
    pub fn t(&self) -> Self {
        self.transpose(0, 1)
    }
}

/// Panics unless every index lies in `0..bound`. Reads the indices back: an
/// out-of-bounds index is a bug worth a clear message on every backend.
fn check_bounds<B: Backend, const R: usize>(op: &str, index: &Tensor<B, R>, bound: usize) {
    if index.numel() == 0 {
        return;
    }
    let lo = index.min().item() as i64;
    let hi = index.max().item() as i64;
    assert!(lo >= 0 && (hi as usize) < bound, "{op}: index values span {lo}..={hi}, outside 0..{bound}");
}
