//! Views (reshape, permute, slice share the values when they can) and the
//! ops that move values: expand, pad, cat, gather, scatter and index ops.

use std::ops::Range;

use blaze_runtime::shape::Dims;
use ndarray::{ArrayViewMut, Axis, IxDyn, Slice};

use crate::pool::{self, Pooled};
use crate::storage::{Array, Num};

/// `out` (row-major, of `shape`) as an n-d view.
fn view_mut<'a, T>(shape: &[usize], out: &'a mut [T]) -> ArrayViewMut<'a, T, IxDyn> {
    ArrayViewMut::from_shape(IxDyn(shape), out).expect("the output fills its shape")
}

/// Another shape over the same values; copies only a strided input.
pub(crate) fn reshape<T: Pooled>(a: &Array<T>, shape: &[usize]) -> Array<T> {
    pool::standard(a).into_shape_with_order(IxDyn(shape)).expect("the runtime checked the element count")
}

/// Reorders the axes; no copy.
pub(crate) fn permute<T>(a: &Array<T>, axes: &[usize]) -> Array<T> {
    a.clone().permuted_axes(IxDyn(axes))
}

/// Materialises a broadcast.
pub(crate) fn expand<T: Pooled>(a: &Array<T>, shape: &[usize]) -> Array<T> {
    // Already that shape and contiguous: the same buffer (shared, so a
    // later write copies it first), not a copy. Kernel calls expand every
    // tensor argument, most of them to the shape they have.
    if a.shape() == shape && a.is_standard_layout() {
        return a.clone();
    }
    let view = a.broadcast(IxDyn(shape)).expect("the runtime checked the shapes");
    pool::output(shape, |out| pool::copy_to(out, &view))
}

/// A sub-block; no copy.
pub(crate) fn slice<T>(a: &Array<T>, ranges: &[Range<usize>]) -> Array<T> {
    let mut v = a.clone();
    v.slice_each_axis_inplace(|ax| {
        let r = &ranges[ax.axis.index()];
        Slice::from(r.start..r.end)
    });
    v
}

/// Constant padding.
pub(crate) fn pad<T: Pooled>(a: &Array<T>, pads: &[(usize, usize)], value: T) -> Array<T> {
    let mut shape = Dims::new();
    shape.extend(a.shape().iter().zip(pads).map(|(&d, &(b, e))| d + b + e));
    pool::filled(&shape, value, |out| {
        view_mut(&shape, out)
            .slice_each_axis_mut(|ax| {
                let i = ax.axis.index();
                Slice::from(pads[i].0..pads[i].0 + a.shape()[i])
            })
            .assign(a);
    })
}

/// Joins along `dim`.
pub(crate) fn cat<T: Pooled>(xs: &[&Array<T>], dim: usize) -> Array<T> {
    let mut shape = Dims::from(xs[0].shape());
    shape[dim] = xs.iter().map(|a| a.shape()[dim]).sum();
    pool::output(&shape, |out| {
        let mut out = view_mut(&shape, out);
        let mut at = 0;
        for a in xs {
            let len = a.shape()[dim];
            out.slice_axis_mut(Axis(dim), Slice::from(at..at + len)).assign(*a);
            at += len;
        }
    })
}

/// Converts an i64 index array to positions, checked by the runtime.
fn positions(index: &Array<i64>) -> impl Iterator<Item = usize> + '_ {
    index.iter().map(|&i| i as usize)
}

/// `[outer, n, inner]` of `shape` around `dim`.
fn split(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
}

/// True when `index` has `x`'s shape except (perhaps) at `dim`, and both
/// are row-major: then the index arithmetic is three flat loops.
fn aligned(x: &[usize], index: &[usize], dim: usize) -> bool {
    x.iter().zip(index).enumerate().all(|(d, (a, b))| d == dim || a == b)
}

/// Calls `f(at, offset)` for every flat position `at` of a row-major
/// `index` aligned with a row-major `x` (see [`aligned`]): `offset` is the
/// flat position in `x` of `at` with its `dim` coordinate replaced by
/// `index[at]`. What gather reads and scatter writes, as three flat loops.
fn for_aligned(x: &[usize], index_shape: &[usize], dim: usize, index: &[i64], mut f: impl FnMut(usize, usize)) {
    let (outer, nx, inner) = split(x, dim);
    let ni = index_shape[dim];
    for o in 0..outer {
        for j in 0..ni {
            let at = (o * ni + j) * inner;
            for (i, &k) in index[at..at + inner].iter().enumerate() {
                f(at + i, (o * nx + k as usize) * inner + i);
            }
        }
    }
}

/// `out[p] = x[p with p[dim] = index[p]]` for every position `p` of `index`.
pub(crate) fn gather<T: Pooled>(x: &Array<T>, dim: usize, index: &Array<i64>) -> Array<T> {
    pool::output(index.shape(), |out| {
        if let (Some(xs), Some(is)) = (x.as_slice(), index.as_slice())
            && aligned(x.shape(), index.shape(), dim)
        {
            for_aligned(x.shape(), index.shape(), dim, is, |at, from| out[at] = xs[from]);
            return;
        }
        for ((mut p, &i), slot) in index.indexed_iter().zip(out) {
            p[dim] = i as usize;
            *slot = x[&p];
        }
    })
}

/// A copy of `x` with `src[p]` added at `p with p[dim] = index[p]`.
pub(crate) fn scatter_add<T: Num>(x: &Array<T>, dim: usize, index: &Array<i64>, src: &Array<T>) -> Array<T> {
    pool::output(x.shape(), |os| {
        pool::copy_to(os, &x.view());
        if let (Some(is), Some(ss)) = (index.as_slice(), src.as_slice())
            && aligned(x.shape(), index.shape(), dim)
        {
            for_aligned(x.shape(), index.shape(), dim, is, |at, to| os[to] += ss[at]);
            return;
        }
        let mut out = view_mut(x.shape(), os);
        for ((mut p, &i), &s) in index.indexed_iter().zip(src.iter()) {
            p[dim] = i as usize;
            out[&p] += s;
        }
    })
}

/// The slices `index` of `dim`.
pub(crate) fn index_select<T: Pooled>(x: &Array<T>, dim: usize, index: &Array<i64>) -> Array<T> {
    let mut shape = Dims::from(x.shape());
    shape[dim] = index.len();
    pool::output(&shape, |out| {
        let mut out = view_mut(&shape, out);
        for (i, from) in positions(index).enumerate() {
            out.index_axis_mut(Axis(dim), i).assign(&x.index_axis(Axis(dim), from));
        }
    })
}

/// A copy of `x` with slice `i` of `src` added to slice `index[i]` of `dim`.
pub(crate) fn index_add<T: Num>(x: &Array<T>, dim: usize, index: &Array<i64>, src: &Array<T>) -> Array<T> {
    pool::output(x.shape(), |out| {
        pool::copy_to(out, &x.view());
        let mut out = view_mut(x.shape(), out);
        for (i, to) in positions(index).enumerate() {
            let mut dst = out.index_axis_mut(Axis(dim), to);
            dst.zip_mut_with(&src.index_axis(Axis(dim), i), |d, &s| *d += s);
        }
    })
}
