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
mod pack;

pub use amx::amx_runs_here;
pub(crate) use amx::{Tiles, request_tiles};
pub(crate) use pack::RoundsToBf16;
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
        // `RoundedBf16` is a transparent bf16.
        let lhs = Strided { ptr: lhs.ptr.cast::<bf16>(), rs: lhs.rs, cs: lhs.cs };
        let rhs = Strided { ptr: rhs.ptr.cast::<bf16>(), rs: rhs.rs, cs: rhs.cs };
        // SAFETY: forwarded from the caller.
        unsafe { f32_sums(plan, Job { m, n, k, dst: Dst::F32(dst), dst_rs, lhs, rhs, accumulate }) };
    }
}

/// f32 operands rounded to bf16 as they are packed, f32 sums and result;
/// as for `bf16`, [`Product::serial`] needs a CPU with the kernel's
/// instructions.
impl Product for RoundsToBf16 {
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
        lhs: Strided<RoundsToBf16>,
        rhs: Strided<RoundsToBf16>,
        accumulate: bool,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { f32_sums(plan, Job { m, n, k, dst: Dst::F32(dst), dst_rs, lhs, rhs, accumulate }) };
    }
}

/// A product into an f32 destination, which takes sums over any number
/// of depth blocks and added to it.
///
/// # Safety
/// As for [`Product::serial`], with `job.dst` f32.
unsafe fn f32_sums<S: Source>(plan: &Bf16Plan, job: Job<S>) {
    let Job { m, n, k, dst, dst_rs, accumulate, .. } = job;
    let Dst::F32(at) = dst else { unreachable!("f32 sums go to an f32 destination") };
    // SAFETY: forwarded from the caller.
    unsafe {
        if !without_products(plan, m, n, k, at, dst_rs, accumulate, 0.0) {
            blocked(plan, job)
        }
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
                    // SAFETY: the block lies in `lhs`; `pa` holds kp words
                    // for each of mc rows rounded up to R.
                    unsafe { pack::<S, R>(mc - whole, depth, kp, lhs.at(ic + whole, 2 * pc), pa) };
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
mod x86 {
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

    /// f32 values with both signs and all 24 bits of mantissa random.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0
            })
            .collect()
    }

    /// Values from a 64-byte boundary, as tensors' are (so that AMX reads
    /// a row-major bf16 `A` in place).
    struct Lines<T> {
        lines: Vec<Line>,
        of: std::marker::PhantomData<T>,
    }

    #[repr(C, align(64))]
    #[derive(Clone, Copy)]
    struct Line([u8; 64]);

    impl<T: Copy> Lines<T> {
        fn of(values: impl ExactSizeIterator<Item = T>) -> Lines<T> {
            let mut lines = Lines {
                lines: vec![Line([0; 64]); (values.len() * size_of::<T>()).div_ceil(64)],
                of: Default::default(),
            };
            let at = lines.lines.as_mut_ptr().cast::<T>();
            // SAFETY: the lines hold `values.len()` values of `T`.
            values.enumerate().for_each(|(i, v)| unsafe { at.add(i).write(v) });
            lines
        }

        fn as_ptr(&self) -> *const T {
            self.lines.as_ptr().cast()
        }

        fn at(&self, i: usize) -> T {
            assert!((i + 1) * size_of::<T>() <= 64 * self.lines.len());
            // SAFETY: value i lies in the lines (checked).
            unsafe { self.as_ptr().add(i).read() }
        }
    }

    /// Every shape class (edges of the tile, odd depths, blocks split in
    /// depth, rows and columns), operands row- and column-major, with and
    /// without accumulation, on each kernel this CPU runs with its own
    /// blocking and with blocks small enough to split every shape:
    /// `check(plan, m, n, k, a_t, b_t, add)`.
    fn for_each_case(check: impl Fn(&Bf16Plan, usize, usize, usize, bool, bool, bool)) {
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
        let plans = kernels.iter().flat_map(|&kernel| {
            [Bf16Plan::for_kernel(kernel, cpu_info()), Bf16Plan { kernel, kc: 16, mc: 32, nc: 64 }]
        });
        for plan in plans {
            for &(m, n, k) in &shapes {
                for (a_t, b_t, add) in
                    [(false, false, false), (true, true, true), (false, true, false), (true, false, true)]
                {
                    check(&plan, m, n, k, a_t, b_t, add);
                }
            }
        }
    }

    /// The strides of an `r x c` operand: row-major, or stored transposed.
    fn strides(r: usize, c: usize, t: bool) -> (isize, isize) {
        if t { (1, r as isize) } else { (c as isize, 1) }
    }

    /// bf16 operands and result, against sums in f64 of the same bf16,
    /// rounded.
    #[test]
    fn bf16_products_match_f64_sums() {
        if !bf16_kernel_runs_here() {
            eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 GEMM kernel is not tested here");
            return;
        }
        for_each_case(|plan, m, n, k, a_t, b_t, add| {
            let a = Lines::of(values(m * k, 1).into_iter().map(bf16::from_f32));
            let b = Lines::of(values(k * n, 2).into_iter().map(bf16::from_f32));
            let ((a_rs, a_cs), (b_rs, b_cs)) = (strides(m, k, a_t), strides(k, n, b_t));
            let at = |i: usize, p: usize| a.at(i * a_rs as usize + p * a_cs as usize).to_f64();
            let bt = |p: usize, j: usize| b.at(p * b_rs as usize + j * b_cs as usize).to_f64();
            let start: Vec<bf16> = (0..m * n).map(|i| bf16::from_f32((i % 7) as f32 - 3.0)).collect();
            let mut got = start.clone();
            // SAFETY: the blocks are m x k, k x n and m x n as addressed;
            // the CPU runs the kernel.
            unsafe {
                let lhs = Strided { ptr: a.as_ptr(), rs: a_rs, cs: a_cs };
                let rhs = Strided { ptr: b.as_ptr(), rs: b_rs, cs: b_cs };
                bf16::serial(plan, m, n, k, got.as_mut_ptr(), n as isize, lhs, rhs, add);
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
        });
    }

    /// f32 operands rounded as they are packed, f32 sums and result,
    /// against sums in f64 of the operands rounded by `bf16::from_f32`;
    /// and far from the sums of the unrounded operands.
    #[test]
    fn f32_products_round_to_bf16_as_they_pack() {
        if !bf16_kernel_runs_here() {
            eprintln!("notice: this CPU lacks AVX512-BF16; the bf16 GEMM kernel is not tested here");
            return;
        }
        let rounded_apart = std::cell::Cell::new(0);
        for_each_case(|plan, m, n, k, a_t, b_t, add| {
            let a = Lines::of(values(m * k, 3).into_iter().map(RoundsToBf16));
            let b = Lines::of(values(k * n, 4).into_iter().map(RoundsToBf16));
            let ((a_rs, a_cs), (b_rs, b_cs)) = (strides(m, k, a_t), strides(k, n, b_t));
            let at = |i: usize, p: usize| a.at(i * a_rs as usize + p * a_cs as usize).0;
            let bt = |p: usize, j: usize| b.at(p * b_rs as usize + j * b_cs as usize).0;
            let round = |x: f32| f64::from(bf16::from_f32(x).to_f32());
            let start: Vec<f32> = (0..m * n).map(|i| (i % 7) as f32 - 3.0).collect();
            let mut got = start.clone();
            // SAFETY: as in `bf16_products_match_f64_sums`.
            unsafe {
                let lhs = Strided { ptr: a.as_ptr(), rs: a_rs, cs: a_cs };
                let rhs = Strided { ptr: b.as_ptr(), rs: b_rs, cs: b_cs };
                RoundsToBf16::serial(plan, m, n, k, got.as_mut_ptr(), n as isize, lhs, rhs, add);
            }
            for i in 0..m {
                for j in 0..n {
                    let base = if add { f64::from(start[i * n + j]) } else { 0.0 };
                    let product = |p: usize| round(at(i, p)) * round(bt(p, j));
                    let want = base + (0..k).map(product).sum::<f64>();
                    let scale = base.abs() + (0..k).map(|p| product(p).abs()).sum::<f64>();
                    let err = (f64::from(got[i * n + j]) - want).abs();
                    assert!(
                        err <= 1e-6 * (k as f64 + 2.0) * scale,
                        "{m}x{k} by {k}x{n} (A transposed {a_t}, B {b_t}, add {add}, {plan}) at ({i}, {j}): \
                         {} against {want}",
                        got[i * n + j]
                    );
                    let exact = base + (0..k).map(|p| f64::from(at(i, p)) * f64::from(bt(p, j))).sum::<f64>();
                    if (f64::from(got[i * n + j]) - exact).abs() > 1e-4 * scale {
                        rounded_apart.set(rounded_apart.get() + 1);
                    }
                }
            }
        });
        assert!(rounded_apart.get() > 1000, "the operands were not rounded: {} sums moved", rounded_apart.get());
    }
}
