//! Batched matmul on the crate's packed GEMMs (`gemm.rs`, and
//! `gemm_bf16.rs` for bf16 on AVX512-BF16). Operands are
//! read through their strides, so a transposed weight or a broadcast batch
//! dim costs no copy.

use blaze_runtime::shape::broadcast_shapes;
use ndarray::IxDyn;

use crate::gemm::Strided;
use crate::parallel::for_each_index;
use crate::pool;
use crate::storage::Array;

/// Multiply-adds below which one product runs on one thread.
const PARALLEL_FLOPS: usize = 96 * 96 * 96;

/// The work of an `m x k` by `k x n` product, against [`PARALLEL_FLOPS`]:
/// its multiply-adds, but at least 8 per output, since a shallow product
/// is bound by writing its outputs (a batch-1 weight gradient, 256x1x784,
/// ran 1.7x faster on two threads of a Xeon than on one); and 8 per
/// multiply-add of a single row, which reads each value of `B` once and so
/// runs at the speed of memory (a decoding step's `x W^T`, 1x1024x256, ran
/// faster on two threads).
fn work(m: usize, n: usize, k: usize) -> usize {
    let per_value = if m == 1 { 8 } else { 1 };
    m * n * k.max(8) * per_value
}

/// The element types a product multiplies: f32 and f64 summed in their
/// own type (`gemm.rs`), bf16 summed in f32 (`gemm_bf16.rs`).
pub(crate) trait Product: Copy + Send + Sync + 'static {
    /// The type of the product's values (bf16's sums run in f32).
    type Out: crate::pool::Pooled;
    /// The blocking one product keeps across its threads.
    type Plan: Sync;

    /// The plan of an `m x k` by `k x n` product.
    fn plan(m: usize, n: usize, k: usize) -> Self::Plan;

    /// `dst[m x n] (+)= lhs[m x k] * rhs[k x n]` on this thread, with the
    /// kernel and blocking of `plan`.
    ///
    /// # Safety
    /// The operands must address valid `m x k` and `k x n` blocks, `dst` a
    /// valid row-major `m x n` block with row stride `dst_rs` that overlaps
    /// neither, and the CPU must run the plan's kernel.
    unsafe fn serial(
        plan: &Self::Plan,
        m: usize,
        n: usize,
        k: usize,
        dst: *mut Self::Out,
        dst_rs: isize,
        lhs: Strided<Self>,
        rhs: Strided<Self>,
        accumulate: bool,
    );
}

/// A raw pointer that may cross to another thread; each task writes a
/// disjoint output block.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: tasks write disjoint blocks, and the buffer outlives the parallel loop.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer. A closure that calls this captures the whole wrapper
    /// (and so may cross threads), where `.0` would capture the bare field.
    fn get(self) -> *mut T {
        self.0
    }
}

/// One `m x k` by `k x n` product into a row-major `dst`, or `dst += lhs * rhs`
/// with `accumulate`.
///
/// # Safety
/// The pointers and strides must address valid `m x k`, `k x n` and `m x n`
/// blocks, and `dst` must not overlap the inputs.
pub(crate) unsafe fn gemm_raw<T: Product>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T::Out,
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
                    unsafe { *dst.offset(i as isize * dst_rs + j as isize) = <T::Out>::default() };
                }
            }
        }
        return;
    }
    let threads = rayon::current_num_threads();
    let lhs = Strided { ptr: lhs, rs: lhs_rs, cs: lhs_cs };
    let rhs = Strided { ptr: rhs, rs: rhs_rs, cs: rhs_cs };
    // One plan for the whole product, whatever the split: its depth
    // blocking sets the order of the sums, so every thread count gives
    // the same bits.
    let plan = T::plan(m, n, k);
    if !(parallel && threads > 1 && work(m, n, k) >= PARALLEL_FLOPS) {
        // SAFETY: forwarded from the caller; the plan's kernel runs here.
        unsafe { T::serial(&plan, m, n, k, dst, dst_rs, lhs, rhs, accumulate) };
        return;
    }
    // Split the output into one block per thread and run each block on one
    // thread. Measured on the shapes of training steps: splitting the
    // columns wins when they outnumber the rows and the depth is not
    // shallower than the rows (x W^T in a forward pass); otherwise (g^T x,
    // a weight gradient) splitting the rows does.
    let split_n = n >= m && k >= m;
    let len = if split_n { n } else { m };
    let block = len.div_ceil(threads).next_multiple_of(BLOCK_ALIGN).min(len);
    let blocks = len.div_ceil(block);
    let dst = SendPtr(dst);
    for_each_index(blocks, 1, &|b| {
        let start = b * block;
        let size = block.min(len - start);
        // SAFETY: block `b` covers rows (or columns) start..start + size of
        // the blocks the caller vouches for; blocks are disjoint in `dst`.
        unsafe {
            if split_n {
                let r = Strided { ptr: rhs.ptr.offset(start as isize * rhs.cs), ..rhs };
                T::serial(&plan, m, size, k, dst.get().add(start), dst_rs, lhs, r, accumulate);
            } else {
                let l = Strided { ptr: lhs.ptr.offset(start as isize * lhs.rs), ..lhs };
                let at = dst.get().offset(start as isize * dst_rs);
                T::serial(&plan, size, n, k, at, dst_rs, l, rhs, accumulate);
            }
        }
    });
}

/// Rows or columns of a thread's output block come in multiples of this
/// (one 512-bit vector of f32).
const BLOCK_ALIGN: usize = 16;

/// Element types a product reads operands of type `E` as: `E` itself, or
/// a `#[repr(transparent)]` wrapper of it with a product of its own.
///
/// # Safety
/// `Self` has the layout of `E`, and every `E` is a valid `Self`.
pub(crate) unsafe trait Reads<E>: Product {}

// SAFETY: a type has its own layout.
unsafe impl<T: Product> Reads<T> for T {}

// SAFETY: `RoundsToBf16` is a transparent f32.
unsafe impl Reads<f32> for crate::gemm_bf16::RoundsToBf16 {}

/// `[..., m, k] x [..., k, n]` with broadcast batch dims.
pub(crate) fn matmul<T: Product>(a: &Array<T>, b: &Array<T>) -> Array<T::Out> {
    matmul_as::<T, T>(a, b)
}

/// [`matmul`] of operands stored as `E`, multiplied as `T` (f32 operands
/// rounded to bf16 as they are packed: [`crate::gemm_bf16::RoundsToBf16`]).
pub(crate) fn matmul_as<T: Reads<E>, E>(a: &Array<E>, b: &Array<E>) -> Array<T::Out> {
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
        if small && count > 1 && count * work(m, n, k) >= PARALLEL_FLOPS && rayon::current_num_threads() > 1 {
            for_each_index(count, 1, &|bi| one(bi, false));
        } else {
            (0..count).for_each(|bi| one(bi, true));
        }
    })
}
