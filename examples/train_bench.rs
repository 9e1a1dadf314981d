//! Training speed on random data: the MLP 784-256-128-10 at batch 128 and a
//! small CNN at batch 64 (SGD, cross-entropy), plus batch-1 MLP inference
//! latency. `bench/torch_train.py` does the same in PyTorch.
//! `--precision bf16` (or `f16`) trains with the products in that
//! precision (`bench/torch_train.py --autocast bf16`).
//!
//! ```text
//! cargo run --release --example train_bench [-- --precision bf16]
//! ```

#[path = "common/cnn.rs"]
mod cnn;
#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use cnn::Cnn;
use mlp::Mlp;
use timing::median;

/// Samples per second of SGD steps of `model` on one random batch, its
/// products in `precision`.
fn train_speed<M, const DI: usize>(mut model: M, x: Tensor<Cpu, DI>, steps: usize, precision: Precision) -> f64
where
    M: Block<Cpu, Input = Tensor<Cpu, DI>, Output = Tensor<Cpu, 2>>,
{
    let n = x.shape()[0];
    let y = Tensor::<Cpu, 1>::from_vec((0..n as i64).map(|i| i % 10).collect(), [n], &CpuDevice);
    let mut opt = Sgd::new(0.01);
    let mut ctx = Ctx::train(0);
    let mut step = || {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let loss = cross_entropy(&logits, &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        opt.step(&mut model, &grads);
    };
    // On the backend's own thread, as `fit` runs its loop.
    CpuDevice.run(|| autocast(precision, || {
        for _ in 0..5 {
            step();
        }
        let per_chunk = (steps / 10).max(1);
        let secs = median(10, || (0..per_chunk).for_each(|_| step()));
        (n * per_chunk) as f64 / secs
    }))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let precision = match args.iter().position(|a| a == "--precision") {
        Some(i) => match args.get(i + 1).map(|p| p.parse::<Precision>()) {
            Some(Ok(p)) => p,
            Some(Err(e)) => panic!("--precision: {e}"),
            None => panic!("--precision: expected f32, bf16 or f16"),
        },
        None => Precision::F32,
    };
    blaze::cpu::tune_allocator_for_training();
    let dev = CpuDevice;
    println!("products in {precision}");
    let mlp = train_speed(Mlp::new_seeded(0, &dev), Tensor::<Cpu, 2>::rand_normal([128, 784], &dev), 400, precision);
    println!("mlp 784-256-128-10 train, batch 128: {mlp:>10.0} samples/s");
    let cnn =
        train_speed(Cnn::new_seeded(0, &dev), Tensor::<Cpu, 4>::rand_normal([64, 1, 28, 28], &dev), 60, precision);
    println!("cnn train, batch 64:                 {cnn:>10.0} samples/s");
    let model = Mlp::new_seeded(0, &dev);
    let x = Tensor::<Cpu, 2>::rand_normal([1, 784], &dev);
    let lat = median(21, || {
        for _ in 0..200 {
            std::hint::black_box(model.forward(&x));
        }
    }) / 200.0;
    println!("mlp inference, batch 1:              {:>10.2} us", lat * 1e6);
}
