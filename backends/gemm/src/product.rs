//! One product on raw pointers ([`gemm_raw`]): the element types a
//! product multiplies ([`Product`]), one plan for the whole product, and
//! its output split into a block per thread.

use crate::threads::{for_each_index, should_fork};

/// Multiply-adds below which one product runs on one thread.
pub const PARALLEL_FLOPS: usize = 96 * 96 * 96;

/// The work of an `m x k` by `k x n` product, against [`PARALLEL_FLOPS`]:
/// its multiply-adds, but at least 8 per output, since a shallow product
/// is bound by writing its outputs (a batch-1 weight gradient, 256x1x784,
/// ran 1.7x faster on two threads of a Xeon than on one); and 8 per
/// multiply-add of a single row, which reads each value of `B` once and so
/// runs at the speed of memory (a decoding step's `x W^T`, 1x1024x256, ran
/// faster on two threads).
pub fn work(m: usize, n: usize, k: usize) -> usize {
    let per_value = if m == 1 { 8 } else { 1 };
    m * n * k.max(8) * per_value
}

/// The element types a product multiplies: f32 and f64 summed in their
/// own type (`gemm.rs`), bf16 summed in f32 (`gemm_bf16.rs`).
pub trait Product: Copy + Send + Sync + 'static {
    /// The type of the product's values (bf16's sums run in f32).
    type Out: Copy + Default + Send + Sync + 'static;
    /// The blocking one product keeps across its threads.
    type Plan: Sync;

    /// The plan of an `m x k` by `k x n` product.
    fn plan(m: usize, n: usize, k: usize) -> Self::Plan;

    /// Whether the product of `[m, n, k]`, split over `threads` threads, gives each a
    /// block of columns rather than of rows: [`split_rule`], unless the
    /// type measures it on this machine (f32 and f64, `gemm_tune.rs`),
    /// for operands stored as `transposed` says (`[lhs, rhs]`, each
    /// transposed unless its rows are contiguous). Either way gives the
    /// same bits.
    fn split_columns([m, n, k]: [usize; 3], _threads: usize, _plan: &Self::Plan, _transposed: [bool; 2]) -> bool {
        split_rule(m, n, k)
    }

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
#[derive(Clone, Copy, Debug)]
pub struct SendPtr<T>(pub *mut T);
// SAFETY: tasks write disjoint blocks, and the buffer outlives the parallel loop.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer. A closure that calls this captures the whole wrapper
    /// (and so may cross threads), where `.0` would capture the bare field.
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// One `m x k` by `k x n` product into a row-major `dst`, or `dst += lhs * rhs`
/// with `accumulate`.
///
/// # Safety
/// The pointers and strides must address valid `m x k`, `k x n` and `m x n`
/// blocks, and `dst` must not overlap the inputs.
pub unsafe fn gemm_raw<T: Product>(
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
    if !(parallel && should_fork(work(m, n, k), PARALLEL_FLOPS)) {
        // SAFETY: forwarded from the caller; the plan's kernel runs here.
        unsafe { T::serial(&plan, m, n, k, dst, dst_rs, lhs, rhs, accumulate) };
        return;
    }
    let columns = T::split_columns([m, n, k], threads, &plan, [lhs.cs != 1, rhs.cs != 1]);
    // SAFETY: forwarded from the caller.
    unsafe { split_over_threads(&plan, columns, m, n, k, dst, dst_rs, lhs, rhs, accumulate) };
}

/// The split of a product over threads before any is measured: blocks of
/// columns when they outnumber the rows and the depth is not shallower
/// than the rows (`x W^T` in a forward pass), else of rows (`g^T x`, a
/// weight gradient, measured 10-15% faster so on the machine this rule
/// was written on; a Zen 3 ran the MLP's `g^T x` 1.05x faster in columns).
pub fn split_rule(m: usize, n: usize, k: usize) -> bool {
    n >= m && k >= m
}

/// The product with its output cut into one block per thread of the
/// current pool, of columns or of rows, each block run on one thread
/// with `plan`.
///
/// # Safety
/// As for [`gemm_raw`]; the CPU runs the plan's kernel.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn split_over_threads<T: Product>(
    plan: &T::Plan,
    columns: bool,
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T::Out,
    dst_rs: isize,
    lhs: Strided<T>,
    rhs: Strided<T>,
    accumulate: bool,
) {
    let threads = rayon::current_num_threads();
    let len = if columns { n } else { m };
    let block = len.div_ceil(threads).next_multiple_of(BLOCK_ALIGN).min(len);
    // A last block of one row joins the one before: a single row is a
    // vector times a matrix, summed in another order than tiles, and the
    // product must give the same bits on any number of threads.
    let blocks = len.div_ceil(block) - usize::from(!columns && len > block && len % block == 1);
    let dst = SendPtr(dst);
    for_each_index(blocks, 1, &|b| {
        let start = b * block;
        let size = if b + 1 == blocks { len - start } else { block };
        // SAFETY: block `b` covers rows (or columns) start..start + size of
        // the blocks the caller vouches for; blocks are disjoint in `dst`.
        unsafe {
            if columns {
                let r = Strided { ptr: rhs.ptr.offset(start as isize * rhs.cs), ..rhs };
                T::serial(plan, m, size, k, dst.get().add(start), dst_rs, lhs, r, accumulate);
            } else {
                let l = Strided { ptr: lhs.ptr.offset(start as isize * lhs.rs), ..lhs };
                let at = dst.get().offset(start as isize * dst_rs);
                T::serial(plan, size, n, k, at, dst_rs, l, rhs, accumulate);
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
pub unsafe trait Reads<E>: Product {}

// SAFETY: a type has its own layout.
unsafe impl<T: Product> Reads<T> for T {}

/// A strided operand: element `(i, j)` is at `ptr + i * rs + j * cs`.
#[derive(Clone, Copy, Debug)]
pub struct Strided<T> {
    /// Element `(0, 0)`.
    pub ptr: *const T,
    /// The step between rows, in elements.
    pub rs: isize,
    /// The step between columns, in elements.
    pub cs: isize,
}

// SAFETY: a `Strided` only reads, and whoever builds one vouches that the
// values live and stay unchanged while any thread reads them.
unsafe impl<T: Sync> Send for Strided<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Strided<T> {}

impl<T> Strided<T> {
    /// The operand from element `(i, j)` on.
    ///
    /// # Safety
    /// `(i, j)` must lie inside the operand.
    #[inline(always)]
    pub(crate) unsafe fn at(self, i: usize, j: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Strided { ptr: unsafe { self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }, ..self }
    }

    /// The transposed operand: element `(i, j)` is this one's `(j, i)`.
    #[inline(always)]
    pub(crate) fn t(self) -> Self {
        Strided { rs: self.cs, cs: self.rs, ..self }
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// As for [`Strided::at`].
    #[inline(always)]
    pub(crate) unsafe fn get(self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        // SAFETY: forwarded from the caller.
        unsafe { *self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }
    }
}
