//! Batched matmul on `blaze-gemm`'s packed GEMMs (`blaze_gemm::gemm_raw`:
//! f32 and f64, and bf16 on AMX or AVX512-BF16). Operands are
//! read through their strides, so a transposed weight or a broadcast batch
//! dim costs no copy.

use blaze_runtime::shape::broadcast_shapes;
use ndarray::IxDyn;

pub(crate) use blaze_gemm::product::{PARALLEL_FLOPS, Product, Reads, SendPtr, gemm_raw, work};

use crate::parallel::{for_each_index, should_fork};

use crate::pool;
use crate::storage::Array;

/// `[..., m, k] x [..., k, n]` with broadcast batch dims.
pub(crate) fn matmul<T: Product>(a: &Array<T>, b: &Array<T>) -> Array<T::Out>
where
    T::Out: pool::Pooled,
{
    matmul_as::<T, T>(a, b)
}

/// [`matmul`] of operands stored as `E`, multiplied as `T` (f32 operands
/// rounded to bf16 as they are packed: [`crate::gemm_bf16::RoundsToBf16`]).
pub(crate) fn matmul_as<T: Reads<E>, E>(a: &Array<E>, b: &Array<E>) -> Array<T::Out>
where
    T::Out: pool::Pooled,
{
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

    // Batch entry `bi`'s element offsets in `a` and `b`, from its index
    // over the batch dims (computed per entry: no table to allocate).
    let count: usize = batch.iter().product();
    let offsets = |bi: usize| {
        let (mut rest, mut oa, mut ob) = (bi, 0isize, 0isize);
        for d in (0..batch.len()).rev() {
            let i = (rest % batch[d]) as isize;
            rest /= batch[d];
            oa += i * sa[d];
            ob += i * sb[d];
        }
        (oa, ob)
    };

    let mut out_shape = batch.clone();
    out_shape.extend([m, n]);
    pool::output(&out_shape, |out: &mut [T::Out]| {
        // `T` reads an `E` as itself (`Reads`).
        let (pa, pb) = (SendPtr(av.as_ptr().cast_mut().cast::<T>()), SendPtr(bv.as_ptr().cast_mut().cast::<T>()));
        let (a_rs, a_cs, b_rs, b_cs) = (sa[r - 2], sa[r - 1], sb[r - 2], sb[r - 1]);
        let dst = SendPtr(out.as_mut_ptr());
        let one = |bi: usize, parallel: bool| {
            let (oa, ob) = offsets(bi);
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
        let small = work(m, n, k) < PARALLEL_FLOPS;
        if small && count > 1 && should_fork(count * work(m, n, k), PARALLEL_FLOPS) {
            for_each_index(count, 1, &|bi| one(bi, false));
        } else {
            (0..count).for_each(|bi| one(bi, true));
        }
    })
}
