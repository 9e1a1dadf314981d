//! The x86-64 side of the GEMM: the vector registers behind [`Lanes`], the
//! kernels' step loops in assembly where LLVM's register allocation lost
//! speed, and the 8x8 transposes of the packers.

use std::arch::asm;
use std::arch::x86_64::*;

use super::{Lanes, Strided, Tile};

/// The AVX-512 narrow tile (16 rows, one vector of 16 f32) with `A`
/// read in place, its rows `a.rs` apart and its steps `a.cs` apart:
/// the step loop in assembly. Row `4g + j` is read at `base[g] +
/// {0, 1, 2, 3} rs` (`3 rs` a register of its own), each base moved
/// on a step at a time. Compiled from Rust, LLVM gave every row a
/// register of its own and kept 7 of the 16 on the stack, reloaded
/// every step (the `p v` of attention, heads of 16, at 0.84x MKL).
///
/// # Safety
/// `a` addresses 16 rows of `kc >= 1` steps, `b` `kc` rows of 16
/// values `b_rs` apart; the tile lies in the destination; the CPU
/// has AVX-512.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn narrow_in_place(kc: usize, a: Strided<f32>, b: *const f32, b_rs: usize, tile: Tile<f32>) {
    debug_assert!(kc >= 1);
    let (rs, cs) = (a.rs * 4, a.cs * 4);
    let mut c = [_mm512_setzero_ps(); 16];
    let [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15] = &mut c;
    // SAFETY: the loads stay in the rows and steps the caller vouches
    // for; no memory is written.
    unsafe {
        asm!(
            "2:",
            "vmovups {bv}, zmmword ptr [{b}]",
            "vfmadd231ps {c0}, {bv}, dword ptr [{g0}]{{1to16}}",
            "vfmadd231ps {c1}, {bv}, dword ptr [{g0} + {rs}]{{1to16}}",
            "vfmadd231ps {c2}, {bv}, dword ptr [{g0} + {rs} * 2]{{1to16}}",
            "vfmadd231ps {c3}, {bv}, dword ptr [{g0} + {rs3}]{{1to16}}",
            "vfmadd231ps {c4}, {bv}, dword ptr [{g1}]{{1to16}}",
            "vfmadd231ps {c5}, {bv}, dword ptr [{g1} + {rs}]{{1to16}}",
            "vfmadd231ps {c6}, {bv}, dword ptr [{g1} + {rs} * 2]{{1to16}}",
            "vfmadd231ps {c7}, {bv}, dword ptr [{g1} + {rs3}]{{1to16}}",
            "vfmadd231ps {c8}, {bv}, dword ptr [{g2}]{{1to16}}",
            "vfmadd231ps {c9}, {bv}, dword ptr [{g2} + {rs}]{{1to16}}",
            "vfmadd231ps {c10}, {bv}, dword ptr [{g2} + {rs} * 2]{{1to16}}",
            "vfmadd231ps {c11}, {bv}, dword ptr [{g2} + {rs3}]{{1to16}}",
            "vfmadd231ps {c12}, {bv}, dword ptr [{g3}]{{1to16}}",
            "vfmadd231ps {c13}, {bv}, dword ptr [{g3} + {rs}]{{1to16}}",
            "vfmadd231ps {c14}, {bv}, dword ptr [{g3} + {rs} * 2]{{1to16}}",
            "vfmadd231ps {c15}, {bv}, dword ptr [{g3} + {rs3}]{{1to16}}",
            "add {g0}, {cs}",
            "add {g1}, {cs}",
            "add {g2}, {cs}",
            "add {g3}, {cs}",
            "add {b}, {b_rs}",
            "dec {k}",
            "jnz 2b",
            c0 = inout(zmm_reg) *c0, c1 = inout(zmm_reg) *c1, c2 = inout(zmm_reg) *c2, c3 = inout(zmm_reg) *c3,
            c4 = inout(zmm_reg) *c4, c5 = inout(zmm_reg) *c5, c6 = inout(zmm_reg) *c6, c7 = inout(zmm_reg) *c7,
            c8 = inout(zmm_reg) *c8, c9 = inout(zmm_reg) *c9, c10 = inout(zmm_reg) *c10, c11 = inout(zmm_reg) *c11,
            c12 = inout(zmm_reg) *c12, c13 = inout(zmm_reg) *c13, c14 = inout(zmm_reg) *c14, c15 = inout(zmm_reg) *c15,
            bv = out(zmm_reg) _,
            g0 = inout(reg) a.ptr => _,
            g1 = inout(reg) a.ptr.byte_offset(4 * rs) => _,
            g2 = inout(reg) a.ptr.byte_offset(8 * rs) => _,
            g3 = inout(reg) a.ptr.byte_offset(12 * rs) => _,
            rs = in(reg) rs,
            rs3 = in(reg) 3 * rs,
            cs = in(reg) cs,
            b = inout(reg) b => _,
            b_rs = in(reg) b_rs * 4,
            k = inout(reg) kc => _,
            options(nostack, readonly),
        );
    }
    let Tile { dst, dst_rs, rows, cols, add, .. } = tile;
    let mask = ((1u32 << cols.min(16)) - 1) as __mmask16;
    for (i, &ci) in c.iter().enumerate().take(rows) {
        // SAFETY: row i of the tile, `cols` long, lies in the
        // destination; the mask keeps to those columns.
        unsafe {
            let at = dst.offset(i as isize * dst_rs);
            let v = if add { _mm512_add_ps(ci, _mm512_maskz_loadu_ps(mask, at)) } else { ci };
            _mm512_mask_storeu_ps(at, mask, v);
        }
    }
}

/// Implements [`Lanes`] for a register type by its intrinsics.
macro_rules! lanes {
    ($name:ident, $reg:ty, $t:ty, $w:literal, $zero:ident, $splat:ident, $load:ident, $fma:ident, $add:ident, $store:ident) => {
        /// A vector register.
        #[derive(Clone, Copy)]
        pub struct $name($reg);

        // SAFETY (every method): the caller runs this on a CPU with the
        // register's ISA, and pointers address `W` values.
        impl Lanes for $name {
            type T = $t;
            const W: usize = $w;
            const F32: bool = size_of::<$t>() == 4;
            #[inline(always)]
            unsafe fn zero() -> Self {
                $name(unsafe { $zero() })
            }
            #[inline(always)]
            unsafe fn splat(x: $t) -> Self {
                $name(unsafe { $splat(x) })
            }
            #[inline(always)]
            unsafe fn load(p: *const $t) -> Self {
                $name(unsafe { $load(p) })
            }
            #[inline(always)]
            unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
                $name(unsafe { $fma(a.0, b.0, c.0) })
            }
            #[inline(always)]
            unsafe fn add(a: Self, b: Self) -> Self {
                $name(unsafe { $add(a.0, b.0) })
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut $t) {
                unsafe { $store(p, self.0) }
            }
            #[inline(always)]
            unsafe fn sum(self) -> $t {
                let mut lanes = [0.0; $w];
                unsafe { $store(lanes.as_mut_ptr(), self.0) };
                let mut total = 0.0;
                for v in lanes {
                    total += v;
                }
                total
            }
        }
    };
}

lanes!(
    F32x16,
    __m512,
    f32,
    16,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
lanes!(
    F64x8,
    __m512d,
    f64,
    8,
    _mm512_setzero_pd,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);
lanes!(
    F32x8,
    __m256,
    f32,
    8,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
lanes!(
    F64x4,
    __m256d,
    f64,
    4,
    _mm256_setzero_pd,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);

/// Writes the transpose of the 8 x 8 f32 block at `src` (rows `src_rs`
/// apart) to `dst` (rows `dst_rs` apart): row `q` of the output is
/// column `q` of the input.
///
/// # Safety
/// Both blocks are valid, and the CPU has AVX2; callers inline this
/// into a function compiled for it.
#[inline(always)]
pub unsafe fn transpose8(src: *const f32, src_rs: isize, dst: *mut f32, dst_rs: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.offset(i as isize * src_rs)));
        // Pairs of rows interleaved, then pairs of pairs, then halves
        // swapped across the two 128-bit lanes.
        let t = [
            _mm256_unpacklo_ps(r[0], r[1]),
            _mm256_unpackhi_ps(r[0], r[1]),
            _mm256_unpacklo_ps(r[2], r[3]),
            _mm256_unpackhi_ps(r[2], r[3]),
            _mm256_unpacklo_ps(r[4], r[5]),
            _mm256_unpackhi_ps(r[4], r[5]),
            _mm256_unpacklo_ps(r[6], r[7]),
            _mm256_unpackhi_ps(r[6], r[7]),
        ];
        let u = [
            _mm256_shuffle_ps::<0x44>(t[0], t[2]),
            _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
            _mm256_shuffle_ps::<0x44>(t[1], t[3]),
            _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
            _mm256_shuffle_ps::<0x44>(t[4], t[6]),
            _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
            _mm256_shuffle_ps::<0x44>(t[5], t[7]),
            _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
        ];
        for q in 0..4 {
            _mm256_storeu_ps(dst.add(q * dst_rs), _mm256_permute2f128_ps::<0x20>(u[q], u[q + 4]));
            _mm256_storeu_ps(dst.add((q + 4) * dst_rs), _mm256_permute2f128_ps::<0x31>(u[q], u[q + 4]));
        }
    }
}
