//! Writing outputs too large for the caches straight to memory.
//!
//! A store to a line that is not cached first reads the line in (a read for
//! ownership), and the written line later evicts something the op still
//! reads. For an output of half the last-level cache or more, with an input
//! at least as large, neither stays cached anyway: there the streaming
//! loops compute a cache line of the output at a time into a buffer on the
//! stack and write it with non-temporal stores, which skip the read and the
//! cache. A 4M-element add ran about 1.3x faster on one core so.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use crate::simd::{Isa, isa};

/// Bytes in a cache line: what one round of [`Streamer::write_lines`] writes.
const LINE: usize = 64;

/// Whether an output of `bytes` should be written past the caches: half
/// the last-level cache or more, on a CPU with AVX (for the 32-byte
/// non-temporal store).
pub(crate) fn streams(bytes: usize) -> bool {
    static FROM: OnceLock<usize> = OnceLock::new();
    let from = *FROM.get_or_init(|| match (isa(), last_level_cache()) {
        (Isa::Base, _) | (_, None) => usize::MAX,
        (_, Some(size)) => size / 2,
    });
    bytes >= from
}

/// Bytes of the largest data or unified cache CPU 0 reports (Linux's
/// sysfs); `None` where the system does not say.
fn last_level_cache() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, usize)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let (Some(level), Some(size)) = (read("level"), read("size").as_deref().and_then(parse_size)) else {
            continue;
        };
        let Ok(level) = level.trim().parse::<u32>() else { continue };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// A sysfs cache size ("32768K", "1M", "512") in bytes.
fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// Writes one output, piece by piece: past the caches when the whole
/// output is as large as [`streams`] asks for. Dropping it makes its
/// non-temporal stores visible to other threads, so a piece written on a
/// forked thread is complete when the fork joins.
pub(crate) struct Streamer {
    on: bool,
}

impl Streamer {
    /// A writer for a piece of an output of `bytes` in all.
    #[inline(always)]
    pub(crate) fn for_output(bytes: usize) -> Self {
        Self { on: streams(bytes) }
    }

    /// Writes `out` through `f(offset, slots)`, which must write every
    /// slot it is given: the values `offset..offset + slots.len()` of
    /// `out`. When streaming, `f` is given one cache line of `out` at a
    /// time in a buffer on the stack, which non-temporal stores then write
    /// out; the unaligned ends, and runs shorter than a few lines, are
    /// written in place. `f` should slice its inputs to `slots.len()`, so
    /// that its loop over a line compiles with a known count.
    #[inline(always)]
    pub(crate) fn write_lines<U: Copy>(
        &self,
        out: &mut [MaybeUninit<U>],
        mut f: impl FnMut(usize, &mut [MaybeUninit<U>]),
    ) {
        let size = size_of::<U>();
        if !self.on || size == 0 || !LINE.is_multiple_of(size) || size_of_val(out) < 4 * LINE {
            f(0, out);
            return;
        }
        let lane = LINE / size;
        let head = (out.as_ptr() as usize).wrapping_neg() % LINE / size;
        let end = head + (out.len() - head) / lane * lane;
        f(0, &mut out[..head]);
        #[repr(align(64))]
        struct Line([MaybeUninit<u8>; LINE]);
        let mut line = Line([MaybeUninit::uninit(); LINE]);
        // SAFETY: `lane` values of `U` fill the 64 bytes, which are aligned
        // for any `U` whose size divides 64.
        let line = unsafe { std::slice::from_raw_parts_mut(line.0.as_mut_ptr().cast::<MaybeUninit<U>>(), lane) };
        let mut i = head;
        while i < end {
            f(i, line);
            // SAFETY: `out[i..i + lane]` is a whole aligned cache line of
            // `out`; `on` is set only where AVX runs (`streams`).
            unsafe { store_line(out.as_mut_ptr().add(i).cast(), line.as_ptr().cast()) };
            i += lane;
        }
        f(end, &mut out[end..]);
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        // Non-temporal stores are weakly ordered; the fence orders them
        // before whatever this thread does next (a join, a lock release).
        #[cfg(target_arch = "x86_64")]
        if self.on {
            // SAFETY: SSE is part of the x86-64 baseline.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    }
}

/// Writes the 64 bytes at `src` to the cache line at `dst` past the caches.
///
/// # Safety
/// `dst` and `src` must be 64-byte aligned and valid for 64 bytes; the CPU
/// must have AVX.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store_line(dst: *mut u8, src: *const u8) {
    use std::arch::x86_64::{__m256i, _mm256_load_si256, _mm256_stream_si256};
    let (dst, src) = (dst.cast::<__m256i>(), src.cast::<__m256i>());
    // SAFETY: the caller's contract.
    unsafe {
        _mm256_stream_si256(dst, _mm256_load_si256(src));
        _mm256_stream_si256(dst.add(1), _mm256_load_si256(src.add(1)));
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn store_line(dst: *mut u8, src: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, LINE) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size(""), None);
    }

    /// Every value lands where a direct write puts it, for outputs that
    /// start off a cache line, end mid-line, or hold less than a line, in
    /// each element size the pool holds.
    #[test]
    fn streamed_writes_land_where_direct_ones_do() {
        fn check<U: Copy + PartialEq + std::fmt::Debug>(value: impl Fn(usize) -> U, fill: U) {
            let streamer = Streamer { on: isa() != Isa::Base };
            for (len, skip) in [(0, 0), (5, 1), (16, 0), (100, 3), (1000, 0), (4099, 7)] {
                let mut backing = vec![MaybeUninit::new(fill); len + skip + 64];
                // Start `skip` values past a cache line.
                let at = (backing.as_ptr() as usize).wrapping_neg() % LINE / size_of::<U>() + skip;
                let out = &mut backing[at..at + len];
                let mut seen = Vec::new();
                streamer.write_lines(out, |offset, slots| {
                    seen.push((offset, slots.len()));
                    for (k, s) in slots.iter_mut().enumerate() {
                        s.write(value(offset + k));
                    }
                });
                // SAFETY: every slot was initialised with `fill` or written.
                let got: Vec<U> = out.iter().map(|s| unsafe { s.assume_init() }).collect();
                let want: Vec<U> = (0..len).map(&value).collect();
                assert_eq!(got, want, "len {len}, skip {skip}");
                let covered: usize = seen.iter().map(|s| s.1).sum();
                assert_eq!(covered, len, "each value is written once");
                if streamer.on && len >= 5 * LINE / size_of::<U>() {
                    assert!(seen.len() > 3, "a long output goes a line at a time");
                }
            }
        }
        check(|i| (i as f32).mul_add(0.5, -3.0), f32::NAN);
        check(|i| i as f64 * 0.25, f64::NAN);
        check(|i| i as i64 - 9, 0);
        check(|i| i % 3 == 0, false);
    }

    /// Elementwise ops whose output is large enough to stream (on this
    /// machine's cache) write the values the scalar code computes: a
    /// contiguous add, a broadcast bias row and a unary map, on one thread
    /// and forked.
    #[test]
    fn large_elementwise_outputs_stream_the_right_values() {
        use crate::elementwise::{map, zip};
        use crate::parallel::CHEAP_OP_MIN;
        let bytes = last_level_cache().map_or(1 << 20, |c| c / 2) + 4096;
        assert!(streams(bytes) || isa() == Isa::Base || last_level_cache().is_none(), "the output streams");
        let cols = 1000;
        let rows = bytes / size_of::<f32>() / cols + 1;
        let x = crate::storage::Array::from_shape_fn(ndarray::IxDyn(&[rows, cols]), |i| {
            (i[0] * 7 + i[1]) as f32 * 0.5 - 90.0
        });
        let y = x.mapv(|v| v * -0.25 + 1.0).into_shared();
        let bias = crate::storage::Array::from_shape_fn(ndarray::IxDyn(&[1, cols]), |i| i[1] as f32 - 500.0);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            pool.install(|| {
                let sum = zip(&x, &y, CHEAP_OP_MIN, |a, b| a + b);
                assert!(sum.iter().zip(x.iter().zip(&y)).all(|(s, (a, b))| *s == a + b), "add, {threads} threads");
                let biased = zip(&x, &bias, CHEAP_OP_MIN, |a, b| a + b);
                let want = &x + &bias;
                assert_eq!(biased, want, "bias row, {threads} threads");
                let relu = map(&x, CHEAP_OP_MIN, |v| v.max(0.0));
                assert_eq!(relu, x.mapv(|v| v.max(0.0)), "map, {threads} threads");
            });
        }
    }
}
