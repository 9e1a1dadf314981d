//! When to go parallel, and filling output buffers from the pool. Waking the second
//! core costs tens of microseconds, so small tensors take tight serial loops
//! and only large ones fork.

use std::mem::MaybeUninit;

pub use blaze_gemm::threads::{chunks_mut, chunks_mut2, for_each_index, fork, should_fork};

use crate::pool::{self, Pooled};
use crate::storage::Array;

/// Elements below which a cheap elementwise op (add, mul, relu) stays
/// serial. At 2^18 the GPT example's `[2048, 64]` activations ran on one
/// core; at 2^16 its step took 0.89 of the time (median of eight
/// alternating runs), MLP and CNN steps unchanged within the noise.
pub const CHEAP_OP_MIN: usize = 1 << 16;
/// Elements below which an expensive one (exp, tanh, erf) stays serial.
pub const COSTLY_OP_MIN: usize = 1 << 15;
/// Elements per parallel task.
pub const CHUNK: usize = 1 << 14;

/// An array of `shape` written by `f(start, out)`, which must write every
/// slot of `out` (the values `start..start + out.len()` in row-major
/// order). Work is split into pieces whose lengths are multiples of `row`
/// (which must divide the length), in parallel when `fork`. The buffer
/// comes from the pool and is not zeroed first.
#[inline]
pub(crate) fn fill<U: Pooled>(
    shape: &[usize],
    row: usize,
    fork: bool,
    f: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync,
) -> Array<U> {
    fill_with(shape, row, fork, &f)
}

/// [`fill`] with the pieces' work behind a reference: the pool and
/// rayon's splitting are compiled once per element type instead of once
/// per loop (a call per piece of [`CHUNK`] values costs nothing).
fn fill_with<U: Pooled>(
    shape: &[usize],
    row: usize,
    fork: bool,
    f: &(dyn Fn(usize, &mut [MaybeUninit<U>]) + Sync),
) -> Array<U> {
    pool::output_uninit(shape, |spare| {
        if fork && !spare.is_empty() {
            let row = row.max(1);
            let piece = (CHUNK / row).max(1) * row;
            chunks_mut(spare, piece, 1, &|i, out| f(i * piece, out));
        } else {
            f(0, spare);
        }
    })
}
