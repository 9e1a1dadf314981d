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

use crate::Real;
use crate::cpuinfo::{CpuInfo, Vendor, cpu_info};
use crate::product::Product;
use crate::scratch::grow;
use crate::simd::Isa;

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
    /// Whether a tile of 128 steps or more prefetches its destination
    /// rows before its steps: on by the rule (1.04x on the squares of
    /// 1024 and 2048 on a Zen 3, within 1% either way on a Zen 5), off
    /// where the search times it faster: on an L1 whose sets the rows of
    /// a power-of-two-wide destination share, the prefetched lines may
    /// evict the panels the tile reads.
    pub prefetch: bool,
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
        GemmPlan { kernel, kc, mc, nc, prefetch: true, reason }
    }
}

impl fmt::Display for GemmPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let GemmPlan { kernel, kc, mc, nc, prefetch, reason } = self;
        write!(f, "{} kernel ({reason}), KC {kc}, MC {mc}, NC {nc}", kernel.name())?;
        if !prefetch {
            write!(f, ", no destination prefetch")?;
        }
        Ok(())
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

pub use crate::product::Strided;

/// Element types with a packed GEMM: f32 and f64, each with its kernel
/// shapes per ISA. A product's plan is [`crate::gemm_tune::plan_for`]'s
/// (measured, else [`gemm_plan`]); [`Product::serial`] runs it, on a CPU
/// that runs the plan's kernel ([`GemmKernel::runs_here`]).
pub(crate) trait GemmFloat: Real + Product<Out = Self, Plan = GemmPlan> {}

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

            fn split_columns(dims: [usize; 3], threads: usize, plan: &GemmPlan, transposed: [bool; 2]) -> bool {
                crate::gemm_tune::split_for::<$t>(dims, threads, plan, transposed)
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

                let GemmPlan { kernel, kc, mc, nc, prefetch, .. } = *plan;
                let g = Gemm { m, n, k, dst, dst_rs, lhs, rhs, accumulate, kc, mc, nc, prefetch };
                PACKED.with(|cell| {
                    let mut bufs = cell.borrow_mut();
                    let (a_words, b_words) = &mut *bufs;
                    let pa: *mut $t = grow(a_words, (mc + MAX_MR) * (kc.min(k) + A_PAD));
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

/// The tallest kernel's `MR`: the rows of the edge panel the `A` buffer
/// keeps room for beside a block.
const MAX_MR: usize = 16;

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
    /// The plan's destination prefetch.
    prefetch: bool,
}

/// The blocked product with `MR x NR` kernels (`FMA`: fused multiply-add).
///
/// # Safety
/// As for [`Product::serial`]; the CPU runs the ISA the caller
/// compiled this for, `pa` holds `(mc + MAX_MR) x (kc + A_PAD)` values
/// (an edge panel and a copied block of `A`) and `pb` `kc x
/// nc`, both cut down to `k` and `n` rounded up to `MAX_NR`; `mc` is a
/// multiple of `MR`, `nc` of `NR`.
#[inline(always)]
unsafe fn run<T: Real, K: Micro<T>>(g: &Gemm<T>, pa: *mut T, pb: *mut T) {
    const { assert!(K::NR <= MAX_NR && K::MR <= MAX_MR) };
    let (mr, nr) = (K::MR, K::NR);
    let Gemm { m, n, k, dst, dst_rs, lhs, rhs, accumulate, kc: block_k, mc: block_m, nc: block_n, prefetch } = *g;
    debug_assert!(block_m.is_multiple_of(mr) && block_n.is_multiple_of(nr));
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                // SAFETY: row i of the m x n destination.
                unsafe { std::slice::from_raw_parts_mut(dst.offset(i as isize * dst_rs), n).fill(T::zero()) };
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
    // A row-major one is copied rather than packed: each block's rows, as
    // they are, into `pa` with `A_PAD` more values between them, which the
    // kernel then reads in place. A copy streams where packing transposes
    // (one thread of a Zen 5: 1.03x on squares of 1024 and 2048, 1.05-1.10x
    // with 256 or 300 columns, whose packed rows serve fewer tiles); the
    // kernel reads the same values in the same order, so the bits do not
    // change.
    let far = if lhs.cs == 1 { lhs.rs } else { lhs.cs };
    let aliased = (far.unsigned_abs() * std::mem::size_of::<T>()).is_multiple_of(4096);
    let in_place_a = (lhs.cs == 1 || lhs.rs == 1) && !aliased;
    let copy_a = lhs.cs == 1 && aliased;
    // Whether the whole panels are read where they lie (in `A` or copied).
    let read_a = in_place_a || copy_a;
    for jc in (0..n).step_by(block_n) {
        let nc = block_n.min(n - jc);
        for pc in (0..k).step_by(block_k) {
            let kc = block_k.min(k - pc);
            let prefetch_rows = prefetch && kc >= PREFETCH_DEPTH;
            if !in_place_b {
                // SAFETY: the block lies in `rhs`; `pb` holds kc x nc rounded up to NR.
                unsafe { K::pack(nr, nc, kc, rhs.at(pc, jc).t(), pb) };
            }
            let add = accumulate || pc > 0;
            for ic in (0..m).step_by(block_m) {
                let mc = block_m.min(m - ic);
                let whole = mc / mr * mr;
                // SAFETY: the block lies in `lhs`; `pa` holds (block_m +
                // MAX_MR) x (kc + A_PAD): an edge panel and the copied rows
                // after it.
                unsafe {
                    if copy_a {
                        // The whole panels' rows after room for the edge
                        // panel, which is packed as for an `A` read in place.
                        for i in 0..whole {
                            let row = lhs.at(ic + i, pc).ptr;
                            std::ptr::copy_nonoverlapping(row, pa.add(mr * kc + i * (kc + A_PAD)), kc);
                        }
                        if whole < mc {
                            K::pack(mr, mc - whole, kc, lhs.at(ic + whole, pc), pa);
                        }
                    } else if !in_place_a {
                        K::pack(mr, mc, kc, lhs.at(ic, pc), pa);
                    } else if whole < mc {
                        K::pack(mr, mc - whole, kc, lhs.at(ic + whole, pc), pa);
                    }
                }
                // The block's whole panels as the kernel reads them in
                // place: in `A`, or copied.
                let rows_a = if copy_a {
                    // SAFETY: the copied rows lie in `pa`, after the edge panel.
                    Strided { ptr: unsafe { pa.add(mr * kc) }.cast_const(), rs: (kc + A_PAD) as isize, cs: 1 }
                } else {
                    // SAFETY: the block lies in `lhs`.
                    unsafe { lhs.at(ic, pc) }
                };
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
                            let a = if !read_a {
                                Strided { ptr: pa.add(ir * kc).cast_const(), rs: 1, cs: mr as isize }
                            } else if ir < whole {
                                rows_a.at(ir, 0)
                            } else {
                                Strided { ptr: pa.cast_const(), rs: 1, cs: mr as isize }
                            };
                            let c = dst.offset((ic + ir) as isize * dst_rs + (jc + jr) as isize);
                            let (rows, prefetch) = (mr.min(mc - ir), prefetch_rows);
                            let tile = Tile { dst: c, dst_rs, rows, cols, add, prefetch };
                            K::tile_rows(kc, a, b, b_rs, tile);
                        }
                    }
                }
            }
        }
    }
}

/// Values added to each row of a copied block of `A` (`run`), so that
/// rows a multiple of 4 KiB apart in `A` land in different L1 sets.
const A_PAD: usize = 16;

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
    /// Prefetch the rows before the steps ([`GemmPlan::prefetch`]).
    prefetch: bool,
}

mod micro;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use micro::PREFETCH_DEPTH;
use micro::{Lanes, Micro, Scalar, Simd};

/// `dst[1 x n] (+)= a[1 x k] * b[k x n]`: rows of `b` scaled and summed
/// when they are contiguous, dot products with its columns otherwise.
///
/// # Safety
/// As for [`Product::serial`] with `m = 1`.
#[inline(always)]
unsafe fn row_times<T: Real, K: Micro<T>>(
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
            out.fill(T::zero());
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
        let total = (0..k).fold(T::zero(), |s, p| unsafe { fma(a.get(0, p), b.get(p, j), s) });
        *o = if accumulate { *o + total } else { total };
    }
}

#[cfg(test)]
mod tests;
