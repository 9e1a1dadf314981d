//! bf16 products with f32 sums, `C (+)= A B` for strided bf16 `A` and `B`
//! and a row-major bf16 `C` rounded once, on the AVX512-BF16 dot product
//! (`vdpbf16ps`: per f32 lane, the products of two pairs of bf16 added to
//! the lane, so a 512-bit instruction does 32 multiply-adds where an f32
//! FMA does 16). The blocking follows `gemm.rs` (Goto and van de Geijn),
//! with the depth in pairs: a panel of `A` holds, per pair of depth
//! steps, one 32-bit word per row (its two bf16: a row-major `A` is such
//! a panel as stored); a packed panel of `B`, per pair, one word per
//! column. The kernel keeps an 8 x 32 tile of sums (16 x 16 for at most
//! 16 columns) in 16 registers, broadcasts a word of `A` per row and
//! takes one vector of `B` per 16 columns and pair.
//!
//! A CPU without AVX512-BF16 multiplies bf16 by widening it to f32 and
//! running the f32 GEMM, which gives the same products (a product of two
//! bf16 is exact in f32) summed in another order.

#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;

use blaze_runtime::bf16;

use crate::cpuinfo::{CpuInfo, cpu_info};
use crate::gemm::Strided;
use crate::matmul::Product;
use crate::pool::grow;

mod amx;

pub use amx::amx_runs_here;
pub(crate) use amx::{Tiles, request_tiles};

/// Rows of the register tile.
const MR: usize = 8;
/// Columns of the register tile: two vectors of 16 f32.
const NR: usize = 32;
/// Rows of the narrow tile, one vector wide (16 accumulators too), for
/// products of at most 16 columns, which the wide tile would leave half
/// empty.
const NARROW_ROWS: usize = 16;

/// The kernels of bf16 products.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bf16Kernel {
    /// AMX tiles (`amx.rs`): a 32 x 32 block of sums in four tile
    /// registers, 8192 multiply-adds an instruction.
    Amx,
    /// The AVX512-BF16 dot product: an 8 x 32 tile of sums in 16 vector
    /// registers (16 x 16 for at most 16 columns).
    Dot,
}

impl Bf16Kernel {
    /// Every kernel, fastest first.
    pub const ALL: [Bf16Kernel; 2] = [Bf16Kernel::Amx, Bf16Kernel::Dot];

    /// The name `BLAZE_GEMM_BF16_KERNEL` takes.
    pub fn name(self) -> &'static str {
        match self {
            Bf16Kernel::Amx => "amx-32x32",
            Bf16Kernel::Dot => "avx512bf16-8x32",
        }
    }

    /// Whether this CPU runs the kernel (for AMX: and lent this process
    /// the tiles).
    pub fn runs_here(self) -> bool {
        match self {
            Bf16Kernel::Amx => amx_runs_here(),
            Bf16Kernel::Dot => bf16_kernel_runs_here(),
        }
    }
}

impl std::str::FromStr for Bf16Kernel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Bf16Kernel::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Bf16Kernel::ALL.iter().map(|k| k.name()).collect();
            format!("unknown bf16 GEMM kernel `{s}`: expected one of {}", names.join(", "))
        })
    }
}

/// How bf16 products are blocked on this CPU: depths in pairs of steps.
/// The kernels read their panels at rates the level-2 cache serves, so
/// the blocks are sized for it rather than for the level-1 cache: a deep
/// block lets most products (depth up to 2048 on the dot product) round
/// their sums to bf16 as the kernel stores them. Measured on Zen 4 (1 MiB
/// L2), one thread: square products 5 to 30% faster than with `B`'s panel
/// in the level-1 cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bf16Plan {
    /// The kernel.
    pub kernel: Bf16Kernel,
    /// Pairs of depth steps in a packed block: one panel of `B` (`NR`
    /// words a pair) takes an eighth of the level-2 cache.
    pub kc: usize,
    /// Rows of a block of `A` (a multiple of the tiles' rows). Dot
    /// product: `MC x KC` words of it take half of the level-2 cache.
    /// AMX: how much of `A` is packed at once.
    pub mc: usize,
    /// Columns of a packed block of `B` (a multiple of the tile's 32).
    /// Dot product: `KC x NC` words take an eighth of the last-level
    /// cache. AMX: half of the level-2 cache.
    pub nc: usize,
}

impl Bf16Plan {
    /// The blocking of `kernel` for a CPU with these caches.
    pub fn for_kernel(kernel: Bf16Kernel, info: &CpuInfo) -> Bf16Plan {
        let word = size_of::<u32>();
        let kc = (info.l2 / 8 / (NR * word) / 16 * 16).clamp(128, 1024);
        match kernel {
            // Panels of `A` stream past a block of `B` that takes half the
            // level-2 cache (`amx::blocked`). `MC` only bounds how much of
            // `A` is packed at once (most is read in place) and so how
            // often `B` is packed again.
            Bf16Kernel::Amx => {
                let nc = (info.l2 / 2 / (kc * word) / NR * NR).clamp(64, 4096);
                return Bf16Plan { kernel, kc, mc: 1024, nc };
            }
            Bf16Kernel::Dot => {}
        }
        let mc = (info.l2 / 2 / (kc * word)).clamp(32, 512) / NARROW_ROWS * NARROW_ROWS;
        let nc = (info.l3 / 8 / (kc * word) / NR * NR).clamp(512, 4096);
        Bf16Plan { kernel, kc, mc, nc }
    }
}

impl fmt::Display for Bf16Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Bf16Plan { kernel, kc, mc, nc } = self;
        write!(f, "{} kernel, KC {kc} pairs, MC {mc}, NC {nc}", kernel.name())
    }
}

/// The bf16 plan of this CPU, chosen once: `BLAZE_GEMM_BF16_KERNEL` (a
/// [`Bf16Kernel::name`]) when set, else AMX where it runs.
///
/// # Panics
/// If `BLAZE_GEMM_BF16_KERNEL` names no kernel or one this CPU cannot run.
pub fn bf16_plan() -> &'static Bf16Plan {
    static PLAN: OnceLock<Bf16Plan> = OnceLock::new();
    PLAN.get_or_init(|| {
        let kernel = match std::env::var("BLAZE_GEMM_BF16_KERNEL") {
            Ok(name) => {
                let kernel: Bf16Kernel = name.parse().unwrap_or_else(|e| panic!("BLAZE_GEMM_BF16_KERNEL: {e}"));
                assert!(kernel.runs_here(), "BLAZE_GEMM_BF16_KERNEL={name}: this CPU cannot run it");
                kernel
            }
            Err(_) if amx_runs_here() => Bf16Kernel::Amx,
            Err(_) => Bf16Kernel::Dot,
        };
        Bf16Plan::for_kernel(kernel, cpu_info())
    })
}

/// Whether this CPU has the instructions of the bf16 kernel (AVX-512 with
/// its BF16 extension: AMD Zen 4 and later, Intel Cooper Lake, Sapphire
/// Rapids and later).
pub fn bf16_kernel_runs_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

thread_local! {
    /// Packed `A` and `B` blocks, as in `gemm.rs`: they only grow, so a
    /// thread that has multiplied at a size does so again without allocating.
    static PACKED: RefCell<(Vec<u64>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// bf16 operands and result, f32 sums; [`Product::serial`] needs a CPU
/// with the kernel's instructions ([`bf16_kernel_runs_here`]).
impl Product for bf16 {
    type Out = bf16;
    type Plan = Bf16Plan;

    fn plan(_: usize, _: usize, _: usize) -> Bf16Plan {
        *bf16_plan()
    }

    unsafe fn serial(
        plan: &Bf16Plan,
        m: usize,
        n: usize,
        k: usize,
        dst: *mut bf16,
        dst_rs: isize,
        lhs: Strided<bf16>,
        rhs: Strided<bf16>,
        accumulate: bool,
    ) {
        // SAFETY: forwarded from the caller.
        if unsafe { without_products(plan, m, n, k, dst, dst_rs, accumulate, bf16::ZERO) } {
            return;
        }
        // SAFETY: row i of the m x n destination, for each i < m.
        let row = |i: usize| unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), n) };
        #[cfg(target_arch = "x86_64")]
        if m == 1 && lhs.cs == 1 && rhs.rs == 1 {
            // A row times columns that are contiguous in depth (`x W^T` at
            // batch 1): dot products, where packing `B` would cost as much
            // as the product.
            // SAFETY: the row and the n columns hold k values each; the CPU
            // runs the kernel, as checked.
            unsafe { x86::row_dots(k, lhs.ptr, rhs.ptr, rhs.cs, row(0), accumulate) };
            return;
        }
        if k.div_ceil(2) <= plan.kc && !accumulate {
            // One block of depth: each tile's sums are whole when the
            // kernel stores them, rounded to bf16 there.
            // SAFETY: forwarded from the caller.
            unsafe { blocked(plan, Job { m, n, k, dst: Dst::Bf16(dst), dst_rs, lhs, rhs, accumulate: false }) };
            return;
        }
        // Sums over several blocks (or added to `dst`) wait in f32.
        SCRATCH.with(|cell| {
            let mut words = cell.borrow_mut();
            let sums: *mut f32 = grow(&mut words, m * n);
            // SAFETY: `sums` holds m x n values.
            let all = unsafe { std::slice::from_raw_parts_mut(sums, m * n) };
            if accumulate {
                for (i, s) in all.chunks_exact_mut(n).enumerate() {
                    s.iter_mut().zip(row(i)).for_each(|(s, d)| *s = d.to_f32());
                }
            }
            // SAFETY: forwarded from the caller; `sums` is m x n, row-major.
            unsafe { blocked(plan, Job { m, n, k, dst: Dst::F32(sums), dst_rs: n as isize, lhs, rhs, accumulate }) };
            for (i, s) in all.chunks_exact(n).enumerate() {
                row(i).iter_mut().zip(s).for_each(|(d, &s)| *d = bf16::from_f32(s));
            }
        });
    }
}

/// An f32 operand rounded to bf16 for a product whose values stay f32:
/// what a product of f32 tensors runs under a bf16 precision policy
/// (`Composites::matmul_rounded`). The sums are the bf16 kernel's, stored
/// (or added) as f32 without a second rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub(crate) struct RoundedBf16(pub bf16);

impl RoundedBf16 {
    /// `x` to nearest even, as `bf16::from_f32`.
    #[inline(always)]
    pub(crate) fn of(x: f32) -> RoundedBf16 {
        RoundedBf16(bf16::from_f32(x))
    }
}

/// bf16 operands, f32 sums and result; as for `bf16`, [`Product::serial`]
/// needs a CPU with the kernel's instructions.
impl Product for RoundedBf16 {
    type Out = f32;
    type Plan = Bf16Plan;

    fn plan(_: usize, _: usize, _: usize) -> Bf16Plan {
        *bf16_plan()
    }

    unsafe fn serial(
        plan: &Bf16Plan,
        m: usize,
        n: usize,
        k: usize,
        dst: *mut f32,
        dst_rs: isize,
        lhs: Strided<RoundedBf16>,
        rhs: Strided<RoundedBf16>,
        accumulate: bool,
    ) {
        // SAFETY: forwarded from the caller.
        if unsafe { without_products(plan, m, n, k, dst, dst_rs, accumulate, 0.0) } {
            return;
        }
        // `RoundedBf16` is a transparent bf16.
        let lhs = Strided { ptr: lhs.ptr.cast::<bf16>(), rs: lhs.rs, cs: lhs.cs };
        let rhs = Strided { ptr: rhs.ptr.cast::<bf16>(), rs: rhs.rs, cs: rhs.cs };
        // SAFETY: forwarded from the caller; an f32 destination takes
        // sums over any number of depth blocks and added to it.
        unsafe { blocked(plan, Job { m, n, k, dst: Dst::F32(dst), dst_rs, lhs, rhs, accumulate }) };
    }
}

/// Checks that the CPU runs the plan's kernel, and does a product with
/// nothing to multiply: none into an empty destination, zeros (unless
/// accumulating) for an empty depth. Whether it was one.
///
/// # Safety
/// `dst` addresses a valid row-major `m x n` block with row stride `dst_rs`.
#[allow(clippy::too_many_arguments)]
unsafe fn without_products<T: Copy>(
    plan: &Bf16Plan,
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    accumulate: bool,
    zero: T,
) -> bool {
    assert!(plan.kernel.runs_here(), "a bf16 product on the {} kernel, which this CPU cannot run", plan.kernel.name());
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 && !accumulate {
        // SAFETY: row i of the m x n destination, for each i < m.
        (0..m).for_each(|i| unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), n) }.fill(zero));
    }
    k == 0
}

thread_local! {
    /// The f32 sums of products whose depth takes several blocks.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Where the kernel stores a tile's sums: f32, or bf16 rounded once (the
/// product's last sums; not added to).
#[derive(Clone, Copy)]
enum Dst {
    F32(*mut f32),
    Bf16(*mut bf16),
}

impl Dst {
    /// The destination from element `at` on.
    ///
    /// # Safety
    /// `at` lies inside it.
    unsafe fn add(self, at: isize) -> Dst {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self {
                Dst::F32(p) => Dst::F32(p.offset(at)),
                Dst::Bf16(p) => Dst::Bf16(p.offset(at)),
            }
        }
    }
}

/// One blocked product: `dst[m x n] (+)= lhs * rhs` (`+=` only to an
/// f32 destination), of a depth `k` of at least 1.
#[derive(Clone, Copy)]
struct Job {
    m: usize,
    n: usize,
    k: usize,
    dst: Dst,
    dst_rs: isize,
    lhs: Strided<bf16>,
    rhs: Strided<bf16>,
    accumulate: bool,
}

/// Runs `job` on the plan's kernel: AMX tiles (at any width: on the CPUs
/// that have them, a half-empty tile is still several times faster than
/// the dot product), or the dot product's narrow tile when `n` fits one
/// vector, else its wide one.
///
/// # Safety
/// As for [`Product::serial`]; a bf16 `dst` with `k` in one block of the
/// plan and no `accumulate`.
unsafe fn blocked(plan: &Bf16Plan, job: Job) {
    // SAFETY: forwarded from the caller; the plan's MC is a multiple of
    // both tiles' rows.
    unsafe {
        if plan.kernel == Bf16Kernel::Amx {
            amx::blocked(plan, job)
        } else if job.n <= 16 {
            blocked_with::<NARROW_ROWS, 1, 16>(plan, job)
        } else {
            blocked_with::<MR, 2, NR>(plan, job)
        }
    }
}

/// [`blocked`] on the tile of `R` rows by `V` vectors (`W = 16 V`
/// columns).
///
/// # Safety
/// As for [`blocked`].
unsafe fn blocked_with<const R: usize, const V: usize, const W: usize>(plan: &Bf16Plan, job: Job) {
    const { assert!(W == 16 * V) };
    let Job { m, n, k, dst, dst_rs, lhs, rhs, accumulate } = job;
    let Bf16Plan { kc: block_k, mc: block_m, nc: block_n, .. } = *plan;
    let pairs = k.div_ceil(2);
    PACKED.with(|cell| {
        let mut bufs = cell.borrow_mut();
        let (a_words, b_words) = &mut *bufs;
        let pa: *mut u32 = grow(a_words, block_m.min(m.next_multiple_of(R)) * block_k.min(pairs));
        let pb: *mut u32 = grow(b_words, block_k.min(pairs) * block_n.min(n).next_multiple_of(W));
        for jc in (0..n).step_by(block_n) {
            let nc = block_n.min(n - jc);
            for pc in (0..pairs).step_by(block_k) {
                let kp = block_k.min(pairs - pc);
                let depth = (2 * kp).min(k - 2 * pc);
                // SAFETY: the block lies in `rhs`; `pb` holds kp words for
                // each of nc columns rounded up to W.
                unsafe { pack::<W>(nc, depth, kp, rhs.at(2 * pc, jc).t(), pb) };
                let add = accumulate || pc > 0;
                // The kernel reads a word of `A` per row and pair, which a
                // row-major `A` holds as it is (an even depth keeps each
                // pair inside its row): only a partial panel at the bottom
                // edge, whose missing rows must read as zeros, is packed.
                let in_place_a = lhs.cs == 1 && depth % 2 == 0;
                for ic in (0..m).step_by(block_m) {
                    let mc = block_m.min(m - ic);
                    let whole = if in_place_a { mc / R * R } else { 0 };
                    // SAFETY: the block lies in `lhs`; `pa` holds kp words
                    // for each of mc rows rounded up to R.
                    unsafe { pack::<R>(mc - whole, depth, kp, lhs.at(ic + whole, 2 * pc), pa) };
                    for jr in (0..nc).step_by(W) {
                        for ir in (0..mc).step_by(R) {
                            // SAFETY: the panel of `A` (rows ic + ir.. in
                            // place, or packed: panel (ir - whole) / R of
                            // `pa`) and panel jr / W of `pb` hold kp pairs;
                            // the tile at (ic + ir, jc + jr) lies in `dst`.
                            unsafe {
                                let a = if ir < whole {
                                    let row_bytes = lhs.rs * size_of::<bf16>() as isize;
                                    Words { at: lhs.at(ic + ir, 2 * pc).ptr.cast(), row_bytes, pair_bytes: 4 }
                                } else {
                                    Words {
                                        at: pa.add((ir - whole) * kp).cast(),
                                        row_bytes: 4,
                                        pair_bytes: 4 * R as isize,
                                    }
                                };
                                let c = dst.add((ic + ir) as isize * dst_rs + (jc + jr) as isize);
                                let tile = Tile { dst: c, dst_rs, rows: R.min(mc - ir), cols: W.min(nc - jr), add };
                                tile_at::<R, V>(kp, a, pb.add(jr * kp), tile);
                            }
                        }
                    }
                }
            }
        }
    });
}

/// A panel of `A` as the kernel reads it: the word (pair of bf16) of row
/// `i` and pair `p` at `at + i row_bytes + p pair_bytes`, packed or in
/// place, not necessarily aligned.
#[derive(Clone, Copy)]
struct Words {
    at: *const u8,
    row_bytes: isize,
    pair_bytes: isize,
}

/// The kernel on one tile.
///
/// # Safety
/// As for `x86::tile`.
#[inline(always)]
unsafe fn tile_at<const R: usize, const V: usize>(kp: usize, a: Words, b: *const u32, tile: Tile) {
    // SAFETY: forwarded from the caller.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        x86::tile::<R, V>(kp, a, b, tile)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no bf16 kernel off x86-64 ({kp} pairs, {:?}, {b:?}, {} rows)", a.at, tile.rows)
}

/// Where a tile goes: `rows x cols` of it (the rest is padding), added to
/// what is there when `add`.
struct Tile {
    dst: Dst,
    dst_rs: isize,
    rows: usize,
    cols: usize,
    add: bool,
}

/// The word of a pair of bf16: the first in the low half, as the dot
/// product pairs them.
#[inline(always)]
fn word(lo: bf16, hi: bf16) -> u32 {
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
/// least `depth.div_ceil(2)`, for each of `count` rounded up to `W`.
unsafe fn pack<const W: usize>(count: usize, depth: usize, padded: usize, x: Strided<bf16>, out: *mut u32) {
    let (pairs, whole) = (depth.div_ceil(2), depth / 2);
    debug_assert!(padded >= pairs);
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
            let at: [*const bf16; W] = std::array::from_fn(|i| unsafe { x.at(l0 + i, 0) }.ptr);
            // Runs of 16 pairs of 16 lines at a time, transposed in
            // registers (the bf16 kernels' CPUs have AVX-512); the rest a
            // word at a time.
            #[cfg(target_arch = "x86_64")]
            let done = if W % 16 == 0 {
                let runs = whole / 16;
                for (r, q) in (0..runs).flat_map(|r| (0..W / 16).map(move |q| (r, q))) {
                    // SAFETY: pairs 16 r.. of lines 16 q.. lie inside; the
                    // run's 16 x W words lie in the panel.
                    unsafe {
                        x86::transpose_pairs(
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
                    *w = unsafe { line.add(2 * p).cast::<u32>().read_unaligned() };
                }
            }
            if whole < pairs {
                for (w, line) in panel[whole * W..].iter_mut().zip(at) {
                    // SAFETY: the line's last value, depth - 1 = 2 * whole.
                    *w = word(unsafe { *line.add(2 * whole) }, bf16::ZERO);
                }
            }
        } else if x.rs == 1 {
            // The lines contiguous at each depth (`B` as stored, `A` read
            // transposed): two runs interleaved a pair at a time, a loop
            // the compiler vectorises.
            #[cfg(target_arch = "x86_64")]
            if W == 32 && width == W {
                // SAFETY: the panel's lines at each depth hold W values;
                // the bf16 kernels' CPUs have AVX512-BW.
                unsafe { x86::interleave_pairs(depth, x.at(l0, 0), panel.as_mut_ptr()) };
                continue;
            }
            for (p, words) in panel.chunks_exact_mut(W).enumerate() {
                // SAFETY: depths 2p and 2p + 1 (when inside) of lines
                // l0..l0 + width.
                let (lo, hi) = unsafe {
                    let lo = std::slice::from_raw_parts(x.at(l0, 2 * p).ptr, width);
                    let hi = (2 * p + 1 < depth).then(|| std::slice::from_raw_parts(x.at(l0, 2 * p + 1).ptr, width));
                    (lo, hi)
                };
                match hi {
                    Some(hi) => words.iter_mut().zip(lo.iter().zip(hi)).for_each(|(w, (&l, &h))| *w = word(l, h)),
                    None => words.iter_mut().zip(lo).for_each(|(w, &l)| *w = word(l, bf16::ZERO)),
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
unsafe fn pack_pairs<'a>(depth: usize, x: Strided<bf16>, step: isize, out: impl Iterator<Item = &'a mut u32>) {
    let at = |d: usize| {
        // SAFETY: d < depth.
        unsafe { *x.ptr.offset(d as isize * step) }
    };
    for (p, w) in out.enumerate() {
        let d = 2 * p;
        *w = if d + 1 >= depth {
            word(at(d), bf16::ZERO)
        } else if step == 1 {
            // SAFETY: values d and d + 1 are contiguous and inside; the
            // word is read as the two bf16 are laid out (little-endian).
            unsafe { x.ptr.add(d).cast::<u32>().read_unaligned() }
        } else {
            word(at(d), at(d + 1))
        };
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::mem::transmute;

    use blaze_runtime::bf16;

    use super::{Dst, Tile, Words};
    use crate::gemm::Strided;

    /// 16 pairs of 16 lines, each line's depth contiguous: the words of
    /// pair `q` (values `from + 2q`, `+1` of each line) to `out + q
    /// stride`, line 0 first.
    ///
    /// # Safety
    /// Each line holds values `from .. from + 32`; `out` holds 16 runs of
    /// 16 words `stride` apart; the CPU has AVX-512.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn transpose_pairs(lines: &[*const bf16], from: usize, out: *mut u32, stride: usize) {
        debug_assert_eq!(lines.len(), 16);
        // SAFETY: as the caller vouches.
        unsafe {
            let mut v: [__m512i; 16] = std::array::from_fn(|i| _mm512_loadu_si512(lines[i].add(from).cast()));
            transpose_16x16(&mut v);
            for (q, row) in v.iter().enumerate() {
                _mm512_storeu_si512(out.add(q * stride).cast(), *row);
            }
        }
    }

    /// Transposes 16 vectors of 16 32-bit elements: element j of vector i
    /// becomes element i of vector j.
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

    /// A panel of 32 lines contiguous at each of `depth` steps (`x.cs`
    /// apart), as words of pairs: per pair, the two depths' values of each
    /// line interleaved, line 0 first (`vpermt2w`); the last pair of an
    /// odd depth with zeros in its high halves.
    ///
    /// # Safety
    /// `x` addresses 32 lines at each of `depth` steps; `out` holds
    /// `depth.div_ceil(2)` runs of 32 words; the CPU has AVX512-BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn interleave_pairs(depth: usize, x: Strided<bf16>, out: *mut u32) {
        debug_assert_eq!(x.rs, 1);
        // Word c of the low vector: line c of the first depth, then of the
        // second (index 32 + c); the high vector, lines 16 to 31.
        let low: [u16; 32] = std::array::from_fn(|e| (e / 2 + 32 * (e % 2)) as u16);
        let high: [u16; 32] = std::array::from_fn(|e| (16 + e / 2 + 32 * (e % 2)) as u16);
        // SAFETY (all): the loads read the 32 lines at depths d and d + 1
        // (a zero vector past the depth); the stores write pair p's 32
        // words.
        unsafe {
            let (low, high) = (_mm512_loadu_si512(low.as_ptr().cast()), _mm512_loadu_si512(high.as_ptr().cast()));
            for p in 0..depth.div_ceil(2) {
                let d = 2 * p;
                let first = _mm512_loadu_si512(x.ptr.offset(d as isize * x.cs).cast());
                let second = if d + 1 < depth {
                    _mm512_loadu_si512(x.ptr.offset((d + 1) as isize * x.cs).cast())
                } else {
                    _mm512_setzero_si512()
                };
                _mm512_storeu_si512(out.add(32 * p).cast(), _mm512_permutex2var_epi16(first, low, second));
                _mm512_storeu_si512(out.add(32 * p + 16).cast(), _mm512_permutex2var_epi16(first, high, second));
            }
        }
    }

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
        let last = |p: *const bf16| -> __m512bh {
            unsafe { transmute(_mm512_maskz_loadu_epi16(tail, p.add(32 * full).cast())) }
        };
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
}

#[cfg(test)]
mod tests {
    use blaze_runtime::bf16;

    use super::*;

    /// Values with a few bits of mantissa and both signs, as bf16.
    fn values(n: usize, seed: u64) -> Vec<bf16> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                bf16::from_f32(((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0)
            })
            .collect()
    }

    /// bf16 values from a 64-byte boundary.
    struct Lines(Vec<Line>);

    #[repr(C, align(64))]
    #[derive(Clone, Copy)]
    struct Line([bf16; 32]);

    impl Lines {
        fn of(values: &[bf16]) -> Lines {
            let mut lines = vec![Line([bf16::ZERO; 32]); values.len().div_ceil(32)];
            for (line, chunk) in lines.iter_mut().zip(values.chunks(32)) {
                line.0[..chunk.len()].copy_from_slice(chunk);
            }
            Lines(lines)
        }

        fn as_ptr(&self) -> *const bf16 {
            self.0.as_ptr().cast()
        }
    }

    impl std::ops::Index<usize> for Lines {
        type Output = bf16;

        fn index(&self, i: usize) -> &bf16 {
            &self.0[i / 32].0[i % 32]
        }
    }

    /// Every shape class (edges of the tile, odd depths, blocks split in
    /// depth, rows and columns: sums rounded in the kernel and through
    /// f32), operands row- and column-major, with and without
    /// accumulation, against sums in f64 of the same bf16, rounded.
    #[test]
    fn bf16_products_match_f64_sums() {
        if !bf16_kernel_runs_here() {
            eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 GEMM kernel is not tested here");
            return;
        }
        let kernels: Vec<Bf16Kernel> = Bf16Kernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
        if !kernels.contains(&Bf16Kernel::Amx) {
            eprintln!("notice: this CPU (or OS) lends no AMX tiles; the AMX bf16 kernel is not tested here");
        }
        let shapes = [
            (1, 1, 1),
            (4, 9, 0),
            (1, 40, 3),
            (1, 7, 100),
            (1, 70, 32),
            (20, 16, 9),
            (33, 11, 70),
            (3, 5, 7),
            (8, 32, 2),
            (9, 33, 3),
            (17, 70, 129),
            (40, 100, 65),
            (64, 64, 64),
            (70, 65, 97),
            // Rows read in place by AMX (whole tiles of depth), with a
            // ragged last panel of rows.
            (70, 40, 64),
            (96, 33, 128),
        ];
        // Each kernel with its own blocking and with blocks small enough
        // to split every shape in depth, rows and columns.
        let plans = kernels.iter().flat_map(|&kernel| {
            [Bf16Plan::for_kernel(kernel, cpu_info()), Bf16Plan { kernel, kc: 16, mc: 32, nc: 64 }]
        });
        for plan in plans {
            for &(m, n, k) in &shapes {
                for (a_t, b_t, add) in
                    [(false, false, false), (true, true, true), (false, true, false), (true, false, true)]
                {
                    // On cache lines, as tensors are, so that AMX reads
                    // a row-major `A` in place.
                    let (a, b) = (Lines::of(&values(m * k, 1)), values(k * n, 2));
                    // Row-major, or stored transposed and read through strides.
                    let (a_rs, a_cs) = if a_t { (1, m as isize) } else { (k as isize, 1) };
                    let (b_rs, b_cs) = if b_t { (1, k as isize) } else { (n as isize, 1) };
                    let at = |i: usize, p: usize| a[i * a_rs as usize + p * a_cs as usize].to_f64();
                    let bt = |p: usize, j: usize| b[p * b_rs as usize + j * b_cs as usize].to_f64();
                    let start: Vec<bf16> = (0..m * n).map(|i| bf16::from_f32((i % 7) as f32 - 3.0)).collect();
                    let mut got = start.clone();
                    // SAFETY: the blocks are m x k, k x n and m x n as
                    // addressed; the CPU runs the kernel (checked above).
                    unsafe {
                        let lhs = Strided { ptr: a.as_ptr(), rs: a_rs, cs: a_cs };
                        debug_assert_eq!(lhs.ptr as usize % 64, 0);
                        let rhs = Strided { ptr: b.as_ptr(), rs: b_rs, cs: b_cs };
                        bf16::serial(&plan, m, n, k, got.as_mut_ptr(), n as isize, lhs, rhs, add);
                    }
                    for i in 0..m {
                        for j in 0..n {
                            let base = if add { start[i * n + j].to_f64() } else { 0.0 };
                            let want = base + (0..k).map(|p| at(i, p) * bt(p, j)).sum::<f64>();
                            let scale = base.abs() + (0..k).map(|p| (at(i, p) * bt(p, j)).abs()).sum::<f64>();
                            let err = (got[i * n + j].to_f64() - want).abs();
                            // The f32 sums' error, then half a bf16 step.
                            assert!(
                                err <= 1e-6 * (k as f64 + 2.0) * scale + want.abs() / 256.0,
                                "{m}x{k} by {k}x{n} (A transposed {a_t}, B {b_t}, add {add}, {plan}) at ({i}, {j}): \
                                 {} against {want}",
                                got[i * n + j]
                            );
                        }
                    }
                }
            }
        }
    }
}
