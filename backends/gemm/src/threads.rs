//! The parallel loops of the CPU backend and its GEMMs: indices and
//! chunks of a slice on rayon's threads, with one copy of rayon's
//! splitting for every loop.

use std::marker::PhantomData;

use rayon::prelude::*;

/// Whether work of `n` elements at or above `threshold` should fork.
#[inline]
pub fn should_fork(n: usize, threshold: usize) -> bool {
    n >= threshold && rayon::current_num_threads() > 1
}

/// `f(i)` for every `i` in `0..n`, on rayon's threads, at least `min_len`
/// indices a task. Every parallel loop of the CPU backend goes through here
/// (or the chunk helpers below, built on it), so rayon's splitting is
/// compiled once rather than once per loop; a call per index (per chunk of work)
/// costs nothing next to the work.
pub fn for_each_index(n: usize, min_len: usize, f: &(dyn Fn(usize) + Sync)) {
    (0..n).into_par_iter().with_min_len(min_len.max(1)).for_each(f);
}

/// A slice split into chunks of `len` (the last may be shorter) that
/// [`for_each_index`]'s tasks take by index.
struct Chunks<'a, T> {
    ptr: *mut T,
    total: usize,
    len: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Chunks` hands out disjoint parts of a slice it borrows
// mutably, each to one task (see `get`), so sharing it between threads is
// sharing `&mut [T]` parts: fine for `T: Send`.
unsafe impl<T: Send> Sync for Chunks<'_, T> {}

impl<'a, T> Chunks<'a, T> {
    fn new(xs: &'a mut [T], len: usize) -> Self {
        Chunks { ptr: xs.as_mut_ptr(), total: xs.len(), len: len.max(1), _slice: PhantomData }
    }

    fn count(&self) -> usize {
        self.total.div_ceil(self.len)
    }

    /// Chunk `i`.
    ///
    /// # Safety
    /// `i < self.count()`, and no other reference to chunk `i` is live:
    /// each index of a [`for_each_index`] call is handed out once.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self, i: usize) -> &'a mut [T] {
        let start = i * self.len;
        let len = self.len.min(self.total - start);
        // SAFETY: `start..start + len` lies in the slice (`i < count`) and
        // no other reference to it is live (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

/// `f(i, chunk)` for every `len`-long chunk of `xs` (the last may be
/// shorter), in parallel, at least `min_len` chunks a task: what
/// `xs.par_chunks_mut(len).enumerate()` does, with one copy of rayon's
/// splitting for the crate.
pub fn chunks_mut<T: Send>(xs: &mut [T], len: usize, min_len: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let xs = Chunks::new(xs, len);
    // SAFETY: `for_each_index` hands out each `i < count` once.
    for_each_index(xs.count(), min_len, &|i| f(i, unsafe { xs.get(i) }));
}

/// What [`chunks_mut2`] calls with chunk `i` of each slice.
pub type ChunkPairFn<'a, T, U> = dyn Fn(usize, &mut [T], &mut [U]) + Sync + 'a;

/// [`chunks_mut`] over two slices at once, chunk `i` of each together, for
/// as many chunks as the shorter has (as rayon's `zip`).
pub fn chunks_mut2<T: Send, U: Send>(
    xs: &mut [T],
    x_len: usize,
    ys: &mut [U],
    y_len: usize,
    min_len: usize,
    f: &ChunkPairFn<'_, T, U>,
) {
    let (xs, ys) = (Chunks::new(xs, x_len), Chunks::new(ys, y_len));
    // SAFETY: as in `chunks_mut`, for both slices.
    for_each_index(xs.count().min(ys.count()), min_len, &|i| f(i, unsafe { xs.get(i) }, unsafe { ys.get(i) }));
}
