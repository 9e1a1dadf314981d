//! The packers of the bf16 kernels: panels of words, each the two bf16
//! of a pair of depth steps, read from bf16 operands as they are or from
//! f32 operands rounded as they are packed ([`Source`]).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use blaze_runtime::bf16;

use super::RoundedBf16;
use crate::gemm::Strided;

/// An f32 operand that the packers round to bf16 (to nearest even) as
/// they read it: a product of f32 tensors under a bf16 precision
/// (`Composites::matmul_rounded`), which so skips a pass that would round
/// each operand into a copy first. The sums are the bf16 kernels',
/// stored (or added) as f32 without a second rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct RoundsToBf16(pub f32);

/// What the packers read: bf16 values, or f32 ones rounded to bf16.
///
/// Rounding in hardware (`vcvtne2ps2bf16`) reads an f32 subnormal as
/// zero; `RoundsToBf16`'s scalar rounding does the same, so every path of
/// the packers gives the same words.
pub(crate) trait Source: Copy + Send + Sync + 'static {
    /// Whether a kernel may read a row-major panel of these in place.
    const IN_PLACE: bool;

    /// The value as bf16.
    fn bf16(self) -> bf16;

    /// The word of the values at `at` and `at + 1`.
    ///
    /// # Safety
    /// Both lie in one allocation.
    #[inline(always)]
    unsafe fn word(at: *const Self) -> u32 {
        // SAFETY: as the caller vouches.
        unsafe { word((*at).bf16(), (*at.add(1)).bf16()) }
    }

    /// The 32 values from `at` on, as a vector of bf16.
    ///
    /// # Safety
    /// They lie in one allocation; the CPU has AVX512-BF16.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load32(at: *const Self) -> __m512i;

    /// The values of `mask`'s set bits among the 32 from `at` on, zeros
    /// elsewhere (the others are not read).
    ///
    /// # Safety
    /// The values of the set bits lie in one allocation; the CPU has
    /// AVX512-BF16.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load32_masked(at: *const Self, mask: __mmask32) -> __m512i;
}

impl Source for bf16 {
    const IN_PLACE: bool = true;

    #[inline(always)]
    fn bf16(self) -> bf16 {
        self
    }

    #[inline(always)]
    unsafe fn word(at: *const bf16) -> u32 {
        // SAFETY: as the caller vouches; the word is the two bf16 as they
        // lie (little-endian), not necessarily aligned.
        unsafe { at.cast::<u32>().read_unaligned() }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32(at: *const bf16) -> __m512i {
        // SAFETY: as the caller vouches.
        unsafe { _mm512_loadu_si512(at.cast()) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32_masked(at: *const bf16, mask: __mmask32) -> __m512i {
        // SAFETY: as the caller vouches.
        unsafe { _mm512_maskz_loadu_epi16(mask, at.cast()) }
    }
}

/// A bf16 rounded in a pass of its own: read as the bf16 it is.
impl Source for RoundedBf16 {
    const IN_PLACE: bool = true;

    #[inline(always)]
    fn bf16(self) -> bf16 {
        self.0
    }

    #[inline(always)]
    unsafe fn word(at: *const RoundedBf16) -> u32 {
        // SAFETY: as the caller vouches; `RoundedBf16` is a transparent bf16.
        unsafe { <bf16 as Source>::word(at.cast()) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32(at: *const RoundedBf16) -> __m512i {
        // SAFETY: as above.
        unsafe { <bf16 as Source>::load32(at.cast()) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32_masked(at: *const RoundedBf16, mask: __mmask32) -> __m512i {
        // SAFETY: as above.
        unsafe { <bf16 as Source>::load32_masked(at.cast(), mask) }
    }
}

impl Source for RoundsToBf16 {
    const IN_PLACE: bool = false;

    /// As `vcvtne2ps2bf16` rounds, so that a value packs to the same
    /// bits on the scalar path (edges, odd depths) as on the vector one:
    /// an f32 subnormal is a zero of its sign (`bf16::from_f32` would
    /// round the largest up to bf16's smallest normal).
    #[inline(always)]
    fn bf16(self) -> bf16 {
        if self.0.is_subnormal() { bf16::from_f32(0.0f32.copysign(self.0)) } else { bf16::from_f32(self.0) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32(at: *const RoundsToBf16) -> __m512i {
        // SAFETY: as the caller vouches; `RoundsToBf16` is a transparent
        // f32. The second operand's values go to the low half.
        unsafe {
            let at = at.cast::<f32>();
            std::mem::transmute(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(at.add(16)), _mm512_loadu_ps(at)))
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn load32_masked(at: *const RoundsToBf16, mask: __mmask32) -> __m512i {
        // SAFETY: as the caller vouches.
        unsafe {
            let at = at.cast::<f32>();
            let low = _mm512_maskz_loadu_ps(mask as __mmask16, at);
            // The second half's address may lie past the allocation when
            // its mask is empty: formed without `add`'s promise.
            let high = _mm512_maskz_loadu_ps((mask >> 16) as __mmask16, at.wrapping_add(16));
            std::mem::transmute(_mm512_cvtne2ps_pbh(high, low))
        }
    }
}

/// The word of a pair of bf16: the first in the low half, as the dot
/// product pairs them.
#[inline(always)]
pub(super) fn word(lo: bf16, hi: bf16) -> u32 {
    u32::from(lo.to_bits()) | u32::from(hi.to_bits()) << 16
}

/// Packs `count` lines of `x` (line `i`'s value at depth `d` is `x(i, d)`)
/// in panels of `W` lines, `padded` pairs of depth steps each: per pair,
/// one word per line; zeros past the last line, past the last pair and
/// in the high half of an odd depth's last word. `A` packs its rows
/// (`W = MR`), `B` its columns (`W = NR`, from `B` transposed).
///
/// # Safety
/// `x` addresses `count x depth` values; `out` holds `padded` words, at
/// least `depth.div_ceil(2)`, for each of `count` rounded up to `W`; the
/// CPU runs a bf16 kernel (and so has AVX512-BF16).
pub(super) unsafe fn pack<S: Source, const W: usize>(
    count: usize,
    depth: usize,
    padded: usize,
    x: Strided<S>,
    out: *mut u32,
) {
    let (pairs, whole) = (depth.div_ceil(2), depth / 2);
    debug_assert!(padded >= pairs);
    // Lines contiguous at each depth (`B` as stored, `A` read transposed)
    // go 32 at a time, a cache line of each depth, whatever the panel
    // width: a narrower panel would read part of each line per pass.
    #[cfg(target_arch = "x86_64")]
    if x.rs == 1 && x.cs != 1 && matches!(W, 8 | 16 | 32) {
        for l0 in (0..count).step_by(32) {
            // SAFETY: lines l0.. of `x`, and their panels in `out`.
            unsafe { interleave_pairs::<S, W>((count - l0).min(32), depth, padded, x.at(l0, 0), out.add(l0 * padded)) };
        }
        return;
    }
    for l0 in (0..count).step_by(W) {
        let width = W.min(count - l0);
        // SAFETY: panel l0 / W of `out`.
        let whole_panel = unsafe { std::slice::from_raw_parts_mut(out.add(l0 * padded), padded * W) };
        let (panel, past) = whole_panel.split_at_mut(pairs * W);
        past.fill(0);
        if x.cs == 1 && width == W {
            // Each line's depth contiguous (`A` as stored, a weight `B`
            // read transposed) and a whole panel: a word is a pair as it
            // lies in memory, written in the order the kernel reads them.
            // SAFETY: lines l0..l0 + W of `x`, `depth` values each.
            let at: [*const S; W] = std::array::from_fn(|i| unsafe { x.at(l0 + i, 0) }.ptr);
            // Runs of 16 pairs of 16 lines at a time, transposed in
            // registers; the rest a word at a time.
            #[cfg(target_arch = "x86_64")]
            let done = if W.is_multiple_of(16) {
                let runs = whole / 16;
                for (r, q) in (0..runs).flat_map(|r| (0..W / 16).map(move |q| (r, q))) {
                    // SAFETY: pairs 16 r.. of lines 16 q.. lie inside; the
                    // run's 16 x W words lie in the panel.
                    unsafe {
                        transpose_pairs(
                            &at[16 * q..16 * q + 16],
                            32 * r,
                            panel.as_mut_ptr().add(16 * r * W + 16 * q),
                            W,
                        )
                    };
                }
                16 * runs
            } else {
                0
            };
            #[cfg(not(target_arch = "x86_64"))]
            let done = 0;
            for (p, words) in panel.chunks_exact_mut(W).enumerate().take(whole).skip(done) {
                for (w, line) in words.iter_mut().zip(at) {
                    // SAFETY: values 2p and 2p + 1 of the line lie inside.
                    *w = unsafe { S::word(line.add(2 * p)) };
                }
            }
            if whole < pairs {
                for (w, line) in panel[whole * W..].iter_mut().zip(at) {
                    // SAFETY: the line's last value, depth - 1 = 2 * whole.
                    *w = word(unsafe { *line.add(2 * whole) }.bf16(), bf16::ZERO);
                }
            }
        } else if x.rs == 1 {
            // The lines contiguous at each depth, where the vector path
            // above does not run: two runs interleaved a pair at a time.
            for (p, words) in panel.chunks_exact_mut(W).enumerate() {
                // SAFETY: depths 2p and 2p + 1 (when inside) of lines
                // l0..l0 + width.
                let (lo, hi) = unsafe {
                    let lo = std::slice::from_raw_parts(x.at(l0, 2 * p).ptr, width);
                    let hi = (2 * p + 1 < depth).then(|| std::slice::from_raw_parts(x.at(l0, 2 * p + 1).ptr, width));
                    (lo, hi)
                };
                match hi {
                    Some(hi) => {
                        words.iter_mut().zip(lo.iter().zip(hi)).for_each(|(w, (l, h))| *w = word(l.bf16(), h.bf16()))
                    }
                    None => words.iter_mut().zip(lo).for_each(|(w, l)| *w = word(l.bf16(), bf16::ZERO)),
                }
                words[width..].fill(0);
            }
        } else {
            for i in 0..W {
                if i >= width {
                    panel.iter_mut().skip(i).step_by(W).for_each(|w| *w = 0);
                    continue;
                }
                // SAFETY: line l0 + i of `x`, `depth` long.
                unsafe { pack_pairs(depth, x.at(l0 + i, 0), x.cs, panel.iter_mut().skip(i).step_by(W)) };
            }
        }
    }
}

/// The words of `depth` values from `x`, `step` apart, into `out`: a pair
/// of neighbours read as one word when they are contiguous.
///
/// # Safety
/// `x` addresses `depth` values `step` apart.
#[inline(always)]
pub(super) unsafe fn pack_pairs<'a, S: Source>(
    depth: usize,
    x: Strided<S>,
    step: isize,
    out: impl Iterator<Item = &'a mut u32>,
) {
    let at = |d: usize| {
        // SAFETY: d < depth.
        unsafe { *x.ptr.offset(d as isize * step) }.bf16()
    };
    for (p, w) in out.enumerate() {
        let d = 2 * p;
        *w = if d + 1 >= depth {
            word(at(d), bf16::ZERO)
        } else if step == 1 {
            // SAFETY: values d and d + 1 are contiguous and inside.
            unsafe { S::word(x.ptr.add(d)) }
        } else {
            word(at(d), at(d + 1))
        };
    }
}

/// 16 pairs of 16 lines, each line's depth contiguous: the words of
/// pair `q` (values `from + 2q`, `+1` of each line) to `out + q
/// stride`, line 0 first.
///
/// # Safety
/// Each line holds values `from .. from + 32`; `out` holds 16 runs of
/// 16 words `stride` apart; the CPU has AVX512-BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn transpose_pairs<S: Source>(lines: &[*const S], from: usize, out: *mut u32, stride: usize) {
    debug_assert_eq!(lines.len(), 16);
    // SAFETY: as the caller vouches.
    unsafe {
        let mut v: [__m512i; 16] = std::array::from_fn(|i| S::load32(lines[i].add(from)));
        transpose_16x16(&mut v);
        for (q, row) in v.iter().enumerate() {
            _mm512_storeu_si512(out.add(q * stride).cast(), *row);
        }
    }
}

/// Transposes 16 vectors of 16 32-bit elements: element j of vector i
/// becomes element i of vector j.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) fn transpose_16x16(v: &mut [__m512i; 16]) {
    let mut t = [_mm512_setzero_si512(); 16];
    // Pairs of vectors interleaved by 32 bits, then by 64, within lanes
    // of 128 bits: after that, lane L of vector 4a + b holds the 4 x 4
    // block of vectors 4a.. and elements 4L.. (transposed).
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
    for i in 0..4 {
        v[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        v[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    // Then the 4 x 4 blocks of lanes.
    for i in 0..2 {
        for j in 0..4 {
            t[8 * i + j] = _mm512_shuffle_i32x4::<0x88>(v[8 * i + j], v[8 * i + j + 4]);
            t[8 * i + j + 4] = _mm512_shuffle_i32x4::<0xdd>(v[8 * i + j], v[8 * i + j + 4]);
        }
    }
    for j in 0..8 {
        v[j] = _mm512_shuffle_i32x4::<0x88>(t[j], t[j + 8]);
        v[j + 8] = _mm512_shuffle_i32x4::<0xdd>(t[j], t[j + 8]);
    }
}

/// Up to 32 `lines` contiguous at each of `depth` steps (`x.cs` apart),
/// as words of pairs in panels of `W` lines, `padded` words per line: per
/// pair, the two depths' values of each line interleaved (`vpermt2w`),
/// line 0 first; the last pair of an odd depth with zeros in its high
/// halves; zeros for lines past `lines` in the last panel and past the
/// last pair. Only the panels holding a line are written.
///
/// # Safety
/// `x` addresses `lines` lines at each of `depth` steps; `out` holds
/// `padded` words, at least `depth.div_ceil(2)`, for each of `lines`
/// rounded up to `W`, which is 8, 16 or 32; the CPU has AVX512-BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn interleave_pairs<S: Source, const W: usize>(
    lines: usize,
    depth: usize,
    padded: usize,
    x: Strided<S>,
    out: *mut u32,
) {
    const { assert!(matches!(W, 8 | 16 | 32)) };
    debug_assert!(x.rs == 1 && (1..=32).contains(&lines));
    let pairs = depth.div_ceil(2);
    // The lines read; the others load as zeros.
    let mask = u32::MAX >> (32 - lines);
    // Word c of the low vector: line c of the first depth, then of the
    // second (index 32 + c); the high vector, lines 16 to 31.
    let low: [u16; 32] = std::array::from_fn(|e| (e / 2 + 32 * (e % 2)) as u16);
    let high: [u16; 32] = std::array::from_fn(|e| (16 + e / 2 + 32 * (e % 2)) as u16);
    // Where line `l`'s word of pair `p` goes, and the runs of words one
    // 512-bit vector of 16 lines splits into: one panel's (W >= 16) or
    // two (W = 8).
    let word_at = |l: usize, p: usize| (l / W * padded + p) * W + l % W;
    let panels = lines.div_ceil(W);
    // SAFETY (all): the loads read the lines at depths d and d + 1 (a
    // zero vector past the depth); the stores write pair p's words of
    // the panels that hold a line, all inside `out`.
    unsafe {
        let (low, high) = (_mm512_loadu_si512(low.as_ptr().cast()), _mm512_loadu_si512(high.as_ptr().cast()));
        for p in 0..pairs {
            let d = 2 * p;
            let first = S::load32_masked(x.ptr.offset(d as isize * x.cs), mask);
            let second = if d + 1 < depth {
                S::load32_masked(x.ptr.offset((d + 1) as isize * x.cs), mask)
            } else {
                _mm512_setzero_si512()
            };
            for (half, index) in [low, high].into_iter().enumerate() {
                let words = _mm512_permutex2var_epi16(first, index, second);
                let l = 16 * half;
                if l / W >= panels {
                    break;
                }
                if W >= 16 {
                    _mm512_storeu_si512(out.add(word_at(l, p)).cast(), words);
                } else {
                    _mm256_storeu_si256(out.add(word_at(l, p)).cast(), _mm512_castsi512_si256(words));
                    if (l + 8) / W < panels {
                        _mm256_storeu_si256(out.add(word_at(l + 8, p)).cast(), _mm512_extracti64x4_epi64::<1>(words));
                    }
                }
            }
        }
        for panel in 0..panels {
            let at = out.add(panel * W * padded);
            std::slice::from_raw_parts_mut(at.add(pairs * W), (padded - pairs) * W).fill(0);
        }
    }
}
