//! bf16 products on AMX tiles (Intel Sapphire Rapids and later). A tile
//! register holds 16 rows of 64 bytes; `tdpbf16ps` adds to a 16 x 16 tile
//! of f32 sums the products of a tile of `A` (16 rows, 16 pairs of depth
//! steps each) and a tile of `B` (16 pairs, a word of two bf16 per
//! column for 16 columns), 8192 multiply-adds in one instruction. The
//! kernel keeps a 32 x 32 block of sums in four tiles, so each tile of `A`
//! and of `B` it loads serves two products.
//!
//! The blocking is that of the dot-product kernel (`gemm_bf16.rs`): a
//! block of `B` packed in panels of 32 columns, per pair one word per
//! column, whose 16-pair slices are two tiles of `B` (64 bytes a row,
//! 128 apart); a block of `A` packed in panels of 32 rows, per 16 pairs
//! the two tiles of `A` as they load (1 KiB each). Depths are padded with
//! zeros to whole tiles, so one tile shape serves every product.
//!
//! Linux lends a process the tiles' 8 KiB of register state only when
//! asked (`arch_prctl(ARCH_REQ_XCOMP_PERM)`), once for all its threads:
//! [`amx_runs_here`] asks.

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use blaze_runtime::bf16;

use super::x86::store;
use super::{Bf16Plan, Dst, Job, PACKED, Tile, bf16_kernel_runs_here, pack, pack_pairs, word};
use crate::gemm::Strided;
use crate::pool::grow;

/// Rows and columns of the block of sums the kernel keeps in tiles.
pub(super) const ROWS: usize = 32;
pub(super) const COLS: usize = 32;
/// Pairs of depth steps in one tile of `A` (and rows of one of `B`).
pub(super) const PAIRS: usize = 16;

/// Whether this CPU has AMX with bf16 products (and the AVX512-BF16 the
/// kernel's stores use), and the kernel lent this process the tiles.
pub fn amx_runs_here() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| has_amx_bf16() && bf16_kernel_runs_here() && request_tiles())
}

/// CPUID leaf 7: AMX-BF16 (EDX bit 22) and AMX-TILE (bit 24).
fn has_amx_bf16() -> bool {
    if __cpuid(0).eax < 7 {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    edx & (1 << 22) != 0 && edx & (1 << 24) != 0
}

/// Asks Linux for the tile data state (`XFEATURE_XTILEDATA`, 18); an old
/// kernel that does not know the request refuses it, and the tiles stay
/// unused.
pub(crate) fn request_tiles() -> bool {
    #[cfg(target_os = "linux")]
    {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a request about this process's register state; it
        // touches no memory of ours.
        unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The operand of `ldtilecfg`: palette 1, and tiles 0 to 7 all 16 rows of
/// 64 bytes (0-3 the sums, 4-5 `A`'s two row halves, 6-7 `B`'s two column
/// halves).
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    bytes_per_row: [u16; 16],
    rows: [u8; 16],
}

const CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    bytes_per_row: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
};

/// The tiles configured on this thread for as long as it lives; released
/// (their state back to init, which a context switch saves cheaply) when
/// dropped.
pub(crate) struct Tiles;

impl Tiles {
    /// # Safety
    /// [`amx_runs_here`] said yes.
    pub(crate) unsafe fn configure() -> Tiles {
        // SAFETY: the CPU has AMX and this process holds the tiles; the
        // configuration is 64 aligned bytes.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
        Tiles
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: the tiles were configured by `configure`.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// The plan's blocking on the tiles: `dst[m x n] (+)= lhs * rhs`.
///
/// # Safety
/// As for the dot-product kernel's `blocked`, and [`amx_runs_here`].
pub(super) unsafe fn blocked(plan: &Bf16Plan, job: Job) {
    let Job { m, n, k, dst, dst_rs, lhs, rhs, accumulate } = job;
    let Bf16Plan { kc: block_k, mc: block_m, nc: block_n, .. } = *plan;
    debug_assert!(block_k % PAIRS == 0 && block_m % ROWS == 0 && block_n % COLS == 0, "{plan}");
    let pairs = k.div_ceil(2);
    PACKED.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (a_words, b_words) = &mut *bufs;
        let padded = block_k.min(pairs.next_multiple_of(PAIRS));
        let pa: *mut u32 = grow(a_words, block_m.min(m.next_multiple_of(ROWS)) * padded);
        let pb: *mut u32 = grow(b_words, padded * block_n.min(n).next_multiple_of(COLS));
        // SAFETY: the caller vouches for AMX.
        let _tiles = unsafe { Tiles::configure() };
        for jc in (0..n).step_by(block_n) {
            let nc = block_n.min(n - jc);
            for pc in (0..pairs).step_by(block_k) {
                let kp = block_k.min(pairs - pc);
                let steps = kp.div_ceil(PAIRS);
                let depth = (2 * kp).min(k - 2 * pc);
                // SAFETY: the block lies in `rhs`; `pb` holds `steps`
                // tiles' pairs for each of nc columns rounded up to 32.
                unsafe { pack::<COLS>(nc, depth, steps * PAIRS, rhs.at(2 * pc, jc).t(), pb) };
                let add = accumulate || pc > 0;
                // `A` is packed even when row-major: its rows, a row
                // stride apart, would fall in few sets of the level-1 cache
                // (measured 15% slower at 1024 x 1024 x 1024 than the
                // packed tiles, which lie in 1 KiB runs).
                for ic in (0..m).step_by(block_m) {
                    let mc = block_m.min(m - ic);
                    // SAFETY: the block lies in `lhs`; `pa` holds as many
                    // pairs for each of mc rows rounded up to 32.
                    unsafe { pack_a(mc, depth, steps, lhs.at(ic, 2 * pc), pa) };
                    for jr in (0..nc).step_by(COLS) {
                        for ir in (0..mc).step_by(ROWS) {
                            // SAFETY: panel ir / 32 of `pa` and jr / 32 of
                            // `pb` hold `steps` tiles' pairs; the block at
                            // (ic + ir, jc + jr) lies in `dst`.
                            unsafe {
                                let c = dst.add((ic + ir) as isize * dst_rs + (jc + jr) as isize);
                                let tile =
                                    Tile { dst: c, dst_rs, rows: ROWS.min(mc - ir), cols: COLS.min(nc - jr), add };
                                sums(steps, pa.add(ir * steps * PAIRS), pb.add(jr * steps * PAIRS), tile);
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Packs `rows` rows of `x` (`depth` values each) in panels of 32 rows:
/// per `PAIRS` pairs of depth steps, 32 rows of `PAIRS` words (the two
/// tiles of `A`, one after the other); zeros past the last row, past the
/// last pair and in the high half of an odd depth's last word.
///
/// # Safety
/// `x` addresses `rows x depth` values, `depth <= 2 PAIRS steps`; `out`
/// holds `steps PAIRS` words for each of `rows` rounded up to 32; the CPU
/// has AVX-512 (whose 64-byte moves copy a tile's row at once).
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_a(rows: usize, depth: usize, steps: usize, x: Strided<bf16>, out: *mut u32) {
    let (pairs, whole) = (depth.div_ceil(2), depth / 2);
    let padded = steps * PAIRS;
    for r0 in (0..rows).step_by(ROWS) {
        let height = ROWS.min(rows - r0);
        // SAFETY: panel r0 / 32 of `out`.
        let panel = unsafe { std::slice::from_raw_parts_mut(out.add(r0 * padded), ROWS * padded) };
        if x.rs == 1 && x.cs != 1 {
            // `A` read transposed (a weight gradient's `g^T`): the panel's
            // rows contiguous at each depth, transposed in registers.
            // SAFETY: rows r0..r0 + height of `x`, `depth` values each.
            unsafe { pack_a_transposed(height, depth, steps, x.at(r0, 0), panel) };
            continue;
        }
        if x.cs == 1 && height == ROWS && whole == padded {
            // A whole panel of row-major `A` and whole tiles of depth: a
            // tile's worth of each row (64 bytes) at a time, written in
            // the order the kernel loads them.
            // SAFETY: rows r0..r0 + 32 of `x`.
            let at: [*const bf16; ROWS] = std::array::from_fn(|i| unsafe { x.at(r0 + i, 0) }.ptr);
            for (s, tile) in panel.chunks_exact_mut(ROWS * PAIRS).enumerate() {
                for (slice, line) in tile.chunks_exact_mut(PAIRS).zip(at) {
                    // SAFETY: values 32 s .. 32 s + 32 of the row, copied
                    // as bytes (the row need not start on a word).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            line.add(2 * PAIRS * s).cast::<u8>(),
                            slice.as_mut_ptr().cast(),
                            64,
                        )
                    };
                }
            }
            continue;
        }
        // Row i's words: a slice of `PAIRS` in every 32.
        for i in 0..ROWS {
            let slices = panel.chunks_exact_mut(PAIRS).skip(i).step_by(ROWS);
            if i >= height {
                slices.for_each(|s| s.fill(0));
                continue;
            }
            // SAFETY: row r0 + i of `x`, `depth` long.
            let line = unsafe { x.at(r0 + i, 0) };
            if x.cs == 1 {
                // A row's pairs as they lie in memory, a tile's worth (64
                // bytes) at a time; word by word in the last.
                for (s, slice) in slices.enumerate() {
                    let from = s * PAIRS;
                    if from + PAIRS <= whole {
                        // SAFETY: values 2 from .. 2 (from + PAIRS) of the
                        // row (which need not start on a word).
                        let words = unsafe { line.ptr.add(2 * from).cast::<[u32; PAIRS]>().read_unaligned() };
                        slice.copy_from_slice(&words);
                        continue;
                    }
                    for (p, w) in (from..).zip(slice.iter_mut()) {
                        // SAFETY: pair p of the row, or its last value
                        // (depth - 1 = 2 whole) for an odd depth's last pair.
                        *w = unsafe {
                            if p < whole {
                                line.ptr.add(2 * p).cast::<u32>().read_unaligned()
                            } else if p < pairs {
                                word(*line.ptr.add(2 * p), bf16::ZERO)
                            } else {
                                0
                            }
                        };
                    }
                }
            } else {
                let mut words = slices.flatten();
                // SAFETY: the row holds `depth` values `x.cs` apart.
                unsafe { pack_pairs(depth, line, x.cs, words.by_ref().take(pairs)) };
                words.for_each(|w| *w = 0);
            }
        }
    }
}

/// One panel of `A` read transposed (its `height` rows contiguous at
/// each of `depth` steps, `x.cs` apart), as [`pack_a`] lays it out: per
/// tile of 16 pairs, the two depths of each pair interleaved into words
/// of 32 rows (`vpunpck[lh]wd`, which takes rows 0-3 and 4-7 of every 8),
/// then each half, 16 pairs by 16 rows of words, transposed; zeros past
/// `height` and `depth`.
///
/// # Safety
/// `x` addresses `height <= 32` rows of `depth` values; `panel` holds
/// `steps` tiles of 32 rows by 16 words; the CPU has AVX512-BW.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_a_transposed(height: usize, depth: usize, steps: usize, x: Strided<bf16>, panel: &mut [u32]) {
    debug_assert!(height <= ROWS && x.rs == 1 && panel.len() >= steps * ROWS * PAIRS);
    let rows: __mmask32 = if height == ROWS { !0 } else { (1 << height) - 1 };
    // The 32 rows of one depth step, zeros past the rows and the depth.
    let load = |d: usize| {
        if d < depth {
            // SAFETY: depth d of the `height` rows; the masked-off rows
            // are not read.
            unsafe { _mm512_maskz_loadu_epi16(rows, x.ptr.offset(d as isize * x.cs).cast()) }
        } else {
            _mm512_setzero_si512()
        }
    };
    for s in 0..steps {
        // Per pair q of the tile, the words of rows 8L + j (`low`) and
        // 8L + 4 + j (`high`) at element 4L + j.
        let mut low = [_mm512_setzero_si512(); PAIRS];
        let mut high = [_mm512_setzero_si512(); PAIRS];
        for q in 0..PAIRS {
            let d = 2 * (s * PAIRS + q);
            let (lo, hi) = (load(d), load(d + 1));
            low[q] = _mm512_unpacklo_epi16(lo, hi);
            high[q] = _mm512_unpackhi_epi16(lo, hi);
        }
        // Now element q of vector t: the word of pair q of that row.
        transpose_16x16(&mut low);
        transpose_16x16(&mut high);
        for (t, (l, h)) in low.iter().zip(&high).enumerate() {
            let row = 8 * (t / 4) + t % 4;
            // SAFETY: rows `row` and `row + 4` of tile s lie in the panel.
            unsafe {
                _mm512_storeu_si512(panel.as_mut_ptr().add((s * ROWS + row) * PAIRS).cast(), *l);
                _mm512_storeu_si512(panel.as_mut_ptr().add((s * ROWS + row + 4) * PAIRS).cast(), *h);
            }
        }
    }
}

/// Transposes 16 vectors of 16 32-bit elements: element j of vector i
/// becomes element i of vector j.
#[target_feature(enable = "avx512f")]
fn transpose_16x16(v: &mut [__m512i; 16]) {
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

/// The sums of a 32 x 32 block over `steps` tiles of depth: `a` a packed
/// panel of `A`, `b` of `B`, stored to `tile`. A whole block of f32 sums
/// goes straight between tiles and the destination; others through a
/// buffer and the dot-product kernel's stores.
///
/// # Safety
/// `a` and `b` hold `steps` tiles' pairs of 32 rows and 32 columns; the
/// block lies in the destination; the tiles are configured.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn sums(steps: usize, a: *const u32, b: *const u32, tile: Tile) {
    let direct = match tile.dst {
        Dst::F32(at) if tile.rows == ROWS && tile.cols == COLS => Some(at),
        _ => None,
    };
    // SAFETY (all asm): the tiles are configured; each load and store
    // stays inside the block or panel its pointer starts, as the caller
    // vouches.
    unsafe {
        match direct {
            Some(at) if tile.add => {
                let lower = at.offset(16 * tile.dst_rs);
                asm!(
                    "tileloadd tmm0, [{u} + {s}]",
                    "tileloadd tmm1, [{u} + {s} + 64]",
                    "tileloadd tmm2, [{l} + {s}]",
                    "tileloadd tmm3, [{l} + {s} + 64]",
                    u = in(reg) at, l = in(reg) lower, s = in(reg) tile.dst_rs * 4,
                    options(nostack, readonly),
                );
            }
            _ => asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem)),
        }
        // Per step: both tiles of `A` (rows 0-15 at `a`, 16-31 1 KiB on,
        // 64 bytes a row), both of `B` (columns 0-15 and 16-31 of 16
        // pairs, 128 bytes a pair), four products. No software prefetch:
        // both panels are read in order, which the hardware prefetchers
        // follow; prefetching the next step's 2 KiB of each (64
        // instructions a step) cost 2-10% (a quiet Xeon with AMX, one
        // thread, 1024 x 1024 x 1024 to 2048 x 2048 x 2048).
        asm!(
            "2:",
            "tileloadd tmm4, [{a} + {row}]",
            "tileloadd tmm6, [{b} + {pair}]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tileloadd tmm7, [{b} + {pair} + 64]",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a} + {row} + 1024]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "add {a}, 2048",
            "add {b}, 2048",
            "dec {steps}",
            "jnz 2b",
            a = inout(reg) a => _,
            b = inout(reg) b => _,
            steps = inout(reg) steps => _,
            row = in(reg) 64usize,
            pair = in(reg) 128usize,
            options(nostack, readonly),
        );
        if let Some(at) = direct {
            store_sums(at, tile.dst_rs);
            return;
        }
        #[repr(align(64))]
        struct Block([f32; ROWS * COLS]);
        let mut block = Block([0.0; ROWS * COLS]);
        store_sums(block.0.as_mut_ptr(), COLS as isize);
        store::<ROWS, 2>(|i, v| _mm512_load_ps(block.0.as_ptr().add(i * COLS + 16 * v)), tile);
    }
}

/// Stores the four tiles of sums to a 32 x 32 block of f32 at `at`, rows
/// `row` values apart.
///
/// # Safety
/// The block lies in writable memory; the tiles are configured.
#[inline(always)]
unsafe fn store_sums(at: *mut f32, row: isize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "tilestored [{u} + {s}], tmm0",
            "tilestored [{u} + {s} + 64], tmm1",
            "tilestored [{l} + {s}], tmm2",
            "tilestored [{l} + {s} + 64], tmm3",
            u = in(reg) at, l = in(reg) at.offset(16 * row), s = in(reg) row * 4,
            options(nostack),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_vectors_transpose() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            eprintln!("notice: no AVX-512 here; the 16 x 16 transpose is not tested");
            return;
        }
        let values: [[u32; 16]; 16] = std::array::from_fn(|i| std::array::from_fn(|j| (100 * i + j) as u32));
        // SAFETY: the CPU has AVX-512 (checked above); the arrays are 64 bytes.
        let got: [[u32; 16]; 16] = unsafe {
            let mut v = values.map(|row| _mm512_loadu_si512(row.as_ptr().cast()));
            transpose_16x16(&mut v);
            v.map(|x| {
                let mut row = [0u32; 16];
                _mm512_storeu_si512(row.as_mut_ptr().cast(), x);
                row
            })
        };
        let want: [[u32; 16]; 16] = std::array::from_fn(|i| std::array::from_fn(|j| values[j][i]));
        assert_eq!(got, want);
    }
}
