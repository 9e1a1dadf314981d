//! Batched matmul on the `gemm` crate, which picks AVX-512 kernels at run
//! time where the CPU has them. Operands are read through their strides, so
//! a transposed weight or a broadcast batch dim costs no copy.

use blaze_runtime::shape::broadcast_shapes;
use gemm::Parallelism;
use ndarray::IxDyn;
use rayon::prelude::*;

use crate::elementwise::build;
use crate::storage::{Array, Float};

/// Multiply-adds below which one product runs on one thread.
const PARALLEL_FLOPS: usize = 96 * 96 * 96;

/// Element types `gemm` multiplies.
pub(crate) trait GemmFloat: Float {}
impl GemmFloat for f32 {}
impl GemmFloat for f64 {}

/// A raw pointer that may cross to another thread; each task writes a
/// disjoint output block.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: tasks write disjoint blocks, and the buffer outlives the parallel loop.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// One `m x k` by `k x n` product into a row-major `dst`, or `dst += lhs * rhs`
/// with `accumulate`.
///
/// # Safety
/// The pointers and strides must address valid `m x k`, `k x n` and `m x n`
/// blocks, and `dst` must not overlap the inputs.
pub(crate) unsafe fn gemm_raw<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    lhs: *const T,
    lhs_rs: isize,
    lhs_cs: isize,
    rhs: *const T,
    rhs_rs: isize,
    rhs_cs: isize,
    accumulate: bool,
    parallel: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    // SAFETY: (i, j) lies in the m x n block the caller vouches for.
                    unsafe { *dst.offset(i as isize * dst_rs + j as isize) = T::ZERO };
                }
            }
        }
        return;
    }
    let threads = rayon::current_num_threads();
    let parallel = parallel && threads > 1 && m * n * k >= PARALLEL_FLOPS;
    if !parallel || m.min(n).min(k) >= SHARED_PANELS_MIN {
        let parallelism = if parallel { Parallelism::Rayon(threads) } else { Parallelism::None };
        // SAFETY: forwarded from the caller.
        unsafe { gemm_on(m, n, k, dst, dst_rs, lhs, lhs_rs, lhs_cs, rhs, rhs_rs, rhs_cs, accumulate, parallelism) };
        return;
    }
    // Split the output into one block per thread and run each block on one
    // thread. At the sizes of training steps (m = batch, n and k in the
    // hundreds) this is 1.2-1.6x faster than `gemm`'s own threading.
    // Measured on those shapes: splitting the columns wins when they
    // outnumber the rows and the depth is not shallower than the rows
    // (x W^T in a forward pass); otherwise (g^T x, a weight gradient)
    // splitting the rows does.
    let split_n = n >= m && k >= m;
    let len = if split_n { n } else { m };
    let block = len.div_ceil(threads).next_multiple_of(BLOCK_ALIGN).min(len);
    let blocks = len.div_ceil(block);
    let (dst, lhs, rhs) = (SendPtr(dst), SendPtr(lhs.cast_mut()), SendPtr(rhs.cast_mut()));
    (0..blocks).into_par_iter().for_each(|b| {
        let (dst, lhs, rhs) = (dst, lhs, rhs);
        let start = b * block;
        let size = block.min(len - start);
        // SAFETY: block `b` covers rows (or columns) start..start + size of
        // the blocks the caller vouches for; blocks are disjoint in `dst`.
        unsafe {
            if split_n {
                let (d, r) = (dst.0.add(start), rhs.0.offset(start as isize * rhs_cs));
                gemm_on(m, size, k, d, dst_rs, lhs.0, lhs_rs, lhs_cs, r, rhs_rs, rhs_cs, accumulate, Parallelism::None);
            } else {
                let (d, l) = (dst.0.offset(start as isize * dst_rs), lhs.0.offset(start as isize * lhs_rs));
                gemm_on(size, n, k, d, dst_rs, l, lhs_rs, lhs_cs, rhs.0, rhs_rs, rhs_cs, accumulate, Parallelism::None);
            }
        }
    });
}

/// Rows or columns of a thread's output block come in multiples of this
/// (one 512-bit vector of f32).
const BLOCK_ALIGN: usize = 16;

/// Products whose every side is at least this long run on `gemm`'s own
/// threading, which shares packed panels between threads and balances a
/// thread that starts late; at 256^3 to 2048^3 it matches the split, and
/// beats it when the pool's threads are asleep as the product starts.
const SHARED_PANELS_MIN: usize = 256;

/// [`gemm_raw`] with `gemm`'s own `parallelism`.
///
/// # Safety
/// As for [`gemm_raw`].
#[allow(clippy::too_many_arguments, reason = "a raw strided gemm call")]
unsafe fn gemm_on<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    lhs: *const T,
    lhs_rs: isize,
    lhs_cs: isize,
    rhs: *const T,
    rhs_rs: isize,
    rhs_cs: isize,
    accumulate: bool,
    parallelism: Parallelism,
) {
    // gemm computes dst = alpha * dst + beta * lhs * rhs, reading dst only
    // when asked to.
    // SAFETY: forwarded from the caller.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs,
            accumulate,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        )
    };
}

/// `[..., m, k] x [..., k, n]` with broadcast batch dims.
pub(crate) fn matmul<T: GemmFloat>(a: &Array<T>, b: &Array<T>) -> Array<T> {
    let r = a.ndim();
    let (m, k, n) = (a.shape()[r - 2], a.shape()[r - 1], b.shape()[r - 1]);
    let batch = broadcast_shapes(&a.shape()[..r - 2], &b.shape()[..r - 2]).expect("the runtime checked the batch dims");
    let mut a_shape = batch.clone();
    a_shape.extend([m, k]);
    let mut b_shape = batch.clone();
    b_shape.extend([k, n]);
    let av = a.broadcast(IxDyn(&a_shape)).expect("broadcastable");
    let bv = b.broadcast(IxDyn(&b_shape)).expect("broadcastable");
    let (sa, sb) = (av.strides(), bv.strides());

    // Element offsets of every batch entry in `a` and `b`.
    let count: usize = batch.iter().product();
    let mut offsets = Vec::with_capacity(count);
    let mut idx = vec![0usize; batch.len()];
    for _ in 0..count {
        let oa: isize = idx.iter().zip(sa).map(|(&i, &s)| i as isize * s).sum();
        let ob: isize = idx.iter().zip(sb).map(|(&i, &s)| i as isize * s).sum();
        offsets.push((oa, ob));
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }

    let mut out_shape = batch;
    out_shape.extend([m, n]);
    let mut out = vec![T::ZERO; count * m * n];
    let (pa, pb) = (SendPtr(av.as_ptr().cast_mut()), SendPtr(bv.as_ptr().cast_mut()));
    let (a_rs, a_cs, b_rs, b_cs) = (sa[r - 2], sa[r - 1], sb[r - 2], sb[r - 1]);
    let dst = SendPtr(out.as_mut_ptr());
    let one = |bi: usize, parallel: bool| {
        let (oa, ob) = offsets[bi];
        // Rebind the wrappers whole, so the closure captures them and not
        // their raw-pointer fields.
        let (dst, pa, pb) = (dst, pa, pb);
        // SAFETY: the offsets and strides come from valid views of `a` and
        // `b`; block `bi` of `out` is m x n, row-major, and only this task
        // writes it.
        unsafe {
            gemm_raw(
                m,
                n,
                k,
                dst.0.add(bi * m * n),
                n as isize,
                pa.0.offset(oa),
                a_rs,
                a_cs,
                pb.0.offset(ob),
                b_rs,
                b_cs,
                false,
                parallel,
            )
        };
    };
    let small = m * n * k < PARALLEL_FLOPS;
    if small && count > 1 && count * m * n * k >= PARALLEL_FLOPS && rayon::current_num_threads() > 1 {
        (0..count).into_par_iter().for_each(|bi| one(bi, false));
    } else {
        (0..count).for_each(|bi| one(bi, true));
    }
    build(&out_shape, out)
}
