//! Int8 products (`Composites::linear_int8`): f32 rows quantized to `u8`
//! (`blaze_runtime::int8` defines every rounding), times an int8
//! weight packed once per weight, summed exactly in `i32` and scaled back
//! to f32 in the kernels' stores. Three kernels give the same values:
//!
//! - **AMX-INT8** (Intel Sapphire Rapids and later): `tdpbusd` adds to a
//!   16 x 16 tile of `i32` sums the products of a 16 x 64 tile of `u8`
//!   rows and a 64 x 16 tile of weights, 16 384 multiply-adds an
//!   instruction; the kernel keeps a 32 x 32 block in four tiles. For
//!   products of 32 rows or more.
//! - **AVX512-VNNI** (Zen 4, Intel Ice Lake and later): `vpdpbusd` adds
//!   to each `i32` lane four `u8 x i8` products; the kernel keeps up to
//!   6 rows x 64 columns of sums in 24 registers (12 rows of 16 or 32
//!   columns for narrow panels), broadcasting four bytes of a row against
//!   one vector of weights per 16 columns.
//! - **portable**: the runtime's scalar loop, wherever neither runs.
//!
//! The weight is packed in panels of 64 output channels: per group of
//! four depth steps, the 64 channels' four bytes each (256 bytes), the
//! depth padded with zeros to a multiple of 64 (of 4 for a depth under 64,
//! which only the VNNI kernel takes: an AMX tile would be mostly
//! padding) and the channels past the
//! last with zeros too. A VNNI step reads one group; an AMX tile of
//! weights is 16 groups of 16 channels, 256 bytes apart. The quantized
//! rows keep the padded depth (their padding meets zero weights).

use std::sync::OnceLock;

use blaze_runtime::int8::{self as q, ConvShape, InputQuant, QWeight};

use crate::scratch as pool;
use crate::threads as parallel;

/// Output channels in a packed panel.
const PANEL: usize = 64;
/// Depth the packed weight is padded to: one AMX tile's.
const DEPTH_BLOCK: usize = 64;
/// Rows of the VNNI kernel's tile at three or four vectors of channels
/// (24 registers of sums); twelve at one or two.
const MR: usize = 6;
/// Rows a parallel task takes (a multiple of both kernels' row blocks).
const TASK_ROWS: usize = 96;
/// Multiply-adds below which a product stays on one thread: waking the
/// second core costs tens of microseconds.
const PARALLEL_MIN: usize = 1 << 22;

/// The int8 kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Int8Kernel {
    /// AMX tiles: a 32 x 32 block of sums in four tile registers.
    Amx,
    /// The AVX512-VNNI dot product: 6 x 64 sums in 24 vector registers.
    Vnni,
    /// The runtime's scalar loop.
    Portable,
}

impl Int8Kernel {
    /// Every kernel, fastest first.
    pub const ALL: [Int8Kernel; 3] = [Int8Kernel::Amx, Int8Kernel::Vnni, Int8Kernel::Portable];

    /// The name `BLAZE_GEMM_INT8_KERNEL` takes.
    pub fn name(self) -> &'static str {
        match self {
            Int8Kernel::Amx => "amx-int8",
            Int8Kernel::Vnni => "avx512-vnni",
            Int8Kernel::Portable => "portable",
        }
    }

    /// Whether this CPU runs the kernel (for AMX: and lent this process
    /// the tiles).
    pub fn runs_here(self) -> bool {
        match self {
            Int8Kernel::Amx => amx_int8_runs_here(),
            Int8Kernel::Vnni => vnni_runs_here(),
            Int8Kernel::Portable => true,
        }
    }

    /// The kernel for a product of `m` rows: `BLAZE_GEMM_INT8_KERNEL` when
    /// set; else AMX from 32 rows, VNNI, then the portable loop, whichever
    /// runs first. Measured on a Xeon (one thread, rows quantized too):
    /// at 16 rows AMX lost to VNNI on two of four layer shapes (784 x 256:
    /// 497 against 576 GOP/s), from 32 it won on all (1.1-1.9x; 1024 x
    /// 1024 at 128 rows: 2530 against 1180).
    pub fn for_rows(m: usize) -> Int8Kernel {
        if let Some(k) = forced() {
            return k;
        }
        match () {
            _ if m >= 32 && amx_int8_runs_here() => Int8Kernel::Amx,
            _ if vnni_runs_here() => Int8Kernel::Vnni,
            _ => Int8Kernel::Portable,
        }
    }
}

impl std::str::FromStr for Int8Kernel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Int8Kernel::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Int8Kernel::ALL.iter().map(|k| k.name()).collect();
            format!("unknown int8 GEMM kernel `{s}`: expected one of {}", names.join(", "))
        })
    }
}

/// Whether this CPU has AVX-512 with VNNI.
pub fn vnni_runs_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512bw") && has!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has AMX with int8 products (CPUID leaf 7: AMX-INT8,
/// EDX bit 25, and AMX-TILE, bit 24) and AVX-512 for the stores, and the
/// kernel lent this process the tiles.
pub fn amx_int8_runs_here() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            let edx = if __cpuid(0).eax < 7 { 0 } else { __cpuid_count(7, 0).edx };
            edx & (1 << 25) != 0 && edx & (1 << 24) != 0 && vnni_runs_here() && crate::gemm_bf16::request_tiles()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// The kernel `BLAZE_GEMM_INT8_KERNEL` names, if set.
///
/// # Panics
/// If it names no kernel or one this CPU cannot run.
fn forced() -> Option<Int8Kernel> {
    static FORCED: OnceLock<Option<Int8Kernel>> = OnceLock::new();
    *FORCED.get_or_init(|| {
        let name = std::env::var("BLAZE_GEMM_INT8_KERNEL").ok()?;
        let kernel: Int8Kernel = name.parse().unwrap_or_else(|e| panic!("BLAZE_GEMM_INT8_KERNEL: {e}"));
        assert!(kernel.runs_here(), "BLAZE_GEMM_INT8_KERNEL={name}: this CPU cannot run it");
        Some(kernel)
    })
}

/// A weight in the kernels' layout (see the module's comment), with its
/// sums and scales padded to whole panels.
struct Packed {
    /// The depth padded to [`DEPTH_BLOCK`] (to 4 under it).
    depth: usize,
    panels: Vec<u8>,
    sums: Vec<i32>,
    scales: Vec<f32>,
}

impl Packed {
    fn new(w: &QWeight) -> Packed {
        let (n, k) = (w.rows(), w.cols());
        let depth = if k < DEPTH_BLOCK { k.next_multiple_of(4).max(4) } else { k.next_multiple_of(DEPTH_BLOCK) };
        let count = n.div_ceil(PANEL);
        let mut panels = vec![0u8; count * depth * PANEL];
        for o in 0..n {
            let (p, c) = (o / PANEL, o % PANEL);
            let panel = &mut panels[p * depth * PANEL..(p + 1) * depth * PANEL];
            for (j, &v) in w.values()[o * k..(o + 1) * k].iter().enumerate() {
                panel[(j / 4) * 4 * PANEL + c * 4 + j % 4] = v as u8;
            }
        }
        let mut sums = w.sums().to_vec();
        let mut scales = w.scales().to_vec();
        sums.resize(count * PANEL, 0);
        scales.resize(count * PANEL, 0.0);
        Packed { depth, panels, sums, scales }
    }

    fn panel(&self, p: usize) -> *const u8 {
        self.panels[p * self.depth * PANEL..].as_ptr()
    }

    /// `kernel`, or VNNI where AMX would take a depth under a tile's.
    fn kernel(&self, kernel: Int8Kernel) -> Int8Kernel {
        if kernel == Int8Kernel::Amx && !self.depth.is_multiple_of(DEPTH_BLOCK) { Int8Kernel::Vnni } else { kernel }
    }
}

/// An output pointer shared by the tasks, each writing its own block.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: tasks write disjoint blocks (distinct rows or panels).
unsafe impl Sync for Out {}
// SAFETY: as for `Sync`.
unsafe impl Send for Out {}

/// `x w^T` for row-major f32 `x` (`m x k`) into `out` (`m x n`), on the
/// kernel [`Int8Kernel::for_rows`] picks.
#[doc(hidden)]
pub fn linear_int8(x: &[f32], m: usize, w: &QWeight, input: InputQuant, out: &mut [f32]) {
    linear_int8_on(Int8Kernel::for_rows(m), x, m, w, input, out);
}

/// `x w^T` on `kernel`, which must run here (for tests and benchmarks;
/// [`Int8Kernel::for_rows`] picks one).
pub fn linear_int8_on(kernel: Int8Kernel, x: &[f32], m: usize, w: &QWeight, input: InputQuant, out: &mut [f32]) {
    let (n, k) = (w.rows(), w.cols());
    assert!(x.len() == m * k && out.len() == m * n, "linear_int8: {m} x {k} inputs for {:?}", w.shape());
    assert!(kernel.runs_here(), "linear_int8: the {} kernel does not run on this CPU", kernel.name());
    if kernel == Int8Kernel::Portable || m == 0 || n == 0 {
        q::linear_int8(x, m, w, input, out);
        return;
    }
    let packed = w.packed(Packed::new);
    let (depth, kernel) = (packed.depth, packed.kernel(kernel));
    // AMX reads rows 32 at a time: the rows past `m` hold stale bytes,
    // whose sums are never stored.
    let rows = if kernel == Int8Kernel::Amx { m.next_multiple_of(32) } else { m };
    pool::with_scratch::<u8, _>(rows * depth, |a| {
        let mut params = Vec::with_capacity(m);
        for (row, qa) in x.chunks_exact(k.max(1)).zip(a.chunks_exact_mut(depth)).take(m) {
            // SAFETY: the kernels that reach here run AVX-512.
            params.push(unsafe { x86::quantize(row, input, qa) });
        }
        let job =
            Job { a: a.as_ptr(), depth, n, packed, params: &params, out: Out(out.as_mut_ptr()), transposed: None };
        // SAFETY: the kernel runs here (asserted); the rows are quantized
        // and padded as the kernels read them.
        unsafe { run(kernel, &job, m, parallel::should_fork(m * n * k, PARALLEL_MIN)) };
    });
}

/// Every task of `job` (`m` rows): each panel of channels times each
/// block of rows, on the threads when `fork` says so.
///
/// # Safety
/// `kernel` is AMX or VNNI and runs here; the job's rows are quantized
/// and padded for it (to 32 rows for AMX).
unsafe fn run(kernel: Int8Kernel, job: &Job<'_>, m: usize, fork: bool) {
    let (panels, tasks) = (job.n.div_ceil(PANEL), m.div_ceil(TASK_ROWS));
    let task = |t: usize| {
        let (p, r) = (t % panels, t / panels);
        let rows = r * TASK_ROWS..m.min((r + 1) * TASK_ROWS);
        // SAFETY: the caller's contract; each task writes its own rows of
        // its own panel.
        unsafe {
            match kernel {
                Int8Kernel::Amx => x86::amx(job, p, rows),
                _ => x86::vnni(job, p, rows),
            }
        }
    };
    if fork && panels * tasks > 1 {
        parallel::for_each_index(panels * tasks, 1, &task);
    } else {
        (0..panels * tasks).for_each(task);
    }
}

/// An int8 convolution (`quant::weight::conv2d_int8`'s values) on the
/// kernel [`Int8Kernel::for_rows`] picks for its windows.
#[doc(hidden)]
pub fn conv2d_int8(x: &[f32], shape: &ConvShape, weights: &[&QWeight], input: InputQuant, out: &mut [f32]) {
    let [oh, ow] = shape.output().expect("conv2d_int8: the kernel fits the padded input");
    conv2d_int8_on(Int8Kernel::for_rows(oh * ow), x, shape, weights, input, out);
}

/// An int8 convolution on `kernel`, which must run here: each image
/// quantized once, its windows unfolded in bytes (padding at the zero
/// point) as the kernels' rows, the sums scattered into the image's
/// channel planes as they are stored. Images run on the threads when the
/// convolution is large.
pub fn conv2d_int8_on(
    kernel: Int8Kernel,
    x: &[f32],
    shape: &ConvShape,
    weights: &[&QWeight],
    input: InputQuant,
    out: &mut [f32],
) {
    let [n, c, h, w] = shape.input;
    let [kh, kw] = shape.kernel;
    let [oh, ow] = shape.output().expect("conv2d_int8: the kernel fits the padded input");
    let (groups, og) = (weights.len(), weights[0].rows());
    let (cg, m, outs) = (c / groups, oh * ow, og * groups);
    assert!(x.len() == n * c * h * w && out.len() == n * outs * m, "conv2d_int8: buffers for {shape:?}");
    assert!(kernel.runs_here(), "conv2d_int8: the {} kernel does not run on this CPU", kernel.name());
    if kernel == Int8Kernel::Portable || m == 0 {
        q::conv2d_int8(x, shape, weights, input, out);
        return;
    }
    let [ph, pw] = [shape.options.padding[0], shape.options.padding[1]];
    let (hp, wp) = (h + 2 * ph, w + 2 * pw);
    let ([sy, sx], [dy, dx]) = (shape.options.stride, shape.options.dilation);
    let image = |s: usize, y: &mut [f32]| {
        let mut quantized = vec![0u8; c * h * w];
        // SAFETY: the vector kernels run AVX-512.
        let (scale, zp) = unsafe { x86::quantize(&x[s * c * h * w..(s + 1) * c * h * w], input, &mut quantized) };
        // The image with its padding at the zero point, so that every tap
        // of every window lies inside it.
        let mut padded = vec![zp; c * hp * wp];
        for (plane, from) in padded.chunks_exact_mut(hp * wp).zip(quantized.chunks_exact(h * w)) {
            for (line, src) in plane[ph * wp..].chunks_exact_mut(wp).zip(from.chunks_exact(w)) {
                line[pw..pw + w].copy_from_slice(src);
            }
        }
        let params = vec![(scale, zp); m];
        for (g, wg) in weights.iter().enumerate() {
            let packed = wg.packed(Packed::new);
            let (depth, kernel) = (packed.depth, packed.kernel(kernel));
            let rows = if kernel == Int8Kernel::Amx { m.next_multiple_of(32) } else { m };
            let mut a = vec![0u8; rows * depth];
            // Each window row's taps: per output line, channel and kernel
            // line, the taps of every window along the line.
            for oy in 0..oh {
                let mut t = 0;
                for plane in padded[g * cg * hp * wp..(g + 1) * cg * hp * wp].chunks_exact(hp * wp) {
                    for ky in 0..kh {
                        let line = &plane[(oy * sy + ky * dy) * wp..][..wp];
                        let rows = &mut a[oy * ow * depth..(oy + 1) * ow * depth];
                        match (dx, kw) {
                            // Lengths the compiler knows: moves, not calls.
                            (1, 1) => taps::<1>(rows, depth, t, line, sx),
                            (1, 3) => taps::<3>(rows, depth, t, line, sx),
                            (1, 5) => taps::<5>(rows, depth, t, line, sx),
                            (1, 7) => taps::<7>(rows, depth, t, line, sx),
                            _ => {
                                for (ox, row) in rows.chunks_exact_mut(depth).enumerate() {
                                    (0..kw).for_each(|kx| row[t + kx] = line[ox * sx + kx * dx]);
                                }
                            }
                        }
                        t += kw;
                    }
                }
            }
            // The sums go straight to the group's channels, a plane each.
            let planes = Out(y[g * og * m..].as_mut_ptr());
            let job = Job { a: a.as_ptr(), depth, n: og, packed, params: &params, out: planes, transposed: Some(m) };
            // SAFETY: the kernel runs here (asserted); `a` holds the
            // padded rows; the group's og planes of m values lie in `y`.
            unsafe { run(kernel, &job, m, false) };
        }
    };
    let work = n * outs * m * cg * kh * kw;
    if n > 1 && parallel::should_fork(work, PARALLEL_MIN) {
        parallel::chunks_mut(out, outs * m, 1, &image);
    } else {
        out.chunks_exact_mut(outs * m).enumerate().for_each(|(s, y)| image(s, y));
    }
}

/// For each window along an output line (`rows`, one of `depth` bytes
/// each), its `K` contiguous taps from `line` into bytes `t..t + K`.
#[inline(always)]
fn taps<const K: usize>(rows: &mut [u8], depth: usize, t: usize, line: &[u8], stride: usize) {
    for (ox, row) in rows.chunks_exact_mut(depth).enumerate() {
        let from: &[u8; K] = line[ox * stride..ox * stride + K].try_into().expect("K taps");
        row[t..t + K].copy_from_slice(from);
    }
}

/// What every task of one product reads.
struct Job<'a> {
    /// The quantized rows, `depth` bytes apart.
    a: *const u8,
    depth: usize,
    n: usize,
    packed: &'a Packed,
    /// Each row's scale and zero point.
    params: &'a [(f32, u8)],
    out: Out,
    /// Where row `i`, column `j` goes: `out[i * n + j]`, or with
    /// `Some(ld)` `out[j * ld + i]` (a convolution's channels, each a
    /// plane of `ld` positions).
    transposed: Option<usize>,
}

// SAFETY: the rows are read only; `out` is written in disjoint blocks.
unsafe impl Sync for Job<'_> {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{InputQuant, Job, MR, PANEL, q};
    use crate::gemm_bf16::Tiles;

    /// Stores row `i`'s sums for the 16 channels from `col` (`acc`) as
    /// f32: `(acc - zero_point * sum) * (scale * scale_w)`, the channels
    /// past the last masked off.
    #[inline(always)]
    unsafe fn store(job: &Job<'_>, i: usize, col: usize, acc: __m512i) {
        if col >= job.n {
            return;
        }
        // SAFETY: `col` lies in the padded sums and scales; the store is
        // masked to row `i`'s columns below `n`.
        unsafe {
            let (scale, zp) = job.params[i];
            let sums = _mm512_loadu_si512(job.packed.sums.as_ptr().add(col).cast());
            let scales = _mm512_mul_ps(_mm512_set1_ps(scale), _mm512_loadu_ps(job.packed.scales.as_ptr().add(col)));
            let exact = _mm512_sub_epi32(acc, _mm512_mullo_epi32(sums, _mm512_set1_epi32(i32::from(zp))));
            let y = _mm512_mul_ps(_mm512_cvtepi32_ps(exact), scales);
            let left = job.n - col;
            let mask: __mmask16 = if left >= 16 { 0xffff } else { (1u16 << left) - 1 };
            match job.transposed {
                None => _mm512_mask_storeu_ps(job.out.0.add(i * job.n + col), mask, y),
                Some(ld) => {
                    let ld = ld as i32;
                    let planes = _mm512_mullo_epi32(
                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                        _mm512_set1_epi32(ld),
                    );
                    _mm512_mask_i32scatter_ps::<4>(job.out.0.add(col * ld as usize + i).cast(), mask, planes, y);
                }
            }
        }
    }

    /// Quantizes `row` into `out` (its padding zeroed) as `input` says,
    /// as `quant::weight`'s `row_params` and `quantize_row` do, 16 values
    /// at a time: the rounding is the vector conversion's (to nearest,
    /// ties to even, as `round_ties_even`), the clamps are taken in float
    /// first (so that infinities and NaNs land where the scalar loop puts
    /// them: 255, 0 and 0). Returns the row's scale and zero point.
    ///
    /// # Safety
    /// The CPU has AVX-512 (F and BW); `out` is at least as long as `row`.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize(row: &[f32], input: InputQuant, out: &mut [u8]) -> (f32, u8) {
        let k = row.len();
        let tail = |at: usize| -> __mmask16 { if k - at >= 16 { 0xffff } else { (1u16 << (k - at)) - 1 } };
        // SAFETY: every load and store is masked to `row`'s and `out`'s
        // first `k` values.
        unsafe {
            let (scale, zp) = match input {
                InputQuant::Static { scale, zero_point } => (scale, zero_point),
                InputQuant::Dynamic => {
                    // From 0 (the range holds 0); `min(x, acc)` keeps acc
                    // where x is NaN, as `f32::min` does.
                    let (mut lo, mut hi) = (_mm512_setzero_ps(), _mm512_setzero_ps());
                    for at in (0..k).step_by(16) {
                        let v = _mm512_maskz_loadu_ps(tail(at), row.as_ptr().add(at));
                        lo = _mm512_min_ps(v, lo);
                        hi = _mm512_max_ps(v, hi);
                    }
                    q::input_params(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi))
                }
            };
            let inv = _mm512_set1_ps(1.0 / scale);
            let (low, high) = (_mm512_set1_ps(-256.0), _mm512_set1_ps(256.0));
            let zero = _mm512_set1_epi32(i32::from(zp));
            for at in (0..k).step_by(16) {
                let v = _mm512_mul_ps(_mm512_maskz_loadu_ps(tail(at), row.as_ptr().add(at)), inv);
                let v = _mm512_min_ps(_mm512_max_ps(v, low), high);
                let levels = _mm512_max_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(v), zero), _mm512_setzero_si512());
                _mm512_mask_cvtusepi32_storeu_epi8(out.as_mut_ptr().add(at).cast(), tail(at), levels);
            }
            out[k..].fill(0);
            (scale, zp)
        }
    }

    /// `R` rows from `row` times the first `V` vectors (16 channels each)
    /// of panel `p`: their sums in `R x V` registers.
    #[inline(always)]
    unsafe fn vnni_tile<const R: usize, const V: usize>(job: &Job<'_>, p: usize, row: usize) {
        // SAFETY: rows row..row + R lie in the quantized rows; the panel
        // holds depth / 4 groups of 256 bytes.
        unsafe {
            let b = job.packed.panel(p);
            let a = job.a.add(row * job.depth);
            let mut acc = [[_mm512_setzero_si512(); V]; R];
            for g in 0..job.depth / 4 {
                let bp = b.add(g * 4 * PANEL);
                let w: [__m512i; V] = std::array::from_fn(|v| _mm512_loadu_si512(bp.add(64 * v).cast()));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_epi32(a.add(r * job.depth + 4 * g).cast::<i32>().read_unaligned());
                    for v in 0..V {
                        acc[v] = _mm512_dpbusd_epi32(acc[v], x, w[v]);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                for (v, &acc) in acc.iter().enumerate() {
                    store(job, row + r, p * PANEL + 16 * v, acc);
                }
            }
        }
    }

    /// Rows `rows` times the first `V` vectors of panel `p`, `TALL` rows a
    /// tile (more rows where fewer vectors leave registers free: each
    /// vector of weights loaded then serves more rows).
    #[inline(always)]
    unsafe fn panel_rows<const V: usize, const TALL: usize>(job: &Job<'_>, p: usize, rows: Range<usize>) {
        let mut i = rows.start;
        // SAFETY: each tile's rows lie in `rows`.
        unsafe {
            while i + TALL <= rows.end {
                vnni_tile::<TALL, V>(job, p, i);
                i += TALL;
            }
            while i + MR <= rows.end {
                vnni_tile::<MR, V>(job, p, i);
                i += MR;
            }
            match rows.end - i {
                0 => {}
                1 => vnni_tile::<1, V>(job, p, i),
                2 => vnni_tile::<2, V>(job, p, i),
                3 => vnni_tile::<3, V>(job, p, i),
                4 => vnni_tile::<4, V>(job, p, i),
                _ => vnni_tile::<5, V>(job, p, i),
            }
        }
    }

    /// Rows `rows` times panel `p` on the VNNI kernel: only the panel's
    /// vectors that hold channels (a layer of 10 or 16 outputs takes one).
    ///
    /// # Safety
    /// The CPU has AVX512-VNNI; `rows` lie in the job's rows.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn vnni(job: &Job<'_>, p: usize, rows: Range<usize>) {
        // SAFETY: forwarded.
        unsafe {
            match (job.n - p * PANEL).min(PANEL).div_ceil(16) {
                1 => panel_rows::<1, 12>(job, p, rows),
                2 => panel_rows::<2, 12>(job, p, rows),
                3 => panel_rows::<3, MR>(job, p, rows),
                _ => panel_rows::<4, MR>(job, p, rows),
            }
        }
    }

    /// Rows `rows` times panel `p` on AMX tiles, 32 x 32 blocks.
    ///
    /// # Safety
    /// AMX-INT8 runs here and lent this process the tiles; the quantized
    /// rows are padded to 32.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn amx(job: &Job<'_>, p: usize, rows: Range<usize>) {
        #[repr(align(64))]
        struct Block([i32; 32 * 32]);
        let mut block = Block([0; 32 * 32]);
        let lda = job.depth;
        // SAFETY: the caller vouches for AMX.
        let _tiles = unsafe { Tiles::configure() };
        for row in rows.clone().step_by(32) {
            for half in 0..2 {
                let col = p * PANEL + 32 * half;
                if col >= job.n {
                    break;
                }
                // SAFETY: rows row..row + 32 of the padded quantized rows
                // and 16 groups of the panel at a time lie in their
                // buffers; the block holds 32 rows of 32 sums (128 bytes).
                unsafe {
                    let a = job.a.add(row * lda);
                    let b = job.packed.panel(p).add(4 * 32 * half);
                    asm!(
                        "tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3",
                        "2:",
                        "tileloadd tmm4, [{a} + {lda}]",
                        "tileloadd tmm6, [{b} + {ldb}]",
                        "tdpbusd tmm0, tmm4, tmm6",
                        "tileloadd tmm7, [{b} + {ldb} + 64]",
                        "tdpbusd tmm1, tmm4, tmm7",
                        "tileloadd tmm5, [{a2} + {lda}]",
                        "tdpbusd tmm2, tmm5, tmm6",
                        "tdpbusd tmm3, tmm5, tmm7",
                        "add {a}, 64",
                        "add {a2}, 64",
                        "add {b}, {step}",
                        "dec {steps}",
                        "jnz 2b",
                        "tilestored [{c} + {ldc}], tmm0",
                        "tilestored [{c} + {ldc} + 64], tmm1",
                        "tilestored [{c2} + {ldc}], tmm2",
                        "tilestored [{c2} + {ldc} + 64], tmm3",
                        a = inout(reg) a => _,
                        a2 = inout(reg) a.add(16 * lda) => _,
                        b = inout(reg) b => _,
                        steps = inout(reg) lda / 64 => _,
                        lda = in(reg) lda,
                        ldb = in(reg) 4 * PANEL,
                        step = in(reg) 16 * 4 * PANEL,
                        c = in(reg) block.0.as_mut_ptr(),
                        c2 = in(reg) block.0.as_mut_ptr().add(16 * 32),
                        ldc = in(reg) 128usize,
                        options(nostack),
                    );
                    for i in 0..32.min(rows.end - row) {
                        for v in 0..2 {
                            let acc = _mm512_load_si512(block.0.as_ptr().add(i * 32 + 16 * v).cast());
                            store(job, row + i, col + 16 * v, acc);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    use std::ops::Range;

    use super::Job;

    pub(super) unsafe fn vnni(_: &Job<'_>, _: usize, _: Range<usize>) {
        unreachable!("no VNNI off x86_64: Int8Kernel::for_rows never picks it")
    }

    pub(super) unsafe fn amx(_: &Job<'_>, _: usize, _: Range<usize>) {
        unreachable!("no AMX off x86_64: Int8Kernel::for_rows never picks it")
    }

    pub(super) unsafe fn quantize(_: &[f32], _: blaze_runtime::int8::InputQuant, _: &mut [u8]) -> (f32, u8) {
        unreachable!("no AVX-512 off x86_64: Int8Kernel::for_rows never picks a vector kernel")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows and a weight whose products reach every corner: negative and
    /// positive inputs, depths that are not multiples of 4 or 64, channel
    /// counts that are not multiples of 16 or 64.
    fn case(m: usize, k: usize, n: usize) -> (Vec<f32>, QWeight) {
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 7919 + 13) % 101) as f32 / 29.0 - 1.3).collect();
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 104_729 + 7) % 97) as f32 / 41.0 - 1.1).collect();
        (x, QWeight::quantize(&w, &[n, k]))
    }

    fn check(kernel: Int8Kernel) {
        if !kernel.runs_here() {
            eprintln!(
                "note: this CPU lacks the {} int8 kernel's instructions; its test is skipped here",
                kernel.name()
            );
            return;
        }
        // Panels of one to four vectors of channels; tiles of 12, 6 and
        // fewer rows.
        let shapes = [
            (1, 5, 3),
            (1, 784, 256),
            (7, 130, 70),
            (33, 64, 65),
            (40, 200, 10),
            (100, 3, 129),
            (150, 96, 200),
            (13, 50, 30),
            (25, 70, 100),
            (12, 9, 40),
        ];
        for (m, k, n) in shapes {
            for input in [InputQuant::Dynamic, InputQuant::Static { scale: 0.01, zero_point: 100 }] {
                let (x, w) = case(m, k, n);
                let (mut want, mut got) = (vec![0.0; m * n], vec![f32::NAN; m * n]);
                q::linear_int8(&x, m, &w, input, &mut want);
                linear_int8_on(kernel, &x, m, &w, input, &mut got);
                let bits = |v: &[f32]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&got) == bits(&want),
                    "{}: {m} x {k} x {n} ({input:?}) differs from the portable loop",
                    kernel.name()
                );
            }
        }
    }

    #[test]
    fn rows_quantize_as_the_scalar_loop_quantizes_them() {
        if !vnni_runs_here() {
            eprintln!("note: this CPU lacks AVX-512 VNNI; the vector quantization's test is skipped here");
            return;
        }
        // Ties at every half level, both signs, values past the range,
        // infinities and NaNs, and lengths around the vector's 16.
        let mut special: Vec<f32> = (-40..40).map(|i| i as f32 * 0.5).collect();
        special.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e30, -1e30, 0.0, -0.0, 300.0, -300.0]);
        let inputs = [
            InputQuant::Dynamic,
            InputQuant::Static { scale: 0.5, zero_point: 7 },
            InputQuant::Static { scale: 1.0, zero_point: 128 },
        ];
        for len in [1, 15, 16, 17, 33, special.len()] {
            for input in inputs {
                let row: Vec<f32> = special.iter().cycle().skip(len).take(len).copied().collect();
                let (scale, zp) = q::row_params(&row, input);
                let mut want = vec![0u8; len];
                q::quantize_row(&row, scale, zp, &mut want);
                let mut got = vec![9u8; len + 5];
                // SAFETY: VNNI implies AVX-512 F and BW.
                let params = unsafe { x86::quantize(&row, input, &mut got) };
                assert_eq!(params, (scale, zp), "{len} values, {input:?}");
                assert_eq!(&got[..len], &want[..], "{len} values, {input:?}");
                assert!(got[len..].iter().all(|&b| b == 0), "the padding is zeroed");
            }
        }
        // A finite row quantizes dynamically over its own range.
        let row: Vec<f32> = (0..50).map(|i| (i as f32 - 20.0) / 7.0).collect();
        let (scale, zp) = q::row_params(&row, InputQuant::Dynamic);
        let mut want = vec![0u8; 50];
        q::quantize_row(&row, scale, zp, &mut want);
        let mut got = vec![0u8; 64];
        // SAFETY: as above.
        assert_eq!(unsafe { x86::quantize(&row, InputQuant::Dynamic, &mut got) }, (scale, zp));
        assert_eq!(&got[..50], &want[..]);
    }

    #[test]
    fn the_vnni_kernel_gives_the_portable_loops_bits() {
        check(Int8Kernel::Vnni);
    }

    #[test]
    fn the_amx_kernel_gives_the_portable_loops_bits() {
        check(Int8Kernel::Amx);
    }

    #[test]
    fn convolutions_give_the_portable_loops_bits_on_every_kernel() {
        use blaze_runtime::Conv2dOptions;
        let cases = [
            ([2, 3, 9, 8], [3, 3], [1, 1], [1, 1], [1, 1], 1, 8),
            ([3, 4, 11, 7], [3, 2], [2, 1], [2, 0], [1, 2], 2, 6),
            ([1, 16, 13, 13], [3, 3], [1, 1], [0, 0], [1, 1], 1, 32),
            ([2, 8, 6, 40], [1, 5], [1, 2], [0, 2], [1, 1], 4, 12),
        ];
        for kernel in Int8Kernel::ALL {
            if !kernel.runs_here() {
                eprintln!(
                    "note: this CPU lacks the {} int8 kernel's instructions; its convolutions are not tested here",
                    kernel.name()
                );
                continue;
            }
            for (input_dims, kdims, stride, padding, dilation, groups, outs) in cases {
                let options = Conv2dOptions { stride, padding, dilation, groups };
                let shape = ConvShape { input: input_dims, kernel: kdims, options };
                let [n, c, _, _] = input_dims;
                let [oh, ow] = shape.output().unwrap();
                let x: Vec<f32> =
                    (0..input_dims.iter().product::<usize>()).map(|i| ((i * 7919) % 97) as f32 / 23.0 - 1.9).collect();
                let depth = c / groups * kdims[0] * kdims[1];
                let ws: Vec<QWeight> = (0..groups)
                    .map(|g| {
                        let v: Vec<f32> = (0..outs / groups * depth)
                            .map(|i| (((i + g * 31) * 104_729) % 89) as f32 / 37.0 - 1.2)
                            .collect();
                        QWeight::quantize(&v, &[outs / groups, depth])
                    })
                    .collect();
                let parts: Vec<&QWeight> = ws.iter().collect();
                for input in [InputQuant::Dynamic, InputQuant::Static { scale: 0.02, zero_point: 90 }] {
                    let (mut want, mut got) = (vec![0f32; n * outs * oh * ow], vec![f32::NAN; n * outs * oh * ow]);
                    q::conv2d_int8(&x, &shape, &parts, input, &mut want);
                    conv2d_int8_on(kernel, &x, &shape, &parts, input, &mut got);
                    let bits = |v: &[f32]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                    assert!(bits(&got) == bits(&want), "{}: {shape:?} ({input:?})", kernel.name());
                }
            }
        }
    }

    #[test]
    fn a_large_product_splits_across_threads_with_the_same_bits() {
        let kernel = Int8Kernel::for_rows(300);
        let (m, k, n) = (300, 512, 200);
        let (x, w) = case(m, k, n);
        let (mut want, mut got) = (vec![0.0; m * n], vec![0.0; m * n]);
        q::linear_int8(&x, m, &w, InputQuant::Dynamic, &mut want);
        // On a pool's thread, where the product is large enough to fork.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        assert!(pool.install(|| parallel::should_fork(m * n * k, PARALLEL_MIN)));
        pool.install(|| linear_int8_on(kernel, &x, m, &w, InputQuant::Dynamic, &mut got));
        assert!(got == want, "{}", kernel.name());
    }
}
