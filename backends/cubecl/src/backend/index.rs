//! Gather, scatter-add, index-select and index-add: the index tensor
//! arrives as `u32` words (the runtime checked it is in bounds), and every
//! kernel runs one unit per output element. The adds sum, per output,
//! the sources whose index points at it, so no two units write one place
//! and no atomics are needed.

use cubecl::prelude::*;

use super::{CubeStorage, grid};
use blaze_runtime::DType;

/// `out[.., j, ..] = x[.., index[.., j, ..], ..]` along `dim`; `out` has
/// `index`'s shape.
#[cube(launch)]
fn gather_kernel<E: Numeric>(x: &Tensor<E>, index: &Tensor<u32>, out: &mut Tensor<E>, dim: usize) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let rank = out.rank();
    let mut rem = ABSOLUTE_POS;
    let mut at = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let c = rem % out.shape(d);
        rem /= out.shape(d);
        let k = select(d == dim, index[ABSOLUTE_POS] as usize, c);
        at += k * x.stride(d);
    }
    out[ABSOLUTE_POS] = x[at];
}

/// `out[.., j, ..] = x[.., index[j], ..]` along `dim`.
#[cube(launch)]
fn index_select_kernel<E: Numeric>(x: &Tensor<E>, index: &Tensor<u32>, out: &mut Tensor<E>, dim: usize) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let rank = out.rank();
    let mut rem = ABSOLUTE_POS;
    let mut at = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let c = rem % out.shape(d);
        rem /= out.shape(d);
        let mut k = c;
        if d == dim {
            k = index[c] as usize;
        }
        at += k * x.stride(d);
    }
    out[ABSOLUTE_POS] = x[at];
}

/// `out = x`, plus `src[.., t, ..]` wherever `index[.., t, ..]` is this
/// element's position along `dim` (`src` of `index`'s shape, which may be
/// smaller than `x`'s except along `dim`).
#[cube(launch)]
fn scatter_add_kernel(x: &Tensor<f32>, index: &Tensor<u32>, src: &Tensor<f32>, out: &mut Tensor<f32>, dim: usize) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let rank = out.rank();
    let mut rem = ABSOLUTE_POS;
    let mut base = 0usize;
    let mut here = 0usize;
    let mut inside = true;
    for i in 0..rank {
        let d = rank - 1 - i;
        let c = rem % out.shape(d);
        rem /= out.shape(d);
        if d == dim {
            here = c;
        } else {
            inside = inside && c < index.shape(d);
            base += c * index.stride(d);
        }
    }
    let mut acc = x[ABSOLUTE_POS];
    if inside {
        for t in 0..index.shape(dim) {
            let at = base + t * index.stride(dim);
            if index[at] as usize == here {
                acc += src[at];
            }
        }
    }
    out[ABSOLUTE_POS] = acc;
}

/// `out = x`, plus `src`'s slice `j` along `dim` wherever `index[j]` is
/// this element's position along `dim`.
#[cube(launch)]
fn index_add_kernel(x: &Tensor<f32>, index: &Tensor<u32>, src: &Tensor<f32>, out: &mut Tensor<f32>, dim: usize) {
    if ABSOLUTE_POS >= out.len() {
        terminate!();
    }
    let rank = out.rank();
    let mut rem = ABSOLUTE_POS;
    let mut base = 0usize;
    let mut here = 0usize;
    for i in 0..rank {
        let d = rank - 1 - i;
        let c = rem % out.shape(d);
        rem /= out.shape(d);
        if d == dim {
            here = c;
        } else {
            base += c * src.stride(d);
        }
    }
    let mut acc = x[ABSOLUTE_POS];
    for j in 0..index.len() {
        if index[j] as usize == here {
            acc += src[base + j * src.stride(dim)];
        }
    }
    out[ABSOLUTE_POS] = acc;
}

/// An index tensor's words, checked to be what `HostFallback` uploads.
fn index_words<'a>(op: &str, index: &'a CubeStorage) -> &'a CubeStorage {
    assert!(index.dtype == DType::I64, "cubecl {op}: the index is a {} tensor, not i64", index.dtype);
    index
}

pub(super) fn gather(x: &CubeStorage, dim: usize, index: &CubeStorage) -> CubeStorage {
    let idx = index_words("gather", index);
    let out = CubeStorage::empty(&x.device, &idx.shape, x.dtype);
    let n = out.numel();
    if n > 0 {
        let (count, cube) = grid(n);
        let client = x.client();
        if x.dtype == DType::F32 {
            gather_kernel::launch::<f32>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        } else if x.dtype == DType::F16 {
            gather_kernel::launch::<blaze_runtime::f16>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        } else {
            gather_kernel::launch::<u32>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        }
    }
    out
}

pub(super) fn index_select(x: &CubeStorage, dim: usize, index: &CubeStorage) -> CubeStorage {
    let idx = index_words("index_select", index);
    let mut shape = x.shape.clone();
    shape[dim] = idx.numel();
    let out = CubeStorage::empty(&x.device, &shape, x.dtype);
    let n = out.numel();
    if n > 0 {
        let (count, cube) = grid(n);
        let client = x.client();
        if x.dtype == DType::F32 {
            index_select_kernel::launch::<f32>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        } else if x.dtype == DType::F16 {
            index_select_kernel::launch::<blaze_runtime::f16>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        } else {
            index_select_kernel::launch::<u32>(client, count, cube, x.arg(), idx.arg(), out.arg(), dim);
        }
    }
    out
}

pub(super) fn scatter_add(x: &CubeStorage, dim: usize, index: &CubeStorage, src: &CubeStorage) -> CubeStorage {
    let idx = index_words("scatter_add", index);
    let out = CubeStorage::empty(&x.device, &x.shape, x.dtype);
    let n = out.numel();
    if n > 0 {
        let (count, cube) = grid(n);
        // An empty index adds nothing; its buffer still binds.
        scatter_add_kernel::launch(x.client(), count, cube, x.arg(), idx.arg(), src.arg(), out.arg(), dim);
    }
    out
}

pub(super) fn index_add(x: &CubeStorage, dim: usize, index: &CubeStorage, src: &CubeStorage) -> CubeStorage {
    let idx = index_words("index_add", index);
    let out = CubeStorage::empty(&x.device, &x.shape, x.dtype);
    let n = out.numel();
    if n > 0 {
        let (count, cube) = grid(n);
        index_add_kernel::launch(x.client(), count, cube, x.arg(), idx.arg(), src.arg(), out.arg(), dim);
    }
    out
}
