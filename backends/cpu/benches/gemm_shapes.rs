//! The products of training steps, and square ones, timed through
//! `Tensor::matmul` at 1 and 2 threads. `bench/torch_gemm.py` times the same
//! list in PyTorch and prints the same lines; `bench/gemm_rounds.sh`
//! alternates the two and reports the median ratio of each row.
//!
//! Run with `cargo bench -p blaze-cpu --bench gemm_shapes [-- FILTER]
//! [--dtype bf16 | --precision bf16]` (the rows whose name contains
//! `FILTER`; `--dtype bf16`: bf16 operands and results, summed in f32;
//! `--precision bf16` or `f16`: f32 operands and results, the products
//! under `autocast`, which rounds the operands). Each sample runs
//! on the thread pool it measures (the timing loop is inside `install`), as
//! PyTorch's calling thread runs its own products: a hop onto the pool per
//! call would cost more than a batch-1 product takes. The loop runs inside
//! `CpuDevice::run`, as `fit` runs its steps: the other threads poll for
//! work between products, as PyTorch's OpenMP threads spin between
//! parallel regions.

use std::time::Instant;

use blaze_cpu::{Cpu, CpuDevice};
use blaze_runtime::{DType, Device, Precision, Rng, Tensor, autocast};

#[path = "common/products.rs"]
mod products;
use products::SHAPES;

fn randn(shape: [usize; 3], dtype: DType, seed: u64) -> Tensor<Cpu, 3> {
    Tensor::normal_with(shape, 0.0, 1.0, &mut Rng::seed_from_u64(seed), &CpuDevice).to_dtype(dtype)
}

/// An operand of `rows x cols` per batch entry, stored transposed when `t`.
fn operand(batch: usize, rows: usize, cols: usize, t: bool, dtype: DType, seed: u64) -> Tensor<Cpu, 3> {
    if t { randn([batch, cols, rows], dtype, seed).transpose(1, 2) } else { randn([batch, rows, cols], dtype, seed) }
}

/// GFLOP/s of `f` (`flops` a call): the median of 11 samples of about 20 ms.
fn gflops<T>(flops: f64, f: impl Fn() -> T) -> f64 {
    let once = Instant::now();
    drop(f());
    let reps = (0.02 / once.elapsed().as_secs_f64().max(1e-7)).clamp(1.0, 20_000.0) as usize;
    let mut rates: Vec<f64> = (0..11)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                drop(f());
            }
            flops * reps as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() {
    let info = blaze_cpu::cpu_info();
    println!(
        "CPU: {:?} family {:#x} model {:#x}, L1d {} KiB, L2 {} KiB, L3 {} MiB",
        info.vendor,
        info.family,
        info.model,
        info.l1d >> 10,
        info.l2 >> 10,
        info.l3 >> 20
    );
    // `cargo bench` passes `--bench`; `--dtype D` picks the dtype; any
    // other argument filters by name.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        let at = args.iter().position(|a| a == flag)?;
        Some((at, args.get(at + 1).unwrap_or_else(|| panic!("{flag}: expected a value")).clone()))
    };
    let (dtype_flag, precision_flag) = (value_of("--dtype"), value_of("--precision"));
    let dtype = match dtype_flag.as_ref().map(|(_, v)| v.as_str()) {
        None | Some("f32") => DType::F32,
        Some("bf16") => DType::BF16,
        Some(other) => panic!("--dtype {other:?}: expected f32 or bf16"),
    };
    let precision: Precision = precision_flag.as_ref().map_or(Ok(Precision::F32), |(_, v)| v.parse()).unwrap();
    assert!(dtype == DType::F32 || precision == Precision::F32, "--dtype bf16 and --precision: pick one");
    let values = [&dtype_flag, &precision_flag].map(|f| f.as_ref().map(|(at, _)| at + 1));
    let filter = args
        .iter()
        .enumerate()
        .find(|&(i, a)| !a.starts_with("--") && !values.contains(&Some(i)))
        .map_or_else(String::new, |(_, a)| a.clone());
    if precision != Precision::F32 {
        let kernel = if blaze_cpu::bf16_kernel_runs_here() && precision == Precision::Bf16 {
            blaze_cpu::bf16_plan().to_string()
        } else {
            format!("rounded, then f32: {}", blaze_cpu::gemm_plan())
        };
        println!("GEMM: f32 operands rounded to {precision}, f32 results, {kernel}");
    } else if dtype == DType::BF16 {
        if blaze_cpu::bf16_kernel_runs_here() {
            println!("GEMM: bf16, {}", blaze_cpu::bf16_plan());
        } else {
            println!("GEMM: bf16 widened to f32 (no AVX512-BF16), {}", blaze_cpu::gemm_plan());
        }
    } else {
        println!("GEMM: {}", blaze_cpu::gemm_plan());
    }
    println!("{:<16} {:>5} {:>5} {:>5} {:>5} {:>6}  {:>8}", "product", "batch", "m", "k", "n", "layout", "GFLOP/s");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
        for s in SHAPES.iter().filter(|s| s.name.contains(&filter)) {
            let a = operand(s.batch, s.m, s.k, s.lhs_t, dtype, 1);
            let b = operand(s.batch, s.k, s.n, s.rhs_t, dtype, 2);
            let flops = 2.0 * (s.batch * s.m * s.k * s.n) as f64;
            let rate = pool.install(|| CpuDevice.run(|| gflops(flops, || autocast(precision, || a.matmul(&b)))));
            let layout = format!("{}{}", if s.lhs_t { 't' } else { 'n' }, if s.rhs_t { 't' } else { 'n' });
            println!(
                "{:<16} {:>5} {:>5} {:>5} {:>5} {:>6}  {rate:8.1}  {threads}t",
                s.name, s.batch, s.m, s.k, s.n, layout
            );
        }
    }
}
