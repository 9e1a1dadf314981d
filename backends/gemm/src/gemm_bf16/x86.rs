//! The AVX512-BF16 dot-product kernel (`vdpbf16ps`): the tiles of
//! [`super::Bf16Kernel::Dot`], a row times a transposed weight, and the
//! stores both bf16 kernels share (f32 added, or bf16 rounded once).

use std::arch::x86_64::*;
use std::mem::transmute;

use blaze_runtime::bf16;

use super::{Dst, Tile, Words};

/// `out (+)= a B` for a row `a` of `k` contiguous values and the
/// columns of `B`, each `k` contiguous values, `col_stride` apart:
/// four columns at a time, so each load of `a` serves four; sums in
/// f32, rounded to bf16 once.
///
/// # Safety
/// `a` holds `k` values, `b` `out.len()` columns as described; the CPU
/// has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
pub(super) unsafe fn row_dots(
    k: usize,
    a: *const bf16,
    b: *const bf16,
    col_stride: isize,
    out: &mut [bf16],
    accumulate: bool,
) {
    let (full, rest) = (k / 32, k % 32);
    let tail = ((1u64 << rest) - 1) as __mmask32;
    // SAFETY (both): chunk c of a run of k values, whole or masked to
    // the values inside.
    let chunk =
        |p: *const bf16, c: usize| -> __m512bh { unsafe { transmute(_mm512_loadu_si512(p.add(32 * c).cast())) } };
    let last =
        |p: *const bf16| -> __m512bh { unsafe { transmute(_mm512_maskz_loadu_epi16(tail, p.add(32 * full).cast())) } };
    for (j0, outs) in (0..out.len()).step_by(4).zip(out.chunks_mut(4)) {
        // SAFETY: column j0 + q < out.len() of `b` (the last repeated
        // to fill a group of four).
        let cols: [*const bf16; 4] =
            std::array::from_fn(|q| unsafe { b.offset((j0 + q.min(outs.len() - 1)) as isize * col_stride) });
        let mut acc = [_mm512_setzero_ps(); 4];
        for c in 0..full {
            let av = chunk(a, c);
            for (s, &col) in acc.iter_mut().zip(&cols) {
                *s = _mm512_dpbf16_ps(*s, av, chunk(col, c));
            }
        }
        if rest > 0 {
            let av = last(a);
            for (s, &col) in acc.iter_mut().zip(&cols) {
                *s = _mm512_dpbf16_ps(*s, av, last(col));
            }
        }
        for (o, s) in outs.iter_mut().zip(acc) {
            let sum = _mm512_reduce_add_ps(s);
            *o = bf16::from_f32(if accumulate { o.to_f32() + sum } else { sum });
        }
    }
}

/// `a x b` over `kp` pairs of depth steps of an `R`-row panel of
/// words of `A` and a panel of `V` vectors of columns (`16 V`) of `B`,
/// stored to `tile`.
///
/// # Safety
/// `a` holds `R x kp` words, `b` `kp x 16 V`; the tile lies in the
/// destination; the CPU has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
pub(super) unsafe fn tile<const R: usize, const V: usize>(kp: usize, a: Words, b: *const u32, tile: Tile) {
    let mut c = [[_mm512_setzero_ps(); V]; R];
    // SAFETY: row i of the panel.
    let rows: [*const u8; R] = std::array::from_fn(|i| unsafe { a.at.offset(i as isize * a.row_bytes) });
    for p in 0..kp {
        // SAFETY: pair p of both panels; a vector of 16 words is 32 bf16.
        unsafe {
            let bv: [__m512bh; V] =
                std::array::from_fn(|v| transmute(_mm512_loadu_si512(b.add((p * V + v) * 16).cast())));
            let step = p as isize * a.pair_bytes;
            for (ci, row) in c.iter_mut().zip(rows) {
                let word = row.offset(step).cast::<u32>().read_unaligned();
                let ai: __m512bh = transmute(_mm512_set1_epi32(word as i32));
                for (cv, &bv) in ci.iter_mut().zip(&bv) {
                    *cv = _mm512_dpbf16_ps(*cv, ai, bv);
                }
            }
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { store::<R, V>(|i, v| c[i][v], tile) };
}

/// Stores `tile`'s rows and columns of the sums of an `R x 16 V`
/// block (`sums(i, v)`: row `i`, columns `16 v..16 v + 16`): added to
/// an f32 destination when the tile says so, or rounded to bf16.
///
/// # Safety
/// The tile lies in the destination; the CPU has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
#[inline]
pub(super) unsafe fn store<const R: usize, const V: usize>(sums: impl Fn(usize, usize) -> __m512, tile: Tile) {
    let Tile { dst, dst_rs, rows, cols, add } = tile;
    // The columns each vector of a row stores.
    let masks: [__mmask16; V] = std::array::from_fn(|v| {
        let n = cols.saturating_sub(16 * v).min(16);
        ((1u32 << n) - 1) as __mmask16
    });
    if let (2, 32, Dst::Bf16(at)) = (V, cols, dst) {
        // Whole rows of 32 bf16: both vectors rounded into one and
        // stored at once.
        for i in 0..R.min(rows) {
            // SAFETY: row i of the tile, 32 long, lies in the destination.
            unsafe {
                let both: __m512i = transmute(_mm512_cvtne2ps_pbh(sums(i, 1), sums(i, 0)));
                _mm512_storeu_si512(at.offset(i as isize * dst_rs).cast(), both);
            }
        }
        return;
    }
    for i in 0..R.min(rows) {
        for (v, &mask) in masks.iter().enumerate() {
            let sums = sums(i, v);
            // SAFETY: row i of the tile, `cols` long, lies in the
            // destination; the mask keeps to those columns.
            unsafe {
                match dst.add(i as isize * dst_rs + 16 * v as isize) {
                    Dst::F32(at) => {
                        let sums = if add { _mm512_add_ps(sums, _mm512_maskz_loadu_ps(mask, at)) } else { sums };
                        _mm512_mask_storeu_ps(at, mask, sums);
                    }
                    Dst::Bf16(at) => {
                        debug_assert!(!add, "bf16 sums are stored whole");
                        // Nearest even, as `bf16::from_f32` rounds.
                        let half: __m256i = transmute(_mm512_cvtneps_pbh(sums));
                        _mm256_mask_storeu_epi16(at.cast(), mask, half);
                    }
                }
            }
        }
    }
}
