//! The CubeCL backend next to the wgpu backend on the same adapter: the
//! tensor matmul at 1024, 2048 and 4096 in GFLOP/s (with the device's
//! peak in `BLAZE_PEAK_GFLOPS`, also the share of it), the training steps
//! of the MLP, the CNN and the GPT example's model, and what autotuning
//! costs the first call of a shape class (a matmul) and the CNN's first
//! step (its convolutions, pooling and matmuls).
//!
//! ```text
//! cargo run --release --example cubecl_bench --features "cubecl wgpu"
//! cargo run --release --example cubecl_bench --features "cubecl wgpu" -- --sizes 512,1024
//! ```
//!
//! `--sizes` picks the matmuls (a software adapter takes about a minute per
//! 4096 product).

#[path = "common/cnn.rs"]
mod cnn;
#[path = "common/gpt_model.rs"]
mod gpt_model;
#[path = "common/gpu_bench.rs"]
mod gpu_bench;
#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use std::time::Instant;

use blaze::cubecl::{CubeCl, CubeDevice, CubeOptions};
use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use blaze::wgpu::{Wgpu, WgpuDevice};
use clap::Parser;
use gpu_bench::{cnn_step, gpt_step, matmul_gflops, mlp_step};

/// Seconds of one `[n, n]` product on a fresh device whose tuner starts
/// from `cache`, read back.
fn first_matmul(n: usize, cache: &std::path::Path) -> f64 {
    let dev = CubeDevice::open(CubeOptions { autotune_cache: Some(cache.to_owned()), ..CubeOptions::default() })
        .expect("the device opened once already");
    let a = Tensor::<CubeCl, 2>::ones([n, n], &dev);
    let start = Instant::now();
    std::hint::black_box(a.matmul(&a).narrow(0, 0, 1).narrow(1, 0, 1).sum().item());
    start.elapsed().as_secs_f64()
}

/// Seconds of the CNN's first training step (batch 64) on a fresh device
/// whose tuner starts from `cache`, read back.
fn first_cnn_step(cache: &std::path::Path) -> f64 {
    let dev = CubeDevice::open(CubeOptions { autotune_cache: Some(cache.to_owned()), ..CubeOptions::default() })
        .expect("the device opened once already");
    let mut model = <cnn::Cnn<CubeCl> as Block<CubeCl>>::init(&mut blaze::Rng::seed_from_u64(0), &dev);
    let x = Tensor::<CubeCl, 4>::ones([64, 1, 28, 28], &dev);
    let y = Tensor::<CubeCl, 1>::from_vec((0..64).map(|i| i % 10).collect::<Vec<i64>>(), [64], &dev);
    let start = Instant::now();
    let (out, cache) = model.forward_train(&x, &mut Ctx::train(0));
    let loss = cross_entropy(&out, &y, 0.0);
    let grads = model.backward_params(&cache, &loss.grad);
    Sgd::new(0.01).step(&mut model, &grads);
    std::hint::black_box(loss.item());
    start.elapsed().as_secs_f64()
}

/// The CubeCL backend beside the wgpu backend: matmuls, training steps,
/// autotune cold start.
#[derive(Parser)]
struct Args {
    /// The matmuls' sizes, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = size, default_value = "1024,2048,4096")]
    sizes: Vec<usize>,
}

/// One of `--sizes`, blanks around it allowed (`--sizes "512, 1024"`).
fn size(text: &str) -> Result<usize, std::num::ParseIntError> {
    text.trim().parse()
}

fn main() {
    let sizes = Args::parse().sizes;
    let cube = match CubeDevice::new() {
        Ok(d) => d,
        Err(e) => return println!("no CubeCL device, nothing to measure: {e}"),
    };
    let wgpu = match WgpuDevice::new() {
        Ok(d) => d,
        Err(e) => return println!("no wgpu device to compare with: {e}"),
    };
    println!("cubecl adapter: {}\nwgpu adapter:   {}", cube.adapter_name(), wgpu.adapter_name());
    let peak: Option<f64> = std::env::var("BLAZE_PEAK_GFLOPS").ok().and_then(|v| v.parse().ok());

    println!("\ntensor matmul, operands on the device (autotuned on the first call, then timed)");
    println!(
        "{:>6} {:>15} {:>15} {:>14}{}",
        "n",
        "cubecl GFLOP/s",
        "wgpu GFLOP/s",
        "cubecl/wgpu",
        if peak.is_some() { "   cubecl, wgpu % of peak" } else { "" }
    );
    for n in sizes {
        let reps = if n >= 2048 { 1 } else { 8 };
        let c = matmul_gflops::<CubeCl>(n, reps, &cube);
        let w = matmul_gflops::<Wgpu>(n, reps, &wgpu);
        let share = peak.map(|p| format!("   {:>5.1}%, {:>5.1}%", 100.0 * c / p, 100.0 * w / p)).unwrap_or_default();
        println!("{n:>6} {c:>15.1} {w:>15.1} {:>14.2}{share}", c / w);
    }

    println!("\ntraining steps, median ms (lower is better)");
    println!("{:>22} {:>10} {:>10} {:>14}", "", "cubecl", "wgpu", "wgpu/cubecl");
    let rows = [
        ("MLP, batch 128", mlp_step::<CubeCl>(&cube), mlp_step::<Wgpu>(&wgpu)),
        ("CNN, batch 64", cnn_step::<CubeCl>(&cube), cnn_step::<Wgpu>(&wgpu)),
        ("GPT, batch 8 (AdamW)", gpt_step::<CubeCl>(&cube, || 0).0, gpt_step::<Wgpu>(&wgpu, || 0).0),
    ];
    for (what, c, w) in rows {
        println!("{what:>22} {:>10.2} {:>10.2} {:>14.2}", 1e3 * c, 1e3 * w, w / c);
    }

    // A shape class no run above met, on devices whose tuners start from
    // an empty cache file, then from the one the first run wrote.
    let dir = std::env::temp_dir().join(format!("blaze-cubecl-bench-{}", std::process::id()));
    let cache = dir.join("autotune.tsv");
    let n = 768;
    let cold = first_matmul(n, &cache);
    let warm = first_matmul(n, &cache);
    println!("\nautotune cold start, first [{n}, {n}] product on a new device:");
    println!("  no cached choice (measures every candidate): {:>8.2} s", cold);
    println!("  the choice cached by that run:               {:>8.2} s", warm);
    let _ = std::fs::remove_file(&cache);
    let cold = first_cnn_step(&cache);
    let warm = first_cnn_step(&cache);
    println!("first CNN training step (batch 64) on a new device:");
    println!("  no cached choices (measures every candidate): {:>7.2} s", cold);
    println!("  the choices cached by that run:               {:>7.2} s", warm);
    let _ = std::fs::remove_dir_all(&dir);
}
