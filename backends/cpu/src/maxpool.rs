//! Max pooling's most common case, 2x2 windows with stride 2 in f32, in
//! AVX-512: sixteen windows a step, their two rows split into even and odd
//! columns by one permute each, where the scalar loop takes one window at
//! a time. The winner rule is [`crate::conv`]'s: the first NaN, else the
//! first largest of top-left, top-right, bottom-left, bottom-right.

use std::any::TypeId;

use crate::storage::Num;

/// Pools a `[h, w]` plane into `out` (`[oh, ow]`: windows `sh` rows and
/// 2 columns apart; and `idx` as plane offsets unless it is empty) where
/// `T` is f32 and the CPU has AVX-512. Returns false, having done
/// nothing, otherwise.
pub(crate) fn plane_2x2<T: Num>(
    src: &[T],
    out: &mut [T],
    idx: &mut [i64],
    [h, w, oh, ow]: [usize; 4],
    sh: usize,
) -> bool {
    if TypeId::of::<T>() != TypeId::of::<f32>() || !crate::simd::Isa::V4.runs_here() {
        return false;
    }
    let inside = oh == 0 || ow == 0 || ((oh - 1) * sh + 2 <= h && 2 * ow <= w);
    assert!(inside && out.len() == oh * ow && src.len() >= h * w, "max_pool 2x2: windows outside the plane");
    assert!(idx.is_empty() || idx.len() == out.len(), "max_pool 2x2: {} indices for {} outputs", idx.len(), out.len());
    assert!(w + 1 < i32::MAX as usize / 2, "max_pool 2x2: rows beyond i32 offsets");
    // SAFETY: T is f32 (checked above), so the slices are f32 slices.
    let (src, out) = unsafe {
        (
            std::slice::from_raw_parts(src.as_ptr().cast::<f32>(), src.len()),
            std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f32>(), out.len()),
        )
    };
    for oy in 0..oh {
        let y = oy * sh;
        let (r0, r1) = (&src[y * w..][..2 * ow], &src[(y + 1) * w..][..2 * ow]);
        let i = if idx.is_empty() { &mut [][..] } else { &mut idx[oy * ow..][..ow] };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 is present (checked above); the rows hold the
        // `2 ow` inputs the outputs need.
        unsafe {
            v4::row(r0, r1, &mut out[oy * ow..][..ow], i, (y * w) as i64, w as i32)
        };
    }
    true
}

#[cfg(target_arch = "x86_64")]
mod v4 {
    use std::arch::x86_64::*;

    /// Columns 0, 2, .., 30 and 1, 3, .., 31 of two 16-lane vectors.
    const EVEN: [i32; 16] = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30];
    const ODD: [i32; 16] = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31];

    /// The low `n` bits set (`n <= 16`).
    #[inline(always)]
    fn first(n: usize) -> u16 {
        if n >= 16 { u16::MAX } else { (1u16 << n) - 1 }
    }

    /// One output row: `out[x]` (and `idx[x]` unless it is empty, as the
    /// plane offset `at + 2x + offset`) from rows `r0` and `r1` (`2 ×
    /// out.len()` values each), which lie `w` apart in the plane.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw")]
    pub(super) unsafe fn row(r0: &[f32], r1: &[f32], out: &mut [f32], idx: &mut [i64], at: i64, w: i32) {
        // SAFETY: each constant holds 16 lanes.
        let (even, odd) =
            unsafe { (_mm512_loadu_si512(EVEN.as_ptr().cast()), _mm512_loadu_si512(ODD.as_ptr().cast())) };
        // Twice each lane's number: the window's left column, from x0.
        let twice_lane = even;
        let offsets = [_mm512_set1_epi32(1), _mm512_set1_epi32(w), _mm512_set1_epi32(w + 1)];
        let mut x0 = 0;
        while x0 < out.len() {
            let n = (out.len() - x0).min(16);
            // The 2n inputs of each row, as two vectors of 16 lanes.
            let (lo, hi) = (first(2 * n), first((2 * n).saturating_sub(16)));
            // Masked-off lanes are not accessed (their addresses may lie
            // past the slice, hence `wrapping_add`); the caller's asserts
            // bound the rest.
            let split = |r: &[f32]| {
                let p = r.as_ptr().wrapping_add(2 * x0);
                // SAFETY: as above.
                let (l, h) = unsafe { (_mm512_maskz_loadu_ps(lo, p), _mm512_maskz_loadu_ps(hi, p.wrapping_add(16))) };
                (_mm512_permutex2var_ps(l, even, h), _mm512_permutex2var_ps(l, odd, h))
            };
            let (a, b) = (split(r0), split(r1));
            let (mut best, mut off) = (a.0, _mm512_setzero_si512());
            for (v, o) in [a.1, b.0, b.1].into_iter().zip(offsets) {
                let best_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(best, best);
                let v_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
                let larger = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, best);
                let take = !best_nan & (v_nan | larger);
                best = _mm512_mask_mov_ps(best, take, v);
                off = _mm512_mask_mov_epi32(off, take, o);
            }
            let keep = first(n);
            // SAFETY: as the loads.
            unsafe { _mm512_mask_storeu_ps(out.as_mut_ptr().wrapping_add(x0), keep, best) };
            if !idx.is_empty() {
                // at + 2 (x0 + lane) + offset, widened to i64 in two halves.
                let pos = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32(2 * x0 as i32), twice_lane), off);
                let base = _mm512_set1_epi64(at);
                let halves = [_mm512_castsi512_si256(pos), _mm512_extracti64x4_epi64::<1>(pos)];
                for (h, half) in halves.into_iter().enumerate() {
                    let wide = _mm512_add_epi64(_mm512_cvtepi32_epi64(half), base);
                    let mask = (keep >> (8 * h)) as u8;
                    // SAFETY: as the loads.
                    unsafe { _mm512_mask_storeu_epi64(idx.as_mut_ptr().wrapping_add(x0 + 8 * h), mask, wide) };
                }
            }
            x0 += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plane_2x2;

    /// The first NaN, else the first largest, of each window, taken one
    /// tap at a time.
    fn reference(src: &[f32], [h, w]: [usize; 2], sh: usize) -> (Vec<f32>, Vec<i64>) {
        let (oh, ow) = ((h - 2) / sh + 1, w / 2);
        let (mut out, mut idx) = (vec![], vec![]);
        for oy in 0..oh {
            for ox in 0..ow {
                let taps = [(0, 0), (0, 1), (1, 0), (1, 1)].map(|(dy, dx)| (oy * sh + dy) * w + 2 * ox + dx);
                let mut at = taps[0];
                for &t in &taps[1..] {
                    if !src[at].is_nan() && (src[t].is_nan() || src[t] > src[at]) {
                        at = t;
                    }
                }
                out.push(src[at]);
                idx.push(at as i64);
            }
        }
        (out, idx)
    }

    #[test]
    fn windows_agree_with_one_tap_at_a_time_nan_and_ties_included() {
        if !crate::simd::Isa::V4.runs_here() {
            assert!(!plane_2x2(&[0f32; 4], &mut [0.0], &mut [], [2, 2, 1, 1], 2), "claims a plane without AVX-512");
            return;
        }
        let mut state = 12345u64;
        // Few distinct values, so ties are common; some NaNs.
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match (state >> 33) % 11 {
                0 => f32::NAN,
                k => (k % 4) as f32 - 1.5,
            }
        };
        // Widths below, at and past 16 outputs a row, odd ones dropping the
        // last column; strides 2 and 1 between window rows.
        for (h, w) in [(2, 2), (5, 11), (26, 26), (4, 32), (3, 33), (6, 70)] {
            for sh in [2, 1] {
                let src: Vec<f32> = (0..h * w).map(|_| next()).collect();
                let (want, want_idx) = reference(&src, [h, w], sh);
                let dims = [h, w, (h - 2) / sh + 1, w / 2];
                let (mut out, mut idx) = (vec![0f32; want.len()], vec![-1i64; want.len()]);
                assert!(plane_2x2(&src, &mut out, &mut idx, dims, sh));
                let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same(&out, &want), "{h}x{w} stride {sh}: {out:?} vs {want:?}");
                assert_eq!(idx, want_idx, "{h}x{w} stride {sh}");
                let mut values_only = vec![0f32; want.len()];
                assert!(plane_2x2(&src, &mut values_only, &mut [], dims, sh));
                assert!(same(&values_only, &want), "{h}x{w} stride {sh} without indices");
            }
        }
    }
}
