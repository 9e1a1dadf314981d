//! Memory the GEMMs pack into: buffers grown on 64-byte lines (huge pages
//! for large ones) and each thread's scratch space, which the CPU
//! backend's convolutions use too.

use std::cell::RefCell;

/// Byte alignment of packed and pooled buffers: a cache line. The
/// allocator aligns a large block to 16 bytes, so a 64-byte vector load
/// from it straddles two cache lines every time; on 4M-element rows that
/// cost a third of the read rate from L3.
pub const ALIGN: usize = 64;

const HUGE_FROM: usize = 4 << 20;

/// Asks Linux to back the whole 2 MiB pages within `bytes` from `ptr` with
/// transparent huge pages, for a buffer of at least 4 MiB (`HUGE_FROM`)
/// whose pages are not yet touched. Streaming 16 MB through 4 KiB pages
/// misses the TLB every page: an add of two 4M-element rows ran 1.5x
/// faster on huge pages. Systems whose huge pages are off (or only for
/// regions that ask, the common default, which this asks for) keep
/// working either way; a refusal changes nothing, so it is ignored.
pub fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_FROM {
        const PAGE: usize = 4096;
        let (start, end) = ((ptr as usize).next_multiple_of(PAGE), (ptr as usize + bytes) / PAGE * PAGE);
        // SAFETY: the range lies inside an allocation the caller owns;
        // the advice changes how its pages are backed, not their contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// Room for at least `len` values of `T` in `words` (grown, never shrunk),
/// starting on an [`ALIGN`] boundary.
pub fn grow<T>(words: &mut Vec<u64>, len: usize) -> *mut T {
    const { assert!(align_of::<T>() <= align_of::<u64>()) };
    let word = size_of::<u64>();
    let bytes = len.checked_mul(size_of::<T>()).unwrap_or_else(|| panic!("scratch of {len} values: more bytes than memory has"));
    let need = bytes.div_ceil(word) + ALIGN / word;
    if words.len() < need {
        words.reserve(need - words.len());
        advise_huge_pages(words.as_ptr().cast(), words.capacity() * word);
        words.resize(need, 0);
    }
    let skip = (words.as_ptr() as usize).wrapping_neg() % ALIGN / word;
    words[skip..].as_mut_ptr().cast()
}

thread_local! {
    /// Scratch space of this thread (im2col columns), kept between calls.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on `len` values of scratch space with stale contents: this
/// thread's buffer, or a fresh one if the buffer is in use further up the
/// stack (rayon may run another task on a thread that waits for a join).
pub fn with_scratch<T: AnyBits, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut words) => {
            let ptr = grow::<T>(&mut words, len);
            // SAFETY: `grow` made room for `len` values of `T`, every bit
            // pattern of which is valid; the borrow is exclusive.
            f(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
        }
        Err(_) => f(&mut vec![T::default(); len]),
    })
}

/// Plain values of which every bit pattern is one, so that stale scratch
/// memory may be read as them.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value.
pub unsafe trait AnyBits: Copy + Default {}

// SAFETY: every bit pattern is a float (NaNs included).
unsafe impl AnyBits for f32 {}
// SAFETY: as for f32.
unsafe impl AnyBits for f64 {}
// SAFETY: every bit pattern is a byte.
unsafe impl AnyBits for u8 {}
