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

use super::pack::{Source, pack, pack_pairs, transpose_16x16, word};
use super::x86::store;
use super::{Bf16Plan, Job, PACKED, Tile, bf16_kernel_runs_here};
use crate::gemm::Strided;
use crate::scratch::grow;

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
/// Each panel of 32 rows of `A` runs along a block of `B` (`KC x NC`,
/// half the level-2 cache), so the block stays there while the panels
/// stream past it: a 32 x 32 block of sums loads 4 KiB a step, more than
/// the level-2 cache delivers in the 64 cycles its four products take, so
/// only one operand may come from further away. A row-major `A` whose
/// depth block is whole tiles is read in place (a tile load takes any row
/// stride); only a transposed `A` (a weight gradient's `g^T`), a ragged
/// depth or the last rows are packed. Measured on a Xeon with AMX (family
/// 6 model 207), one thread, against oneDNN in the same run: squares of
/// 512 to 2048 went from 0.79-0.95x to 0.93-1.08x (256: 1.4x to 1.8x)
/// over the blocking before (`B` in blocks of 4096 columns swept by
/// packed blocks of 128 rows of `A`).
///
/// # Safety
/// As for the dot-product kernel's `blocked`, and [`amx_runs_here`].
pub(super) unsafe fn blocked<S: Source>(plan: &Bf16Plan, job: Job<S>) {
    let Job { m, n, k, dst, dst_rs, lhs, rhs, accumulate } = job;
    let Bf16Plan { kc: block_k, mc: block_m, nc: block_n, .. } = *plan;
    debug_assert!(block_k % PAIRS == 0 && block_m % ROWS == 0 && block_n % COLS == 0, "{plan}");
    let pairs = k.div_ceil(2);
    PACKED.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (a_words, b_words) = &mut *bufs;
        let padded = block_k.min(pairs.next_multiple_of(PAIRS));
        // A shallower product takes a wider block of `B`, the same bytes.
        let block_n = (block_n * block_k / padded / COLS * COLS).min(n.next_multiple_of(COLS));
        let pa: *mut u32 = grow(a_words, block_m.min(m.next_multiple_of(ROWS)) * padded);
        let pb: *mut u32 = grow(b_words, padded * block_n.min(n).next_multiple_of(COLS));
        // SAFETY: the caller vouches for AMX.
        let _tiles = unsafe { Tiles::configure() };
        let mut trail = Trail::new();
        for pc in (0..pairs).step_by(block_k) {
            let kp = block_k.min(pairs - pc);
            let steps = kp.div_ceil(PAIRS);
            let depth = (2 * kp).min(k - 2 * pc);
            let add = accumulate || pc > 0;
            // In place: whole tiles of depth, and rows on cache lines (a
            // tile load whose rows straddle two lines takes three times as
            // long, measured on data in the level-1 cache).
            let row_bytes = lhs.rs * size_of::<S>() as isize;
            // SAFETY: depth 2 pc lies in `lhs`.
            let first = unsafe { lhs.at(0, 2 * pc) }.ptr;
            let in_place = S::IN_PLACE
                && lhs.cs == 1
                && lhs.rs > 0
                && depth == 2 * PAIRS * steps
                && row_bytes % 64 == 0
                && (first as usize).is_multiple_of(64);
            for ic in (0..m).step_by(block_m) {
                let mc = block_m.min(m - ic);
                let whole = if in_place { mc / ROWS * ROWS } else { 0 };
                if whole < mc {
                    // SAFETY: the rows lie in `lhs`; `pa` holds `steps`
                    // tiles' pairs for each of them rounded up to 32.
                    unsafe { pack_a(mc - whole, depth, steps, lhs.at(ic + whole, 2 * pc), pa) };
                }
                for jc in (0..n).step_by(block_n) {
                    let nc = block_n.min(n - jc);
                    // SAFETY: the block lies in `rhs`; `pb` holds `steps`
                    // tiles' pairs for each of nc columns rounded up to 32.
                    unsafe { pack::<S, COLS>(nc, depth, steps * PAIRS, rhs.at(2 * pc, jc).t(), pb) };
                    for ir in (0..mc).step_by(ROWS) {
                        let a = if ir < whole {
                            // SAFETY: rows ic + ir.. lie in `lhs`.
                            let at = unsafe { lhs.at(ic + ir, 2 * pc) }.ptr.cast();
                            Panel { at, row: row_bytes as usize, half: 16 * row_bytes as usize, step: 64 }
                        } else {
                            // SAFETY: panel (ir - whole) / 32 of `pa`.
                            let at = unsafe { pa.add((ir - whole) * steps * PAIRS) }.cast();
                            Panel { at, row: 4 * PAIRS, half: 4 * PAIRS * 16, step: 4 * PAIRS * ROWS }
                        };
                        for jr in (0..nc).step_by(COLS) {
                            // SAFETY: `a` and panel jr / 32 of `pb` hold
                            // `steps` tiles' pairs; the block at (ic + ir,
                            // jc + jr) lies in `dst`.
                            unsafe {
                                let c = dst.add((ic + ir) as isize * dst_rs + (jc + jr) as isize);
                                let tile =
                                    Tile { dst: c, dst_rs, rows: ROWS.min(mc - ir), cols: COLS.min(nc - jr), add };
                                trail.sums(steps, a, pb.add(jr * steps * PAIRS), tile);
                            }
                        }
                    }
                }
            }
        }
        // SAFETY: the last block lies in `dst`.
        unsafe { trail.flush() };
    });
}

/// A panel of 32 rows of `A` as the kernel loads it, in bytes: row `i`
/// of tile step `s` at `at + (i % 16) row + (i / 16) half + s step`.
#[derive(Clone, Copy)]
struct Panel {
    at: *const u8,
    row: usize,
    half: usize,
    step: usize,
}

/// Packs `rows` rows of `x` (`depth` values each) in panels of 32 rows:
/// per `PAIRS` pairs of depth steps, 32 rows of `PAIRS` words (the two
/// tiles of `A`, one after the other); zeros past the last row, past the
/// last pair and in the high half of an odd depth's last word.
///
/// # Safety
/// `x` addresses `rows x depth` values, `depth <= 2 PAIRS steps`; `out`
/// holds `steps PAIRS` words for each of `rows` rounded up to 32; the CPU
/// has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn pack_a<S: Source>(rows: usize, depth: usize, steps: usize, x: Strided<S>, out: *mut u32) {
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
            // tile's worth of each row (32 values) at a time, written in
            // the order the kernel loads them.
            // SAFETY: rows r0..r0 + 32 of `x`.
            let at: [*const S; ROWS] = std::array::from_fn(|i| unsafe { x.at(r0 + i, 0) }.ptr);
            for (s, tile) in panel.chunks_exact_mut(ROWS * PAIRS).enumerate() {
                for (slice, line) in tile.chunks_exact_mut(PAIRS).zip(at) {
                    // SAFETY: values 32 s .. 32 s + 32 of the row; the
                    // slice holds their 16 words.
                    unsafe { _mm512_storeu_si512(slice.as_mut_ptr().cast(), S::load32(line.add(2 * PAIRS * s))) };
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
                        // row; the slice holds their 16 words.
                        unsafe { _mm512_storeu_si512(slice.as_mut_ptr().cast(), S::load32(line.ptr.add(2 * from))) };
                        continue;
                    }
                    for (p, w) in (from..).zip(slice.iter_mut()) {
                        // SAFETY: pair p of the row, or its last value
                        // (depth - 1 = 2 whole) for an odd depth's last pair.
                        *w = unsafe {
                            if p < whole {
                                S::word(line.ptr.add(2 * p))
                            } else if p < pairs {
                                word((*line.ptr.add(2 * p)).bf16(), bf16::ZERO)
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
/// `steps` tiles of 32 rows by 16 words; the CPU has AVX512-BF16.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn pack_a_transposed<S: Source>(height: usize, depth: usize, steps: usize, x: Strided<S>, panel: &mut [u32]) {
    debug_assert!(height <= ROWS && x.rs == 1 && panel.len() >= steps * ROWS * PAIRS);
    let rows: __mmask32 = if height == ROWS { !0 } else { (1 << height) - 1 };
    // The 32 rows of one depth step, zeros past the rows and the depth.
    let load = |d: usize| {
        if d < depth {
            // SAFETY: depth d of the `height` rows; the masked-off rows
            // are not read.
            unsafe { S::load32_masked(x.ptr.offset(d as isize * x.cs), rows) }
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

/// The sums of the last block, waiting in a buffer for the next block's
/// products to be issued before they go to the destination: the tile
/// unit multiplies while the vector unit rounds and stores (oneDNN's AMX
/// kernels interleave their stores likewise). Stored at once, a block's
/// sums wait for its last product, and the tile unit idles while they go
/// out: measured on a Xeon with AMX, one thread, 1.1-1.2x on the base
/// GPT's products of depth 256.
pub(super) struct Trail {
    sums: Block,
    pending: Option<Tile>,
}

#[repr(align(64))]
struct Block([f32; ROWS * COLS]);

impl Trail {
    pub(super) fn new() -> Trail {
        Trail { sums: Block([0.0; ROWS * COLS]), pending: None }
    }

    /// The sums of a 32 x 32 block over `steps` tiles of depth: `a` a
    /// panel of `A`, `b` a packed panel of `B`, for `tile`; the last
    /// block's sums stored meanwhile.
    ///
    /// # Safety
    /// `a` and `b` hold `steps` tiles' pairs of 32 rows and 32 columns;
    /// the block lies in the destination; the tiles are configured.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn sums(&mut self, steps: usize, a: Panel, b: *const u32, tile: Tile) {
        // SAFETY (all asm): the tiles are configured; each load stays
        // inside the panel its pointer starts, as the caller vouches.
        unsafe {
            asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem));
            // Per step: both tiles of `A` (rows 0-15 and 16-31), both of
            // `B` (columns 0-15 and 16-31 of 16 pairs, 128 bytes a pair),
            // four products. No software prefetch: both panels are read
            // in order, which the hardware prefetchers follow; prefetching
            // the next step's 2 KiB of each (64 instructions a step) cost
            // 2-10% (a quiet Xeon with AMX, one thread, 1024 x 1024 x 1024
            // to 2048 x 2048 x 2048).
            asm!(
                "2:",
                "tileloadd tmm4, [{a} + {row}]",
                "tileloadd tmm6, [{b} + {pair}]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tileloadd tmm7, [{b} + {pair} + 64]",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tileloadd tmm5, [{a2} + {row}]",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "add {a}, {step}",
                "add {a2}, {step}",
                "add {b}, 2048",
                "dec {steps}",
                "jnz 2b",
                a = inout(reg) a.at => _,
                a2 = inout(reg) a.at.add(a.half) => _,
                step = in(reg) a.step,
                b = inout(reg) b => _,
                steps = inout(reg) steps => _,
                row = in(reg) a.row,
                pair = in(reg) 128usize,
                options(nostack, readonly),
            );
            self.flush();
            store_sums(self.sums.0.as_mut_ptr(), COLS as isize);
        }
        self.pending = Some(tile);
    }

    /// Stores the last block's sums, if any (added to an f32 destination
    /// when its tile says so).
    ///
    /// # Safety
    /// That block lies in its destination.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    pub(super) unsafe fn flush(&mut self) {
        if let Some(tile) = self.pending.take() {
            let sums = self.sums.0.as_ptr();
            // SAFETY: the buffer holds 32 rows of 32; the caller vouches
            // for the destination.
            unsafe { store::<ROWS, 2>(|i, v| _mm512_load_ps(sums.add(i * COLS + 16 * v)), tile) };
        }
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
