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
use crate::product::Product;
use crate::scratch::grow;

mod amx;
mod pack;

pub use amx::amx_runs_here;
pub(crate) use amx::{Tiles, request_tiles};
pub use pack::RoundsToBf16;
use pack::{Source, pack};

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

/// An f32 operand rounded to bf16 in a pass of its own, for a product
/// whose values stay f32: what a convolution of f32 tensors runs under a
/// bf16 precision policy (`Composites::conv2d_rounded` and its
/// gradients), whose windows are copied from the rounded image. Products
/// round their operands as they pack them instead ([`RoundsToBf16`]).
/// The sums are the bf16 kernel's, stored (or added) as f32 without a
/// second rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct RoundedBf16(pub bf16);

impl RoundedBf16 {
    /// `x` to nearest even, as `bf16::from_f32`.
    #[inline(always)]
    pub fn of(x: f32) -> RoundedBf16 {
        RoundedBf16(bf16::from_f32(x))
    }
}

/// `Product` for the operands of a product whose values stay f32 (bf16
/// rounded in a pass first, or f32 rounded as the packers read them):
/// f32 sums and result; as for `bf16`, [`Product::serial`] needs a CPU
/// with the kernel's instructions.
macro_rules! f32_result {
    ($($operand:ty),*) => {$(
        impl Product for $operand {
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
                lhs: Strided<$operand>,
                rhs: Strided<$operand>,
                accumulate: bool,
            ) {
                // SAFETY: forwarded from the caller; an f32 destination
                // takes sums over any number of depth blocks and added to it.
                unsafe {
                    if !without_products(plan, m, n, k, dst, dst_rs, accumulate, 0.0) {
                        blocked(plan, Job { m, n, k, dst: Dst::F32(dst), dst_rs, lhs, rhs, accumulate })
                    }
                }
            }
        }
    )*};
}

f32_result!(RoundedBf16, RoundsToBf16);

// SAFETY: `RoundsToBf16` is a transparent f32.
unsafe impl crate::product::Reads<f32> for RoundsToBf16 {}

// SAFETY: a transparent bf16, whose every bit pattern is a float.
unsafe impl crate::scratch::AnyBits for RoundedBf16 {}

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
struct Job<S> {
    m: usize,
    n: usize,
    k: usize,
    dst: Dst,
    dst_rs: isize,
    lhs: Strided<S>,
    rhs: Strided<S>,
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
unsafe fn blocked<S: Source>(plan: &Bf16Plan, job: Job<S>) {
    // SAFETY: forwarded from the caller; the plan's MC is a multiple of
    // both tiles' rows.
    unsafe {
        if plan.kernel == Bf16Kernel::Amx {
            amx::blocked(plan, job)
        } else if job.n <= 16 {
            blocked_with::<S, NARROW_ROWS, 1, 16>(plan, job)
        } else {
            blocked_with::<S, MR, 2, NR>(plan, job)
        }
    }
}

/// [`blocked`] on the tile of `R` rows by `V` vectors (`W = 16 V`
/// columns).
///
/// # Safety
/// As for [`blocked`].
unsafe fn blocked_with<S: Source, const R: usize, const V: usize, const W: usize>(plan: &Bf16Plan, job: Job<S>) {
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
                unsafe { pack::<S, W>(nc, depth, kp, rhs.at(2 * pc, jc).t(), pb) };
                let add = accumulate || pc > 0;
                // The kernel reads a word of `A` per row and pair, which a
                // row-major `A` holds as it is (an even depth keeps each
                // pair inside its row): only a partial panel at the bottom
                // edge, whose missing rows must read as zeros, is packed.
                let in_place_a = S::IN_PLACE && lhs.cs == 1 && depth % 2 == 0;
                for ic in (0..m).step_by(block_m) {
                    let mc = block_m.min(m - ic);
                    let whole = if in_place_a { mc / R * R } else { 0 };
                    if whole < mc {
                        // SAFETY: the rows lie in `lhs`; `pa` holds kp
                        // words for each of them rounded up to R.
                        unsafe { pack::<S, R>(mc - whole, depth, kp, lhs.at(ic + whole, 2 * pc), pa) };
                    }
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

#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;
