//! Recycled buffers for op outputs: the CPU backend's caching allocator.
//!
//! A training step of fixed shapes asks for the same output sizes every
//! step, so once the pool has seen one step every output comes from it and
//! the step makes no heap allocation (`tests/memory.rs`); reused
//! buffers are also already paged in, where fresh ones fault on first
//! write.
//!
//! ndarray's shared arrays free their buffer when the last clone drops and
//! offer no hook there, so the pool keeps one clone of every buffer it
//! hands out and takes a buffer back when that clone is the only one left
//! (`is_unique`). A buffer free and unused for a whole sweep period is
//! released, so shapes that change (the last, short batch; sequences of
//! varying length) do not pile up memory.

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ndarray::IxDyn;

use crate::storage::Array;
pub(crate) use blaze_gemm::scratch::{ALIGN, AnyBits, advise_huge_pages, with_scratch};

/// Element types the pool recycles.
pub trait Pooled: Copy + Default + Send + Sync + 'static {
    /// The pool of this element type's buffers.
    fn pool() -> &'static Mutex<Pool<Self>>;
}

macro_rules! pooled {
    ($($t:ty),*) => {$(
        impl Pooled for $t {
            fn pool() -> &'static Mutex<Pool<Self>> {
                static POOL: Mutex<Pool<$t>> = Mutex::new(Pool::new());
                &POOL
            }
        }
    )*};
}
pooled!(f32, f64, i64, bool, blaze_runtime::f16, blaze_runtime::bf16, blaze_gemm::RoundedBf16);

/// Takes between sweeps; a free buffer not handed out since the previous
/// sweep is released at the next.
const SWEEP_EVERY: u64 = 1 << 16;

/// Buffers by length, each with the take count when it was last handed out.
#[derive(Debug)]
pub(crate) struct Pool<T> {
    buckets: BTreeMap<usize, Bucket<T>>,
    takes: u64,
    swept_at: u64,
}

/// The buffers of one length, and where the next search for a free one
/// starts (after the last one found: next fit).
#[derive(Debug)]
struct Bucket<T> {
    entries: Vec<(Array<T>, u64)>,
    cursor: usize,
}

impl<T> Default for Bucket<T> {
    fn default() -> Self {
        Bucket { entries: Vec::new(), cursor: 0 }
    }
}

/// Buffers a search looks at before giving up and allocating: a bucket
/// crowded with live buffers (a list of scalars kept by the caller) must
/// not make every output cost a scan of all of them.
const PROBES: usize = 64;

/// The most recently handed-out buffers a search looks at first.
const RECENT: usize = 4;

impl<T: Pooled> Pool<T> {
    const fn new() -> Self {
        Pool { buckets: BTreeMap::new(), takes: 0, swept_at: 0 }
    }

    /// A free buffer of `len` values, now owned by the caller alone.
    fn take(&mut self, len: usize) -> Option<Array<T>> {
        self.takes += 1;
        if self.takes - self.swept_at >= SWEEP_EVERY {
            self.sweep();
        }
        let bucket = self.buckets.get_mut(&len)?;
        let n = bucket.entries.len();
        // The buffers handed out last come first: one freed since is
        // likely still in cache (and its pages in the TLB). Then next fit.
        let recent = (n.saturating_sub(RECENT)..n).rev();
        let free = recent
            .chain((0..n.min(PROBES)).map(|i| (bucket.cursor + i) % n))
            .find(|&i| bucket.entries[i].0.is_unique())?;
        bucket.cursor = free;
        // The last entry takes the slot: a bucket can hold thousands of
        // live buffers (a tape's saved values), and shifting them all on
        // every output made a gradient check spend a quarter of its time
        // in `memmove`. The recent ones stay near the end.
        let (a, _) = bucket.entries.swap_remove(free);
        Some(a)
    }

    /// Keeps a clone of `a`, whose buffer holds `a.len()` values.
    fn keep(&mut self, a: Array<T>) {
        let takes = self.takes;
        self.buckets.entry(a.len()).or_default().entries.push((a, takes));
    }

    /// Releases the free buffers not handed out since the last sweep.
    fn sweep(&mut self) {
        let since = self.swept_at;
        for bucket in self.buckets.values_mut() {
            bucket.entries.retain(|(a, used)| *used >= since || !a.is_unique());
            bucket.cursor = 0;
        }
        self.swept_at = self.takes;
    }

    /// Removes the pool's clone of the buffer `a` views in full, if it has one.
    fn forget(&mut self, a: &Array<T>) -> Option<Array<T>> {
        let bucket = &mut self.buckets.get_mut(&a.len())?.entries;
        let at = bucket.iter().rposition(|(p, _)| p.as_ptr() == a.as_ptr())?;
        Some(bucket.swap_remove(at).0)
    }
}

/// The pool of `T`, usable even if a thread panicked while holding it (its
/// state is a set of buffers, consistent after every operation).
fn lock<T: Pooled>() -> MutexGuard<'static, Pool<T>> {
    T::pool().lock().unwrap_or_else(PoisonError::into_inner)
}

/// Bytes of this element type's buffers that tensors other than the pool
/// hold, or with `all` every buffer the pool keeps (free ones too).
pub(crate) fn bytes<T: Pooled>(all: bool) -> usize {
    let pool = lock::<T>();
    let values: usize = pool
        .buckets
        .iter()
        .map(|(len, bucket)| len * bucket.entries.iter().filter(|(a, _)| all || !a.is_unique()).count())
        .sum();
    values * std::mem::size_of::<T>()
}

/// An array of `shape` whose values `fill` writes. `fill` sees stale values
/// (or defaults) and must write every element.
#[inline]
pub(crate) fn output<T: Pooled>(shape: &[usize], fill: impl FnOnce(&mut [T])) -> Array<T> {
    let mut fill = Some(fill);
    output_with(shape, &mut |out| (fill.take().expect("an output is filled once"))(out))
}

/// [`output`] with the filling behind a reference: taking, shaping and
/// keeping the buffer are compiled once per element type instead of once
/// per kernel.
fn output_with<T: Pooled>(shape: &[usize], fill: &mut dyn FnMut(&mut [T])) -> Array<T> {
    let len = shape.iter().product();
    let taken = lock::<T>().take(len);
    let mut a = match taken {
        // A pooled buffer is a whole row-major array, so it takes any shape
        // of its length without a copy.
        Some(a) => a.into_shape_with_order(IxDyn(shape)).expect("a pooled buffer is contiguous"),
        None => aligned(len).into_shape_with_order(IxDyn(shape)).expect("the length fills the shape"),
    };
    fill(a.as_slice_mut().expect("a fresh array is contiguous and not shared"));
    lock::<T>().keep(a.clone());
    a
}

/// `len` default values whose first one sits on an [`ALIGN`] boundary: a
/// buffer a cache line longer, viewed from its first aligned value (the
/// array keeps the whole buffer and frees it whole).
pub(crate) fn aligned<T: Pooled>(len: usize) -> ndarray::ArcArray1<T> {
    let size = size_of::<T>().max(1);
    let pad = ALIGN / size;
    let mut buffer = Vec::<T>::with_capacity(len + pad);
    // Before the first write faults the pages in.
    advise_huge_pages(buffer.as_ptr().cast(), (len + pad) * size);
    buffer.resize(len + pad, T::default());
    // The address is a multiple of `size`, which divides `ALIGN`.
    let skip = (buffer.as_ptr() as usize).wrapping_neg() % ALIGN / size;
    ndarray::ArcArray1::from_vec(buffer).slice_move(ndarray::s![skip..skip + len])
}

/// `slots` as the values written into them.
///
/// # Safety
/// Every slot of `slots` must be initialised.
#[inline(always)]
pub(crate) unsafe fn written<T>(slots: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout; the caller vouches for
    // every slot.
    unsafe { &mut *(std::ptr::from_mut::<[MaybeUninit<T>]>(slots) as *mut [T]) }
}

/// `values` as slots to write: what a fill loop written over `MaybeUninit`
/// takes.
///
/// # Safety
/// Only initialised values may be written through the slots (the
/// `MaybeUninit` API would let one write an uninitialised one).
#[inline(always)]
pub(crate) unsafe fn slots<T>(values: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout; the caller keeps every
    // value initialised.
    unsafe { &mut *(std::ptr::from_mut::<[T]>(values) as *mut [MaybeUninit<T>]) }
}

/// [`output`] for a `fill` that writes through `MaybeUninit` slots (the
/// parallel fill loops are written so).
pub(crate) fn output_uninit<T: Pooled>(shape: &[usize], fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Array<T> {
    // SAFETY: `fill` writes only initialised values (every slot, by its
    // contract).
    output(shape, |out| fill(unsafe { slots(out) }))
}

/// An array of `shape` set to `value`, then passed to `fill` (for kernels
/// that accumulate into their output).
pub(crate) fn filled<T: Pooled>(shape: &[usize], value: T, fill: impl FnOnce(&mut [T])) -> Array<T> {
    output(shape, |out| {
        out.fill(value);
        fill(out);
    })
}

/// `a` itself when it is row-major, else a row-major copy (from the pool).
pub(crate) fn standard<T: Pooled>(a: &Array<T>) -> Array<T> {
    if a.is_standard_layout() {
        return a.clone();
    }
    output(a.shape(), |out| copy_to(out, &a.view()))
}

/// `a`'s values into `out` in row-major order: a plain copy when `a` is
/// contiguous, ndarray's strided assignment (a broadcast, a transpose)
/// otherwise.
pub(crate) fn copy_to<T: Copy>(out: &mut [T], a: &ndarray::ArrayView<'_, T, IxDyn>) {
    match a.as_slice() {
        Some(s) => out.copy_from_slice(s),
        None => ndarray::ArrayViewMut::from_shape(a.raw_dim(), out).expect("`out` fills the shape").assign(a),
    }
}

/// Runs `f` on `a`'s values in place when `a` is a whole contiguous buffer
/// that nothing but the pool shares; returns false, leaving `a` alone,
/// otherwise.
pub(crate) fn update_in_place<T: Pooled>(a: &mut Array<T>, f: impl FnOnce(&mut [T])) -> bool {
    if !a.is_standard_layout() {
        return false;
    }
    if a.is_unique() {
        f(a.as_slice_mut().expect("contiguous and not shared"));
        return true;
    }
    // Drop the pool's clone, update, and keep a clone again. The lock is
    // not held while `f` runs: `f` may fork onto rayon, and a thread that
    // waits there can be handed a task that asks the pool for an output.
    let Some(kept) = lock::<T>().forget(a) else {
        return false;
    };
    drop(kept);
    let unique = a.is_unique();
    if unique {
        f(a.as_slice_mut().expect("contiguous and not shared"));
    }
    lock::<T>().keep(a.clone());
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_output_is_reused_and_a_live_one_is_not() {
        let a = output::<i64>(&[3, 7], |o| o.fill(1));
        let ptr = a.as_ptr();
        let b = output::<i64>(&[7, 3], |o| o.fill(2));
        assert_ne!(b.as_ptr(), ptr, "a live buffer was handed out again");
        drop(a);
        let c = output::<i64>(&[21], |o| o.fill(3));
        assert_eq!(c.as_ptr(), ptr, "the freed buffer was not reused");
        assert!(c.iter().all(|&v| v == 3) && b.iter().all(|&v| v == 2));
        assert_eq!(c.shape(), [21]);
    }

    #[test]
    fn updates_in_place_only_when_nothing_else_shares_the_buffer() {
        let mut a = output::<f64>(&[4], |o| o.fill(1.0));
        let ptr = a.as_ptr();
        assert!(update_in_place(&mut a, |v| v[0] = 5.0));
        assert_eq!((a.as_ptr(), a[[0]]), (ptr, 5.0));
        let view = a.clone();
        assert!(!update_in_place(&mut a, |v| v[0] = 6.0), "a shared buffer was changed");
        assert_eq!(view[[0]], 5.0);
    }

    #[test]
    fn fresh_buffers_start_on_a_cache_line() {
        for len in [1, 15, 1000, 1 << 20] {
            let a = output::<f32>(&[len], |o| o.fill(0.5));
            assert_eq!(a.as_ptr() as usize % ALIGN, 0, "{len} values");
            assert_eq!((a.len(), a.as_slice().map(<[f32]>::len)), (len, Some(len)));
            let b = output::<bool>(&[len, 1], |o| o.fill(true));
            assert_eq!(b.as_ptr() as usize % ALIGN, 0, "{len} bools");
        }
    }

    #[test]
    fn a_sweep_releases_buffers_unused_for_a_period() {
        let mut pool = Pool::<bool>::new();
        pool.keep(Array::from_elem(IxDyn(&[5]), false));
        pool.takes = 10;
        pool.sweep();
        assert_eq!(pool.buckets[&5].entries.len(), 1, "a buffer used in this period was released");
        pool.sweep();
        assert!(pool.buckets[&5].entries.is_empty());
    }
}
