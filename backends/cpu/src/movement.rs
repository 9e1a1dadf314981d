//! Views (reshape, permute, slice share the values when they can) and the
//! ops that move values: expand, pad, cat, gather, scatter and index ops.

use std::ops::Range;

use ndarray::{Axis, IxDyn, Slice};

use crate::storage::{Array, Num};

/// Another shape over the same values; copies only a strided input.
pub(crate) fn reshape<T: Clone>(a: &Array<T>, shape: &[usize]) -> Array<T> {
    let a = if a.is_standard_layout() { a.clone() } else { a.as_standard_layout().into_owned().into_shared() };
    a.into_shape_with_order(IxDyn(shape)).expect("the runtime checked the element count")
}

/// Reorders the axes; no copy.
pub(crate) fn permute<T>(a: &Array<T>, axes: &[usize]) -> Array<T> {
    a.clone().permuted_axes(IxDyn(axes))
}

/// Materialises a broadcast.
pub(crate) fn expand<T: Clone>(a: &Array<T>, shape: &[usize]) -> Array<T> {
    a.broadcast(IxDyn(shape)).expect("the runtime checked the shapes").to_owned().into_shared()
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
pub(crate) fn pad<T: Clone>(a: &Array<T>, pads: &[(usize, usize)], value: T) -> Array<T> {
    let shape: Vec<usize> = a.shape().iter().zip(pads).map(|(&d, &(b, e))| d + b + e).collect();
    let mut out = ndarray::ArrayD::from_elem(IxDyn(&shape), value);
    out.slice_each_axis_mut(|ax| {
        let i = ax.axis.index();
        Slice::from(pads[i].0..pads[i].0 + a.shape()[i])
    })
    .assign(a);
    out.into_shared()
}

/// Joins along `dim`.
pub(crate) fn cat<T: Clone>(xs: &[&Array<T>], dim: usize) -> Array<T> {
    let views: Vec<_> = xs.iter().map(|a| a.view()).collect();
    ndarray::concatenate(Axis(dim), &views).expect("the runtime checked the shapes").into_shared()
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

/// `out[p] = x[p with p[dim] = index[p]]` for every position `p` of `index`.
pub(crate) fn gather<T: Clone>(x: &Array<T>, dim: usize, index: &Array<i64>) -> Array<T> {
    if let (Some(xs), Some(is)) = (x.as_slice(), index.as_slice())
        && aligned(x.shape(), index.shape(), dim)
    {
        let (outer, nx, inner) = split(x.shape(), dim);
        let ni = index.shape()[dim];
        let mut out = Vec::with_capacity(is.len());
        for o in 0..outer {
            for j in 0..ni {
                let row = &is[(o * ni + j) * inner..][..inner];
                for (i, &k) in row.iter().enumerate() {
                    out.push(xs[(o * nx + k as usize) * inner + i].clone());
                }
            }
        }
        return Array::from_shape_vec(IxDyn(index.shape()), out).expect("one value per index");
    }
    let mut out = Vec::with_capacity(index.len());
    for (mut p, &i) in index.indexed_iter() {
        p[dim] = i as usize;
        out.push(x[&p].clone());
    }
    Array::from_shape_vec(IxDyn(index.shape()), out).expect("one value per index")
}

/// A copy of `x` with `src[p]` added at `p with p[dim] = index[p]`.
pub(crate) fn scatter_add<T: Num>(x: &Array<T>, dim: usize, index: &Array<i64>, src: &Array<T>) -> Array<T> {
    let mut out = x.as_standard_layout().into_owned();
    if let (Some(os), Some(is), Some(ss)) = (out.as_slice_mut(), index.as_slice(), src.as_slice())
        && aligned(x.shape(), index.shape(), dim)
    {
        let (outer, nx, inner) = split(x.shape(), dim);
        let ni = index.shape()[dim];
        for o in 0..outer {
            for j in 0..ni {
                let at = (o * ni + j) * inner;
                for (i, (&k, &v)) in is[at..at + inner].iter().zip(&ss[at..at + inner]).enumerate() {
                    os[(o * nx + k as usize) * inner + i] += v;
                }
            }
        }
        return out.into_shared();
    }
    for ((mut p, &i), &s) in index.indexed_iter().zip(src.iter()) {
        p[dim] = i as usize;
        out[&p] += s;
    }
    out.into_shared()
}

/// The slices `index` of `dim`.
pub(crate) fn index_select<T: Clone>(x: &Array<T>, dim: usize, index: &Array<i64>) -> Array<T> {
    let idx: Vec<usize> = positions(index).collect();
    x.select(Axis(dim), &idx).into_shared()
}

/// A copy of `x` with slice `i` of `src` added to slice `index[i]` of `dim`.
pub(crate) fn index_add<T: Num>(x: &Array<T>, dim: usize, index: &Array<i64>, src: &Array<T>) -> Array<T> {
    let mut out = x.to_owned();
    for (i, to) in positions(index).enumerate() {
        let mut dst = out.index_axis_mut(Axis(dim), to);
        dst.zip_mut_with(&src.index_axis(Axis(dim), i), |d, &s| *d += s);
    }
    out.into_shared()
}
