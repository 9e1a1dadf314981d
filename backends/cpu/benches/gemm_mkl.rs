//! Blaze's GEMM against MKL's `sgemm` in one process, alternating sample
//! by sample: the products of `gemm_shapes` (the same list), each row the
//! medians of 21 paired samples of about 10 ms, the median of the pairs'
//! ratios (`ratio`, MKL's time over ours: above 1 is faster) and the ratio
//! of each side's fastest sample (`best`, what a quiet machine gives). Two
//! processes run one after the other (`bench/gemm_rounds.sh`) drift apart
//! on a shared machine by more than the gaps being measured; two samples
//! taken milliseconds apart see the same machine.
//!
//! MKL comes from PyTorch's `libtorch_cpu.so`, which carries it (the path
//! from `BLAZE_MKL_LIB`, or asked of `python3 -c "import torch"`); without
//! it the bench says so and exits. MKL runs on the calling thread
//! (`MKL_Set_Num_Threads_Local`) and its OpenMP threads; Blaze on a rayon
//! pool of the same size inside `CpuDevice::run`, as `fit` runs its steps.
//! Each row first checks that both products agree. Batched rows call
//! `sgemm` once per batch entry.
//!
//! Run with `cargo bench -p blaze-cpu --bench gemm_mkl [-- FILTER]`.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::time::{Duration, Instant};

use blaze_cpu::{Cpu, CpuDevice};
use blaze_runtime::{Device, Rng, Tensor};

#[path = "common/products.rs"]
mod products;
use products::{SHAPES, Shape};

/// Fortran `sgemm` (column-major, every argument by pointer).
type Sgemm = unsafe extern "C" fn(
    transa: *const c_char,
    transb: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    alpha: *const f32,
    a: *const f32,
    lda: *const c_int,
    b: *const f32,
    ldb: *const c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: *const c_int,
);
type SetThreadsLocal = unsafe extern "C" fn(threads: c_int) -> c_int;

struct Mkl {
    sgemm: Sgemm,
    set_threads: SetThreadsLocal,
}

impl Mkl {
    /// The library `BLAZE_MKL_LIB` names, else PyTorch's, or why neither loads.
    fn load() -> Result<Self, String> {
        let path = match std::env::var("BLAZE_MKL_LIB") {
            Ok(path) => path,
            Err(_) => {
                let out = std::process::Command::new("python3")
                    .args(["-c", "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cpu.so'))"])
                    .output()
                    .map_err(|e| format!("python3: {e}"))?;
                if !out.status.success() {
                    return Err("python3 cannot import torch (`pip install torch`, or set BLAZE_MKL_LIB)".into());
                }
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
        };
        let c_path = CString::new(path.clone()).map_err(|_| format!("{path}: not a path"))?;
        // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols' types
        // are MKL's documented Fortran and service interfaces.
        unsafe {
            let lib = libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if lib.is_null() {
                return Err(format!("{path}: {}", CStr::from_ptr(libc::dlerror()).to_string_lossy()));
            }
            let symbol = |name: &CStr| -> Result<*mut c_void, String> {
                let f = libc::dlsym(lib, name.as_ptr());
                if f.is_null() { Err(format!("{path}: no symbol {name:?} (not an MKL build?)")) } else { Ok(f) }
            };
            Ok(Mkl {
                sgemm: std::mem::transmute::<*mut c_void, Sgemm>(symbol(c"sgemm")?),
                set_threads: std::mem::transmute::<*mut c_void, SetThreadsLocal>(symbol(c"MKL_Set_Num_Threads_Local")?),
            })
        }
    }

    /// `c = a b` per batch entry, row-major, each operand stored as
    /// `gemm_shapes` stores it (`t`: the transpose of a row-major matrix).
    fn matmul(&self, s: &Shape, a: &[f32], b: &[f32], c: &mut [f32]) {
        // Row-major `c = a b` is column-major `c^T = b^T a^T`: MKL's first
        // operand is our `b`. A row-major `k x n` read column-major is
        // `b^T` already (no transpose, leading dim n); stored transposed it
        // needs one (leading dim k).
        let (tb, ldb) = if s.rhs_t { (c"T", s.k) } else { (c"N", s.n) };
        let (ta, lda) = if s.lhs_t { (c"T", s.m) } else { (c"N", s.k) };
        let int = |v: usize| v as c_int;
        let (m, n, k, lda, ldb, ldc) = (int(s.n), int(s.m), int(s.k), int(lda), int(ldb), int(s.n));
        let (one, zero) = (1.0f32, 0.0f32);
        for ((a, b), c) in a.chunks(s.m * s.k).zip(b.chunks(s.k * s.n)).zip(c.chunks_mut(s.m * s.n)) {
            // SAFETY: each slice holds one batch entry of the sizes passed.
            unsafe {
                (self.sgemm)(
                    tb.as_ptr(),
                    ta.as_ptr(),
                    &m,
                    &n,
                    &k,
                    &one,
                    b.as_ptr(),
                    &ldb,
                    a.as_ptr(),
                    &lda,
                    &zero,
                    c.as_mut_ptr(),
                    &ldc,
                )
            }
        }
    }
}

/// A copy of `values` whose first one starts a 64-byte cache line.
fn aligned(values: &[f32]) -> Aligned {
    let mut buffer = vec![0.0f32; values.len() + 16];
    let skip = (buffer.as_ptr() as usize).wrapping_neg() % 64 / 4;
    buffer[skip..skip + values.len()].copy_from_slice(values);
    Aligned { buffer, skip, len: values.len() }
}

/// Values at a cache-line boundary inside a longer buffer.
struct Aligned {
    buffer: Vec<f32>,
    skip: usize,
    len: usize,
}

impl std::ops::Deref for Aligned {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buffer[self.skip..self.skip + self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buffer[self.skip..self.skip + self.len]
    }
}

/// Seconds per call of `f`, over `reps` calls.
fn per_call(reps: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_secs_f64() / reps as f64
}

/// Paired samples per row.
const SAMPLES: usize = 21;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mkl = match Mkl::load() {
        Ok(mkl) => mkl,
        Err(why) => {
            println!("gemm_mkl: no MKL to compare against ({why}); nothing measured");
            return;
        }
    };
    let info = blaze_cpu::cpu_info();
    println!(
        "CPU: {:?} family {:#x} model {:#x}; GEMM: {}",
        info.vendor,
        info.family,
        info.model,
        blaze_cpu::gemm_plan()
    );
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--")).unwrap_or_default();
    println!(
        "{:<16} {:>20} {:>6} {:>3} {:>7} {:>7} {:>6} {:>6}",
        "product", "batch x m x k x n", "layout", "thr", "Blaze", "MKL", "ratio", "best"
    );
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
        // SAFETY: a plain setter of MKL's thread count for this thread.
        unsafe { (mkl.set_threads)(threads as c_int) };
        for s in SHAPES.iter().filter(|s| s.name.contains(&filter)) {
            // Operands as `gemm_shapes` makes them (the backend's own
            // storage, cache-line aligned), and MKL's copies aligned as
            // PyTorch's allocator aligns them.
            let operand = |rows, cols, t, seed| {
                let dims = if t { [s.batch, cols, rows] } else { [s.batch, rows, cols] };
                let x = Tensor::<Cpu, 3>::normal_with(dims, 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice);
                let values = aligned(&x.to_vec::<f32>());
                (if t { x.transpose(1, 2) } else { x }, values)
            };
            let ((a, a_vals), (b, b_vals)) = (operand(s.m, s.k, s.lhs_t, 1), operand(s.k, s.n, s.rhs_t, 2));
            let mut c = aligned(&vec![0.0f32; s.batch * s.m * s.n]);
            let ours: Vec<f32> = pool.install(|| a.matmul(&b)).to_vec();
            mkl.matmul(s, &a_vals, &b_vals, &mut c);
            let scale = c.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1.0);
            let worst = ours.iter().zip(c.iter()).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
            assert!(
                worst <= 1e-4 * scale * (s.k as f32).sqrt(),
                "{}: Blaze and MKL differ by {worst} (largest |c| {scale})",
                s.name
            );

            // Calls per sample: about 10 ms of MKL.
            let once = per_call(1, || mkl.matmul(s, &a_vals, &b_vals, &mut c));
            let reps = (0.01 / once.max(1e-7)).clamp(1.0, 20_000.0) as usize;
            let (mut blaze_t, mut mkl_t, mut ratios) = (vec![], vec![], vec![]);
            for _ in 0..SAMPLES {
                let ours = pool.install(|| CpuDevice.run(|| per_call(reps, || drop(a.matmul(&b)))));
                // Each side's idle threads settle before the other runs:
                // our pollers stop with the stretch (rayon's threads then
                // sleep within microseconds), while OpenMP's spin for
                // `GOMP_SPINCOUNT` (300 000) pauses, several milliseconds,
                // and took a core from our next sample at 2 ms. The same
                // pause on both sides: after an idle spell a core may run
                // slower for a while, and the side that follows the longer
                // pause read 3-5% slow.
                std::thread::sleep(Duration::from_millis(20));
                let theirs = per_call(reps, || mkl.matmul(s, &a_vals, &b_vals, &mut c));
                std::thread::sleep(Duration::from_millis(20));
                blaze_t.push(ours);
                mkl_t.push(theirs);
                ratios.push(theirs / ours);
            }
            let flops = 2.0 * (s.batch * s.m * s.k * s.n) as f64;
            let layout = format!("{}{}", if s.lhs_t { 't' } else { 'n' }, if s.rhs_t { 't' } else { 'n' });
            let best = |t: &[f64]| t.iter().copied().fold(f64::INFINITY, f64::min);
            let best_ratio = best(&mkl_t) / best(&blaze_t);
            println!(
                "{:<16} {:>20} {:>6} {:>2}t {:7.1} {:7.1} {:6.2} {best_ratio:6.2}",
                s.name,
                format!("{}x{}x{}x{}", s.batch, s.m, s.k, s.n),
                layout,
                threads,
                flops / median(blaze_t) / 1e9,
                flops / median(mkl_t) / 1e9,
                median(ratios)
            );
        }
    }
}
