//! When to go parallel, and filling fresh output buffers. Waking the second
//! core costs tens of microseconds, so small tensors take tight serial loops
//! and only large ones fork.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Elements below which a cheap elementwise op (add, mul, relu) stays serial.
pub const CHEAP_OP_MIN: usize = 1 << 18;
/// Elements below which an expensive one (exp, tanh, erf) stays serial.
pub const COSTLY_OP_MIN: usize = 1 << 15;
/// Elements per parallel task.
pub const CHUNK: usize = 1 << 14;

/// Whether work of `n` elements at or above `threshold` should fork.
pub fn should_fork(n: usize, threshold: usize) -> bool {
    n >= threshold && rayon::current_num_threads() > 1
}

/// A vector of `n` values written by `f(start, out)`, which must write every
/// slot of `out` (the values `start..start + out.len()`). Work is split into
/// pieces whose lengths are multiples of `row` (which must divide `n`), in
/// parallel when `fork`. Skips the zeroing a `vec![0; n]` would do.
pub fn fill<U: Send>(n: usize, row: usize, fork: bool, f: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync) -> Vec<U> {
    let mut v = Vec::with_capacity(n);
    let spare = &mut v.spare_capacity_mut()[..n];
    if fork && n > 0 {
        let row = row.max(1);
        let piece = (CHUNK / row).max(1) * row;
        spare.par_chunks_mut(piece).enumerate().for_each(|(i, out)| f(i * piece, out));
    } else {
        f(0, spare);
    }
    // SAFETY: `f` wrote every slot of `spare`, which is the first `n` slots of
    // the allocation (the contract above; every caller writes whole pieces).
    unsafe { v.set_len(n) };
    v
}
