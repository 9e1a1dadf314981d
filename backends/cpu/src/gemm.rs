//! Single-threaded packed GEMM, `C = A B` or `C += A B`, for strided `A`
//! and `B` and a row-major `C`, after Goto and van de Geijn: `B` is packed
//! in `KC x NC` blocks of `NR`-column panels, and a register-blocked
//! `MR x NR` kernel walks them against `MR`-row panels of `A`. `A` is read
//! in place when it is row- or column-major (packed otherwise), and `B`
//! too when its rows are contiguous and few rows would reuse a packed panel.
//!
//! The packing buffers are thread-local and only grow, so once a thread has
//! multiplied at a size it multiplies at that size without allocating: the
//! zero-allocation training step depends on it (a general-purpose GEMM
//! crate allocates its packing buffers on every call). The kernel holds its
//! tile in vector registers through explicit AVX-512 or AVX2 intrinsics, in
//! a `#[target_feature]` function per ISA; a portable scalar kernel serves
//! other CPUs. Which kernel, and the block sizes, are chosen once per
//! process for the CPU at hand ([`gemm_plan`]): its ISA, maker, measured
//! FMA ports and cache sizes.

use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;

use crate::cpuinfo::{CpuInfo, Vendor, cpu_info};
use crate::matmul::Product;
use crate::pool::grow;
use crate::simd::Isa;
use crate::storage::{Float, Num};

/// A register kernel: an ISA and the tile of `C` it keeps in registers
/// (rows by columns of f32; f64 tiles have half the columns). Products of
/// at most one vector of columns (`n` up to 16 f32 under AVX-512) run a
/// narrow companion of the same ISA, one vector wide and taller, instead
/// of leaving half of each tile empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmKernel {
    /// AVX-512, 12 rows by two vectors: 24 accumulators, for cores that
    /// start two 512-bit FMAs a cycle and need the longer independent
    /// chains (Intel servers with two FMA ports, AMD Zen 5).
    Avx512x12,
    /// AVX-512, 8 rows by two vectors: 16 accumulators, for cores that
    /// start one 512-bit FMA a cycle (AMD Zen 4, Intel cores with one FMA
    /// port). Narrow companion: 16 rows by one vector.
    Avx512x8,
    /// AVX2 and FMA, 6 rows by two 256-bit vectors: 12 of the 16
    /// registers. Narrow companion: 12 rows by one vector.
    Avx2x6,
    /// Portable scalar code, 4 by 4, for CPUs without AVX2.
    Scalar,
}

impl GemmKernel {
    /// Every kernel, fastest ISA first.
    pub const ALL: [GemmKernel; 4] =
        [GemmKernel::Avx512x12, GemmKernel::Avx512x8, GemmKernel::Avx2x6, GemmKernel::Scalar];

    /// The name `BLAZE_GEMM_KERNEL` takes (tile in f32).
    pub fn name(self) -> &'static str {
        match self {
            GemmKernel::Avx512x12 => "avx512-12x32",
            GemmKernel::Avx512x8 => "avx512-8x32",
            GemmKernel::Avx2x6 => "avx2-6x16",
            GemmKernel::Scalar => "scalar-4x4",
        }
    }

    /// The ISA the kernel is compiled for.
    pub fn isa(self) -> Isa {
        match self {
            GemmKernel::Avx512x12 | GemmKernel::Avx512x8 => Isa::V4,
            GemmKernel::Avx2x6 => Isa::V3,
            GemmKernel::Scalar => Isa::Base,
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn runs_here(self) -> bool {
        self.isa().runs_here()
    }

    /// Rows of the wide tile and of the narrow one: a block of rows of `A`
    /// (`MC`) is a multiple of both.
    fn rows(self) -> (usize, usize) {
        match self {
            GemmKernel::Avx512x12 => (12, NARROW_ROWS_512),
            GemmKernel::Avx512x8 => (8, NARROW_ROWS_512),
            GemmKernel::Avx2x6 => (ROWS_256, NARROW_ROWS_256),
            GemmKernel::Scalar => (4, 4),
        }
    }

    /// What a block of rows of `A` (`MC`) is a multiple of: both tiles'
    /// rows.
    pub(crate) fn row_step(self) -> usize {
        let (wide, narrow) = self.rows();
        lcm(wide, narrow)
    }

    /// Bytes of one row of the wide tile (f32 and f64 alike).
    fn row_bytes(self) -> usize {
        match self {
            GemmKernel::Avx512x12 | GemmKernel::Avx512x8 => 128,
            GemmKernel::Avx2x6 => 64,
            GemmKernel::Scalar => 16,
        }
    }
}

/// Rows of the AVX-512 narrow tile (16 accumulators), of the AVX2 wide
/// tile and of the AVX2 narrow one (12 accumulators each).
const NARROW_ROWS_512: usize = 16;
const ROWS_256: usize = 6;
const NARROW_ROWS_256: usize = 12;

impl std::str::FromStr for GemmKernel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        GemmKernel::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = GemmKernel::ALL.iter().map(|k| k.name()).collect();
            format!("unknown GEMM kernel `{s}`: expected one of {}", names.join(", "))
        })
    }
}

/// How the GEMM runs on this CPU: the register kernel and the blocking,
/// derived once from the CPU's model and cache sizes ([`gemm_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    /// The register kernel.
    pub kernel: GemmKernel,
    /// Depth of a packed block: `KC` steps of one tile-row panel of `B`
    /// fill the level-1 data cache.
    pub kc: usize,
    /// Rows of a block of `A`: `MC x KC` f32 of it take a quarter of the
    /// level-2 cache. A multiple of both tiles' rows.
    pub mc: usize,
    /// Columns of a packed block of `B`: `KC x NC` f32 of it take a 16th
    /// of the last-level cache, which every core's block shares.
    pub nc: usize,
    /// Why this kernel: the rule that chose it.
    pub reason: &'static str,
}

impl GemmPlan {
    /// The plan for `kernel` on a CPU with these caches.
    pub fn for_kernel(kernel: GemmKernel, info: &CpuInfo, reason: &'static str) -> GemmPlan {
        let step = kernel.row_step();
        let kc = (info.l1d / kernel.row_bytes() / 16 * 16).clamp(128, 512);
        let mc = ((info.l2 / 4 / (kc * 4)).clamp(48, 512) / step * step).max(step);
        let nc = (info.l3 / 16 / (kc * 4) / MAX_NR * MAX_NR).clamp(512, 4096);
        GemmPlan { kernel, kc, mc, nc, reason }
    }
}

impl fmt::Display for GemmPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let GemmPlan { kernel, kc, mc, nc, reason } = self;
        write!(f, "{} kernel ({reason}), KC {kc}, MC {mc}, NC {nc}", kernel.name())
    }
}

fn lcm(a: usize, b: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

/// The plan every product on this CPU runs with, chosen once:
/// `BLAZE_GEMM_KERNEL` (a [`GemmKernel::name`]) when set, else by the
/// CPU's ISA, maker and FMA ports.
///
/// # Panics
/// If `BLAZE_GEMM_KERNEL` names no kernel or one this CPU cannot run.
pub fn gemm_plan() -> &'static GemmPlan {
    static PLAN: OnceLock<GemmPlan> = OnceLock::new();
    PLAN.get_or_init(|| {
        let info = cpu_info();
        if let Ok(name) = std::env::var("BLAZE_GEMM_KERNEL") {
            let kernel: GemmKernel = name.parse().unwrap_or_else(|e| panic!("BLAZE_GEMM_KERNEL: {e}"));
            assert!(
                kernel.runs_here(),
                "BLAZE_GEMM_KERNEL={name}: this CPU lacks its instructions ({:?})",
                kernel.isa()
            );
            return GemmPlan::for_kernel(kernel, info, "set by BLAZE_GEMM_KERNEL");
        }
        let (kernel, reason) = choose_kernel(info);
        GemmPlan::for_kernel(kernel, info, reason)
    })
}

/// The kernel for a CPU, and why.
fn choose_kernel(info: &CpuInfo) -> (GemmKernel, &'static str) {
    if !Isa::V3.runs_here() {
        return (GemmKernel::Scalar, "no AVX2");
    }
    if !Isa::V4.runs_here() {
        return (GemmKernel::Avx2x6, "AVX2 without AVX-512");
    }
    match info.vendor {
        // Zen 4 (family 0x19) splits a 512-bit FMA into two 256-bit halves;
        // Zen 5 (0x1A) has full-width units, two of them.
        Vendor::Amd if info.family >= 0x1A => (GemmKernel::Avx512x12, "AMD Zen 5 or later: two 512-bit FMA units"),
        Vendor::Amd => (GemmKernel::Avx512x8, "AMD Zen 4: one 512-bit FMA a cycle"),
        _ => match crate::cpuinfo::fma_ports_512() {
            2 => (GemmKernel::Avx512x12, "two 512-bit FMA ports, measured"),
            _ => (GemmKernel::Avx512x8, "one 512-bit FMA port, measured"),
        },
    }
}

/// Whether a product of `m` rows under the 12-row AVX-512 plan runs in
/// 8-row tiles instead (see [`Product::serial`] for f32 and f64).
fn prefers_8_rows(m: usize) -> bool {
    let (by8, by12) = (m.next_multiple_of(8), m.next_multiple_of(12));
    by8 < by12 && (by12 - m) * 50 >= by12
}

thread_local! {
    /// Packed `A` and `B` blocks, in `u64` words so both f32 and f64 fit aligned.
    static PACKED: RefCell<(Vec<u64>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A strided operand: element `(i, j)` is at `ptr + i * rs + j * cs`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<T> {
    pub ptr: *const T,
    pub rs: isize,
    pub cs: isize,
}

// SAFETY: a `Strided` only reads, and whoever builds one vouches that the
// values live and stay unchanged while any thread reads them.
unsafe impl<T: Sync> Send for Strided<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Strided<T> {}

impl<T> Strided<T> {
    /// The operand from element `(i, j)` on.
    ///
    /// # Safety
    /// `(i, j)` must lie inside the operand.
    #[inline(always)]
    pub(crate) unsafe fn at(self, i: usize, j: usize) -> Self {
        // SAFETY: forwarded from the caller.
        Strided { ptr: unsafe { self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }, ..self }
    }

    /// The transposed operand: element `(i, j)` is this one's `(j, i)`.
    #[inline(always)]
    pub(crate) fn t(self) -> Self {
        Strided { rs: self.cs, cs: self.rs, ..self }
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// As for [`Strided::at`].
    #[inline(always)]
    unsafe fn get(self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        // SAFETY: forwarded from the caller.
        unsafe { *self.ptr.offset(i as isize * self.rs + j as isize * self.cs) }
    }
}

/// Element types with a packed GEMM: f32 and f64, each with its kernel
/// shapes per ISA. A product's plan is [`crate::gemm_tune::plan_for`]'s
/// (measured, else [`gemm_plan`]); [`Product::serial`] runs it, on a CPU
/// that runs the plan's kernel ([`GemmKernel::runs_here`]).
pub(crate) trait GemmFloat: Float + Product<Out = Self, Plan = GemmPlan> {}

/// Implements [`Product`] with the kernels of [`GemmKernel`] for a float
/// type and its 512- and 256-bit registers.
macro_rules! gemm_float {
    ($t:ty, $v512:ty, $v256:ty) => {
        impl GemmFloat for $t {}

        impl Product for $t {
            type Out = $t;
            type Plan = GemmPlan;

            fn plan(m: usize, n: usize, k: usize) -> GemmPlan {
                crate::gemm_tune::plan_for::<$t>(m, n, k)
            }

            unsafe fn serial(
                plan: &GemmPlan,
                m: usize,
                n: usize,
                k: usize,
                dst: *mut $t,
                dst_rs: isize,
                lhs: Strided<$t>,
                rhs: Strided<$t>,
                accumulate: bool,
            ) {
                // The products compiled for each ISA. Kernels are called
                // straight from these, not through a closure: the
                // intrinsics only inline into a function with their ISA.
                // A product of at most one vector of columns takes the
                // narrow tile.
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn v4<const MR: usize>(g: &Gemm<$t>, pa: *mut $t, pb: *mut $t) {
                    // SAFETY: forwarded from the caller.
                    unsafe {
                        if g.n <= <$v512 as Lanes>::W {
                            run::<$t, Simd<$v512, NARROW_ROWS_512, 1>>(g, pa, pb)
                        } else {
                            run::<$t, Simd<$v512, MR, 2>>(g, pa, pb)
                        }
                    }
                }
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v3(g: &Gemm<$t>, pa: *mut $t, pb: *mut $t) {
                    // SAFETY: forwarded from the caller.
                    unsafe {
                        if g.n <= <$v256 as Lanes>::W {
                            run::<$t, Simd<$v256, NARROW_ROWS_256, 1>>(g, pa, pb)
                        } else {
                            run::<$t, Simd<$v256, ROWS_256, 2>>(g, pa, pb)
                        }
                    }
                }

                let GemmPlan { kernel, kc, mc, nc, .. } = *plan;
                let g = Gemm { m, n, k, dst, dst_rs, lhs, rhs, accumulate, kc, mc, nc };
                PACKED.with(|cell| {
                    let mut bufs = cell.borrow_mut();
                    let (a_words, b_words) = &mut *bufs;
                    let pa: *mut $t = grow(a_words, mc * kc.min(k));
                    let pb: *mut $t = grow(b_words, kc.min(k) * n.min(nc).next_multiple_of(MAX_NR));
                    // SAFETY: forwarded from the caller, who vouches that
                    // the CPU runs the kernel.
                    unsafe {
                        match kernel {
                            // The 8-row tile where it leaves fewer rows
                            // empty and the 12-row tiles would leave one
                            // row in 50 or more: a part-filled tile pays a
                            // packed edge panel and spilled sums, which a
                            // product of a few tiles feels (attention's 64
                            // or 128 rows ran 1.1-1.2x faster in 8-row
                            // tiles on a Xeon); on many tiles the 12-row
                            // one's reuse of `B` wins by a little. Every
                            // tile sums each element in the same order,
                            // so the bits do not change.
                            #[cfg(target_arch = "x86_64")]
                            GemmKernel::Avx512x12 if prefers_8_rows(m) => v4::<8>(&g, pa, pb),
                            #[cfg(target_arch = "x86_64")]
                            GemmKernel::Avx512x12 => v4::<12>(&g, pa, pb),
                            #[cfg(target_arch = "x86_64")]
                            GemmKernel::Avx512x8 => v4::<8>(&g, pa, pb),
                            #[cfg(target_arch = "x86_64")]
                            GemmKernel::Avx2x6 => v3(&g, pa, pb),
                            _ => run::<$t, Scalar<$t>>(&g, pa, pb),
                        }
                    }
                });
            }
        }
    };
}
gemm_float!(f32, x86::F32x16, x86::F32x8);
gemm_float!(f64, x86::F64x8, x86::F64x4);

/// The widest kernel's `NR`, which the `B` buffer is sized for.
pub(crate) const MAX_NR: usize = 32;

/// One product's arguments.
#[derive(Clone, Copy)]
struct Gemm<T> {
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    dst_rs: isize,
    lhs: Strided<T>,
    rhs: Strided<T>,
    accumulate: bool,
    /// The plan's blocking.
    kc: usize,
    mc: usize,
    nc: usize,
}

/// The blocked product with `MR x NR` kernels (`FMA`: fused multiply-add).
///
/// # Safety
/// As for [`Product::serial`]; the CPU runs the ISA the caller
/// compiled this for, `pa` holds `mc x kc` values and `pb` `kc x nc`, both
/// cut down to `k` and `n` rounded up to `MAX_NR`; `mc` is a multiple of
/// `MR`, `nc` of `NR`.
#[inline(always)]
unsafe fn run<T: Float, K: Micro<T>>(g: &Gemm<T>, pa: *mut T, pb: *mut T) {
    const { assert!(K::NR <= MAX_NR) };
    let (mr, nr) = (K::MR, K::NR);
    let Gemm { m, n, k, dst, dst_rs, lhs, rhs, accumulate, kc: block_k, mc: block_m, nc: block_n } = *g;
    debug_assert!(block_m.is_multiple_of(mr) && block_n.is_multiple_of(nr));
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                // SAFETY: row i of the m x n destination.
                unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), n).fill(T::ZERO) };
            }
        }
        return;
    }
    if m == 1 {
        // A vector times a matrix: packing would cost as much as the product.
        // SAFETY: forwarded from the caller.
        unsafe { row_times::<T, K>(n, k, dst, lhs, rhs, accumulate) };
        return;
    }
    if k == 1 && rhs.cs == 1 {
        // A column times a row (a batch-1 weight gradient): each row of
        // `dst` is `B`'s row scaled, one pass at the speed of the stores,
        // where tiles would each pay their setup for a single step. The
        // same roundings as a tile: the product, then its addition.
        // SAFETY: `B`'s one row holds n contiguous values; row i of `dst`
        // and element (i, 0) of `A` lie in the blocks the caller vouches for.
        let b = unsafe { std::slice::from_raw_parts(rhs.ptr, n) };
        for i in 0..m {
            let (a, row) =
                unsafe { (*lhs.at(i, 0).ptr, std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), n)) };
            if accumulate {
                row.iter_mut().zip(b).for_each(|(d, &b)| *d += a * b);
            } else {
                row.iter_mut().zip(b).for_each(|(d, &b)| *d = a * b);
            }
        }
        return;
    }
    // With few rows each panel of `B` serves few tiles, and packing it
    // would cost about what the kernel does; rows of `B` that are
    // contiguous are read in place then (the im2col products of a conv),
    // and so is a `B` exactly one panel wide, which its packing would
    // only copy (attention's `p v` with heads of 16 or 32).
    let in_place_b = rhs.cs == 1 && (m <= IN_PLACE_B_ROWS || rhs.rs == nr as isize);
    // The kernel reads `A` through its strides, so a row- or column-major
    // `A` is read in place; only a partial panel at the bottom edge (whose
    // missing rows must read as zeros) is packed. Any other layout is
    // packed whole, and so is one whose lines the kernel reads together
    // (a row-major panel's rows, a column-major one's steps) lie a
    // multiple of 4 KiB apart: an x86 L1 picks a line's set from its
    // offset within the 4 KiB page, so all of them would share one set
    // and evict each other on every pass (a weight gradient `g^T x` of
    // 1024 outputs read `A` at 0.6x the speed of packing it, on a Xeon).
    let far = if lhs.cs == 1 { lhs.rs } else { lhs.cs };
    let aliased = (far.unsigned_abs() * std::mem::size_of::<T>()).is_multiple_of(4096);
    let in_place_a = (lhs.cs == 1 || lhs.rs == 1) && !aliased;
    for jc in (0..n).step_by(block_n) {
        let nc = block_n.min(n - jc);
        for pc in (0..k).step_by(block_k) {
            let kc = block_k.min(k - pc);
            if !in_place_b {
                // SAFETY: the block lies in `rhs`; `pb` holds kc x nc rounded up to NR.
                unsafe { K::pack(nr, nc, kc, rhs.at(pc, jc).t(), pb) };
            }
            let add = accumulate || pc > 0;
            for ic in (0..m).step_by(block_m) {
                let mc = block_m.min(m - ic);
                let whole = mc / mr * mr;
                // SAFETY: the block lies in `lhs`; `pa` holds block_m x kc.
                unsafe {
                    if !in_place_a {
                        K::pack(mr, mc, kc, lhs.at(ic, pc), pa);
                    } else if whole < mc {
                        K::pack(mr, mc - whole, kc, lhs.at(ic + whole, pc), pa);
                    }
                }
                for jr in (0..nc).step_by(nr) {
                    let cols = nr.min(nc - jr);
                    // The panel of `B` and its stride between steps.
                    let (b, b_rs) = if !in_place_b {
                        // SAFETY: panel jr / NR of the packed block.
                        (unsafe { pb.add(jr * kc) }.cast_const(), nr)
                    } else if cols == nr {
                        // SAFETY: (pc, jc + jr) lies in `rhs`, NR columns from it too.
                        (unsafe { rhs.at(pc, jc + jr) }.ptr, rhs.rs as usize)
                    } else {
                        // The last, partial panel is packed: reading NR
                        // values from its rows would run past them.
                        // SAFETY: the block lies in `rhs`; `pb` holds kc x NR.
                        unsafe { K::pack(nr, cols, kc, rhs.at(pc, jc + jr).t(), pb) };
                        (pb.cast_const(), nr)
                    };
                    for ir in (0..mc).step_by(mr) {
                        // SAFETY: the panel of `A` (packed: panel ir / MR
                        // of `pa`, or the edge panel at its start) holds kc
                        // steps of MR rows, as does the panel of `B`; the
                        // tile at (ic + ir, jc + jr) lies in `dst`.
                        unsafe {
                            let a = if !in_place_a {
                                Strided { ptr: pa.add(ir * kc).cast_const(), rs: 1, cs: mr as isize }
                            } else if ir < whole {
                                lhs.at(ic + ir, pc)
                            } else {
                                Strided { ptr: pa.cast_const(), rs: 1, cs: mr as isize }
                            };
                            let c = dst.offset((ic + ir) as isize * dst_rs + (jc + jr) as isize);
                            let tile = Tile { dst: c, dst_rs, rows: mr.min(mc - ir), cols, add };
                            K::tile(kc, a, b, b_rs, tile);
                        }
                    }
                }
            }
        }
    }
}

/// Products with at most this many rows read contiguous rows of `B`
/// without packing them.
const IN_PLACE_B_ROWS: usize = 32;

/// Where a kernel's tile goes: `rows x cols` of it (the rest is padding),
/// added to what is there when `add`.
struct Tile<T> {
    dst: *mut T,
    dst_rs: isize,
    rows: usize,
    cols: usize,
    add: bool,
}

/// A register-blocked kernel: `a x b` over `kc` steps of an `MR`-row
/// panel of `A` and an `NR`-column panel of `B`, stored to a tile.
trait Micro<T: Float> {
    /// Rows of a tile.
    const MR: usize;
    /// Columns of a tile.
    const NR: usize;
    /// Whether the ISA fuses multiply-adds.
    const FMA: bool;

    /// # Safety
    /// `a` addresses `MR x kc` values, `b` `kc` steps of `NR` values `b_rs`
    /// apart, the tile lies in the
    /// destination, and the CPU runs the kernel's ISA.
    unsafe fn tile(kc: usize, a: Strided<T>, b: *const T, b_rs: usize, tile: Tile<T>);

    /// The dot products of `n` contiguous values at `x` with `n` at each
    /// of `ys` (four columns at once, so each load of `x` serves four).
    ///
    /// # Safety
    /// All hold `n` values, and the CPU runs the kernel's ISA.
    unsafe fn dot4(n: usize, x: *const T, ys: [*const T; 4]) -> [T; 4];

    /// [`pack`] with this kernel's ISA: vector kernels transpose blocks
    /// of f32 whose rows run along the depth (`B` stored transposed, as
    /// `x W^T` reads a weight, or a row-major `A`) eight by eight in
    /// registers, where the portable packing gathers them one value at a
    /// time.
    ///
    /// # Safety
    /// As for [`pack`], and the CPU runs the kernel's ISA.
    #[inline(always)]
    unsafe fn pack(width: usize, rows: usize, depth: usize, a: Strided<T>, out: *mut T) {
        // SAFETY: forwarded from the caller.
        unsafe { pack(width, rows, depth, a, out) }
    }
}

/// Writes an `MR x NR` block of sums to `tile` (its `rows x cols` corner).
#[inline(always)]
fn store<T: Float, const NR: usize>(c: &[[T; NR]], tile: Tile<T>) {
    let Tile { dst, dst_rs, rows, cols, add } = tile;
    for (i, ci) in c.iter().enumerate().take(rows) {
        // SAFETY: row i of the tile, `cols` long, lies in the destination.
        let row = unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), cols) };
        if add {
            row.iter_mut().zip(ci).for_each(|(d, &v)| *d += v);
        } else {
            row.copy_from_slice(&ci[..cols]);
        }
    }
}

/// Explicit vector registers of `V` lanes: `NV` of them per row (one or
/// two), `MR` rows. (Plain arrays leave the choice of what to vectorise to
/// LLVM, which vectorises the depth loop with gathers instead.)
struct Simd<V, const MR: usize, const NV: usize>(std::marker::PhantomData<V>);

impl<V: Lanes, const MR: usize, const NV: usize> Micro<V::T> for Simd<V, MR, NV> {
    const MR: usize = MR;
    const NR: usize = NV * V::W;
    const FMA: bool = true;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: Strided<V::T>, b: *const V::T, b_rs: usize, tile: Tile<V::T>) {
        // SAFETY (whole body): the panels hold kc steps of MR and NR values
        // and the CPU runs `V`'s ISA, as the caller vouches.
        unsafe {
            // Plain indexing with constant bounds, no closures
            // (`array::from_fn` and iterator adapters need not inline into
            // the ISA's function, and the intrinsics in them then become
            // calls).
            let mut c = [[V::zero(); NV]; MR];
            let mut bp = b;
            if a.rs == 1 {
                // Each step's rows adjacent: a packed panel, or a
                // column-major `A` read in place.
                let mut ap = a.ptr;
                for _ in 0..kc {
                    let mut bv = [V::zero(); NV];
                    for (v, r) in bv.iter_mut().enumerate() {
                        *r = V::load(bp.add(v * V::W));
                    }
                    for (i, ci) in c.iter_mut().enumerate() {
                        let ai = V::splat(*ap.add(i));
                        for v in 0..NV {
                            ci[v] = V::fma(ai, bv[v], ci[v]);
                        }
                    }
                    bp = bp.add(b_rs);
                    ap = ap.offset(a.cs);
                }
            } else {
                // `A` read in place, its rows `rs` apart: row 4g + j at
                // `base[g] + {0, 1, 2, 3} rs`. Left to itself, LLVM
                // reached the rows by adding `rs` to one register row
                // after row, a chain of MR dependent adds every step
                // that held the 16-row tile to one FMA a cycle. With
                // opaque group bases and `3 rs` it cannot derive a row
                // from the one before, and gives each row an address of
                // its own (on a Xeon: 1.17x on 128 products of 64x64x16,
                // 1.19x on 64x800x10; the wider tiles unchanged).
                const { assert!(MR <= 16, "four groups of four rows") };
                #[cfg(target_arch = "x86_64")]
                if V::F32 && V::W == 16 && MR == 16 && NV == 1 && kc > 0 {
                    // `V::T` is f32 and the ISA AVX-512 (16 f32 lanes).
                    let a = Strided { ptr: a.ptr.cast::<f32>(), rs: a.rs, cs: a.cs };
                    let Tile { dst, dst_rs, rows, cols, add } = tile;
                    let tile = Tile { dst: dst.cast::<f32>(), dst_rs, rows, cols, add };
                    x86::narrow_in_place(kc, a, b.cast::<f32>(), b_rs, tile);
                    return;
                }
                let rs = a.rs;
                let rs3 = std::hint::black_box(3 * rs);
                let mut base = [a.ptr; 4];
                for (g, b) in base.iter_mut().enumerate().take(MR.div_ceil(4)) {
                    *b = std::hint::black_box(a.ptr.offset(4 * g as isize * rs));
                }
                for _ in 0..kc {
                    let mut bv = [V::zero(); NV];
                    for (v, r) in bv.iter_mut().enumerate() {
                        *r = V::load(bp.add(v * V::W));
                    }
                    for (i, ci) in c.iter_mut().enumerate() {
                        let row = base[i / 4];
                        let at = match i % 4 {
                            0 => row,
                            1 => row.offset(rs),
                            2 => row.offset(2 * rs),
                            _ => row.offset(rs3),
                        };
                        let ai = V::splat(*at);
                        for v in 0..NV {
                            ci[v] = V::fma(ai, bv[v], ci[v]);
                        }
                    }
                    bp = bp.add(b_rs);
                    for b in base.iter_mut().take(MR.div_ceil(4)) {
                        *b = b.offset(a.cs);
                    }
                }
            }
            let Tile { dst, dst_rs, rows, cols, add } = tile;
            if rows == MR && cols == NV * V::W {
                // A whole tile goes straight from the registers.
                for (i, ci) in c.iter().enumerate() {
                    let d = dst.offset(i as isize * dst_rs);
                    for (v, &cv) in ci.iter().enumerate() {
                        let e = d.add(v * V::W);
                        if add {
                            V::add(V::load(e), cv).store(e);
                        } else {
                            cv.store(e);
                        }
                    }
                }
                return;
            }
            // A partial one is spilled to memory first.
            let mut out = [[V::T::ZERO; MAX_NR]; MR];
            for (o, ci) in out.iter_mut().zip(&c) {
                for (v, &cv) in ci.iter().enumerate() {
                    cv.store(o.as_mut_ptr().add(v * V::W));
                }
            }
            store(&out, Tile { dst, dst_rs, rows, cols, add });
        }
    }

    #[inline(always)]
    unsafe fn pack(width: usize, rows: usize, depth: usize, a: Strided<V::T>, out: *mut V::T) {
        // SAFETY (whole body): forwarded from the caller; `V::F32` says
        // that `V::T` is f32 and that the ISA has AVX2.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            if V::F32 && a.cs == 1 && a.rs != 1 {
                let a = Strided { ptr: a.ptr.cast::<f32>(), rs: a.rs, cs: 1 };
                return pack_transposing_f32(width, rows, depth, a, out.cast::<f32>());
            }
            pack(width, rows, depth, a, out)
        }
    }

    #[inline(always)]
    unsafe fn dot4(n: usize, x: *const V::T, ys: [*const V::T; 4]) -> [V::T; 4] {
        // SAFETY (whole body): all hold n values, as the caller vouches.
        unsafe {
            let mut acc = [V::zero(); 4];
            let mut p = 0;
            while p + V::W <= n {
                let xv = V::load(x.add(p));
                for (s, y) in acc.iter_mut().zip(ys) {
                    *s = V::fma(xv, V::load(y.add(p)), *s);
                }
                p += V::W;
            }
            let mut out = [V::T::ZERO; 4];
            for (o, v) in out.iter_mut().zip(acc) {
                *o = v.sum();
            }
            for q in p..n {
                for (o, y) in out.iter_mut().zip(ys) {
                    *o += *x.add(q) * *y.add(q);
                }
            }
            out
        }
    }
}

/// The portable kernel for CPUs without AVX2: a 4 x 4 tile of scalars.
struct Scalar<T>(std::marker::PhantomData<T>);

impl<T: Float> Micro<T> for Scalar<T> {
    const MR: usize = 4;
    const NR: usize = 4;
    const FMA: bool = false;

    #[inline(always)]
    unsafe fn tile(kc: usize, a: Strided<T>, b: *const T, b_rs: usize, tile: Tile<T>) {
        let mut c = [[T::ZERO; 4]; 4];
        for p in 0..kc {
            // SAFETY: step p of each panel, as the caller vouches.
            let (av, bv): ([T; 4], [T; 4]) =
                unsafe { (std::array::from_fn(|i| a.get(i, p)), *b.add(p * b_rs).cast::<[T; 4]>()) };
            for i in 0..4 {
                for j in 0..4 {
                    c[i][j] += av[i] * bv[j];
                }
            }
        }
        store(&c, tile);
    }

    #[inline(always)]
    unsafe fn dot4(n: usize, x: *const T, ys: [*const T; 4]) -> [T; 4] {
        // SAFETY: all hold n values, as the caller vouches.
        ys.map(|y| (0..n).fold(T::ZERO, |t, p| unsafe { t + *x.add(p) * *y.add(p) }))
    }
}

/// One vector register of floats.
trait Lanes: Copy {
    /// The lane type.
    type T: Float;
    /// Lanes per register.
    const W: usize;
    /// Whether the lanes are f32 (then the ISA has AVX2, and with it
    /// [`x86::transpose8`]).
    const F32: bool;
    /// All lanes zero.
    unsafe fn zero() -> Self;
    /// All lanes `x`.
    unsafe fn splat(x: Self::T) -> Self;
    /// `W` values from `p`, unaligned.
    unsafe fn load(p: *const Self::T) -> Self;
    /// `a * b + c`, fused.
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    /// `a + b`.
    unsafe fn add(a: Self, b: Self) -> Self;
    /// The lanes to `p`, unaligned.
    unsafe fn store(self, p: *mut Self::T);
    /// The sum of the lanes.
    unsafe fn sum(self) -> Self::T;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
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
        let Tile { dst, dst_rs, rows, cols, add } = tile;
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
}

/// Packs the `rows x depth` block at `a` into panels of `width` rows, each
/// `depth` steps of `width` values, the rows past `rows` zero: `A`'s
/// `MR`-row panels, or (through [`Strided::t`]) `B`'s `NR`-column ones.
///
/// # Safety
/// The block lies in the operand and `out` holds `rows` rounded up to
/// `width` times `depth` values.
#[inline(always)]
unsafe fn pack<T: Float>(width: usize, rows: usize, depth: usize, a: Strided<T>, out: *mut T) {
    for (panel, i0) in (0..rows).step_by(width).enumerate() {
        let live = width.min(rows - i0);
        // SAFETY: panel `panel` of `out`.
        let o = unsafe { std::slice::from_raw_parts_mut(out.add(panel * depth * width), depth * width) };
        for (p, step) in o.chunks_exact_mut(width).enumerate() {
            if a.rs == 1 && live == width {
                // SAFETY: step p of the panel is `width` contiguous values.
                step.copy_from_slice(unsafe { std::slice::from_raw_parts(a.at(i0, p).ptr, width) });
                continue;
            }
            for (i, v) in step.iter_mut().enumerate() {
                // SAFETY: (i0 + i, p) lies in the block for i < live.
                *v = if i < live { unsafe { a.get(i0 + i, p) } } else { T::ZERO };
            }
        }
    }
}

/// [`pack`] for f32 rows that run along the depth (`a.cs == 1`): whole
/// 8 x 8 blocks are transposed in registers, the edges copied one value at
/// a time.
///
/// # Safety
/// As for [`pack`], and the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pack_transposing_f32(width: usize, rows: usize, depth: usize, a: Strided<f32>, out: *mut f32) {
    let deep = depth / 8 * 8;
    for (panel, i0) in (0..rows).step_by(width).enumerate() {
        let live = width.min(rows - i0);
        let full = live / 8 * 8;
        // SAFETY (whole loop): panel `panel` of `out` holds depth x width
        // values; (i0 + i, p) lies in the block for i < live, p < depth.
        unsafe {
            let o = out.add(panel * depth * width);
            for p in (0..deep).step_by(8) {
                for i in (0..full).step_by(8) {
                    x86::transpose8(a.at(i0 + i, p).ptr, a.rs, o.add(p * width + i), width);
                }
            }
            for p in 0..depth {
                for i in if p < deep { full } else { 0 }..width {
                    *o.add(p * width + i) = if i < live { a.get(i0 + i, p) } else { 0.0 };
                }
            }
        }
    }
}

/// `dst[1 x n] (+)= a[1 x k] * b[k x n]`: rows of `b` scaled and summed
/// when they are contiguous, dot products with its columns otherwise.
///
/// # Safety
/// As for [`Product::serial`] with `m = 1`.
#[inline(always)]
unsafe fn row_times<T: Float, K: Micro<T>>(
    n: usize,
    k: usize,
    dst: *mut T,
    a: Strided<T>,
    b: Strided<T>,
    accumulate: bool,
) {
    // SAFETY: the destination row is n long.
    let out = unsafe { std::slice::from_raw_parts_mut(dst, n) };
    let fma = |x: T, y: T, acc: T| if K::FMA { x.mul_add(y, acc) } else { acc + x * y };
    if b.cs == 1 {
        if !accumulate {
            out.fill(T::ZERO);
        }
        for p in 0..k {
            // SAFETY: element p of the row and row p of `b`, n long.
            let (x, row) = unsafe { (a.get(0, p), std::slice::from_raw_parts(b.at(p, 0).ptr, n)) };
            out.iter_mut().zip(row).for_each(|(o, &w)| *o = fma(x, w, *o));
        }
        return;
    }
    let mut j = 0;
    if a.cs == 1 && b.rs == 1 {
        while j + 4 <= n {
            // SAFETY: the row of `a` and columns j..j + 4 of `b` are k long
            // and contiguous.
            let sums = unsafe { K::dot4(k, a.ptr, std::array::from_fn(|c| b.at(0, j + c).ptr)) };
            for (o, s) in out[j..j + 4].iter_mut().zip(sums) {
                *o = if accumulate { *o + s } else { s };
            }
            j += 4;
        }
    }
    for (j, o) in out.iter_mut().enumerate().skip(j) {
        // SAFETY: (0, p) and (p, j) lie in the operands.
        let total = (0..k).fold(T::ZERO, |s, p| unsafe { fma(a.get(0, p), b.get(p, j), s) });
        *o = if accumulate { *o + total } else { total };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lhs * rhs (+ dst)` in f64, the naive way.
    fn reference(
        m: usize,
        n: usize,
        k: usize,
        lhs: &dyn Fn(usize, usize) -> f64,
        rhs: &dyn Fn(usize, usize) -> f64,
    ) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| lhs(i, p) * rhs(p, j)).sum();
            }
        }
        out
    }

    /// Checks one product of `T` on every layout: `lhs` row- or
    /// column-major, `rhs` too, with and without accumulation.
    fn check<T: GemmFloat>(m: usize, n: usize, k: usize, tol: f64) {
        let value = |s: usize, i: usize, j: usize| ((s * 7919 + i * 31 + j * 17) % 23) as f64 / 11.0 - 1.0;
        let a: Vec<T> = (0..m * k).map(|x| T::from_f64(value(1, x / k, x % k))).collect();
        let b: Vec<T> = (0..k * n).map(|x| T::from_f64(value(2, x / n, x % n))).collect();
        let want = reference(m, n, k, &|i, p| value(1, i, p), &|p, j| value(2, p, j));
        // The same values stored transposed.
        let at: Vec<T> = (0..m * k).map(|x| a[(x % m) * k + x / m]).collect();
        let bt: Vec<T> = (0..k * n).map(|x| b[(x % k) * n + x / k]).collect();
        for (lhs, rhs) in [
            (Strided { ptr: a.as_ptr(), rs: k as isize, cs: 1 }, Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 }),
            (Strided { ptr: at.as_ptr(), rs: 1, cs: m as isize }, Strided { ptr: bt.as_ptr(), rs: 1, cs: k as isize }),
        ] {
            for (accumulate, plan) in [false, true].into_iter().flat_map(|a| plans().into_iter().map(move |p| (a, p))) {
                let mut dst = vec![T::from_f64(0.5); m * n];
                // SAFETY: the operands are m x k and k x n, `dst` m x n,
                // and `plans` holds only kernels this CPU runs.
                unsafe { T::serial(&plan, m, n, k, dst.as_mut_ptr(), n as isize, lhs, rhs, accumulate) };
                for (x, (&got, &w)) in dst.iter().zip(&want).enumerate() {
                    let w = if accumulate { w + 0.5 } else { w };
                    let got: f64 = num_traits::cast(got).unwrap();
                    assert!((got - w).abs() <= tol * (1.0 + w.abs()), "{plan} {m}x{k}x{n} at {x}: {got} vs {w}");
                }
            }
        }
    }

    /// Every kernel this CPU runs, each with the blocking of this CPU and
    /// with the smallest blocking, whose block edges small products cross.
    fn plans() -> Vec<GemmPlan> {
        let tiny = CpuInfo { l1d: 1, l2: 1, l3: 1, ..*cpu_info() };
        GemmKernel::ALL
            .into_iter()
            .filter(|k| k.runs_here())
            .flat_map(|k| [GemmPlan::for_kernel(k, cpu_info(), "test"), GemmPlan::for_kernel(k, &tiny, "test")])
            .collect()
    }

    #[test]
    fn every_kernel_this_cpu_runs_is_checked() {
        let kernels: Vec<GemmKernel> = GemmKernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
        assert!(kernels.contains(&gemm_plan().kernel), "the kernel in use is among them");
        assert_eq!(kernels.last(), Some(&GemmKernel::Scalar), "the portable kernel runs everywhere");
        if Isa::V4.runs_here() {
            assert_eq!(kernels.len(), 4, "an AVX-512 CPU runs every kernel");
        }
    }

    #[test]
    fn every_plan_fits_its_kernels() {
        let zen4 = CpuInfo {
            vendor: Vendor::Amd,
            family: 0x19,
            model: 0x11,
            l1d: 32 << 10,
            l2: 1 << 20,
            l3: 32 << 20,
            caches_reported: true,
        };
        let tiny = CpuInfo { l1d: 1, l2: 1, l3: 1, ..zen4 };
        let huge = CpuInfo { l1d: 1 << 20, l2: 1 << 30, l3: 1 << 34, ..zen4 };
        for kernel in GemmKernel::ALL {
            for info in [*cpu_info(), zen4, tiny, huge] {
                let plan = GemmPlan::for_kernel(kernel, &info, "test");
                let (wide, narrow) = kernel.rows();
                assert!(plan.mc.is_multiple_of(wide) && plan.mc.is_multiple_of(narrow), "{plan}");
                assert!(plan.nc.is_multiple_of(MAX_NR) && (128..=512).contains(&plan.kc), "{plan}");
            }
        }
        // Zen 4's caches give the blocking measured best there.
        let plan = GemmPlan::for_kernel(GemmKernel::Avx512x8, &zen4, "test");
        assert_eq!((plan.kc, plan.nc), (256, 2048), "{plan}");
        if Isa::V4.runs_here() {
            assert_eq!(choose_kernel(&zen4).0, GemmKernel::Avx512x8);
            let zen5 = CpuInfo { family: 0x1A, ..zen4 };
            assert_eq!(choose_kernel(&zen5).0, GemmKernel::Avx512x12);
        }
    }

    #[test]
    fn kernels_are_named_for_blaze_gemm_kernel() {
        for kernel in GemmKernel::ALL {
            assert_eq!(kernel.name().parse::<GemmKernel>(), Ok(kernel));
        }
        let err = "avx1024".parse::<GemmKernel>().unwrap_err();
        assert!(err.contains("avx1024") && err.contains("avx512-8x32"), "{err}");
    }

    #[test]
    fn matches_the_naive_product_across_block_edges() {
        for (m, n, k) in [
            (1, 1, 1),
            (1, 37, 300),
            (2, 3, 0),
            (7, 33, 5),
            (97, 70, 257),
            (200, 2100, 30),
            (13, 17, 600),
            (50, 10, 130),
            (64, 16, 64),
            (33, 8, 9),
            (37, 70, 1),
            // 12-row tiles, the last one part-filled.
            (45, 50, 300),
            // `A`'s rows (row-major) or steps (column-major) 4 KiB apart
            // in f32, 8 KiB in f64: packed, not read in place.
            (1024, 2, 40),
            (40, 2, 1024),
        ] {
            check::<f32>(m, n, k, 1e-4);
            check::<f64>(m, n, k, 1e-12);
        }
    }

    #[test]
    fn few_row_tiles_take_the_tile_that_fills_them() {
        // Attention's rows, and a small square: 8-row tiles fill them.
        assert!([64, 128, 256, 40].into_iter().all(prefers_8_rows));
        // Whole 12-row tiles, or one part-filled among many.
        assert!(![12, 36, 45, 96, 192, 1024, 2048].into_iter().any(prefers_8_rows));
    }

    #[test]
    fn an_outer_product_rounds_as_the_tiles_do() {
        // k = 1 with contiguous rows of `B` takes the outer-product loop;
        // the same `B` spread out (every other value), the tiles: the same
        // bits, with and without accumulation, under every plan.
        let (m, n) = (29, 45);
        let a: Vec<f32> = (0..m).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..n).map(|j| (j as f32 * 0.71).cos() / 3.0).collect();
        let spread: Vec<f32> = b.iter().flat_map(|&v| [v, f32::NAN]).collect();
        let start: Vec<f32> = (0..m * n).map(|x| (x as f32 * 0.13).sin()).collect();
        let lhs = Strided { ptr: a.as_ptr(), rs: 1, cs: 1 };
        for plan in plans() {
            for accumulate in [false, true] {
                let run = |rhs: Strided<f32>| {
                    let mut d = start.clone();
                    // SAFETY: `a` is m x 1, `rhs` 1 x n, `d` m x n, apart;
                    // `plans` lists kernels this CPU runs.
                    unsafe { f32::serial(&plan, m, n, 1, d.as_mut_ptr(), n as isize, lhs, rhs, accumulate) };
                    d
                };
                let rows = run(Strided { ptr: b.as_ptr(), rs: n as isize, cs: 1 });
                let tiles = run(Strided { ptr: spread.as_ptr(), rs: 2 * n as isize, cs: 2 });
                assert_eq!(rows, tiles, "{plan}, accumulate {accumulate}");
            }
        }
    }
}
