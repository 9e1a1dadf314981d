//! Tape overhead: the same MLP training step (784-256-128-10, batch 128,
//! cross-entropy, SGD) through `Autodiff<Cpu>` and through the backward
//! pass `#[model]` generates. Prints both step times and their ratio.
//!
//! ```text
//! cargo run --release --example tape_bench
//! ```

#[path = "common/mlp.rs"]
mod mlp;
#[path = "common/timing.rs"]
mod timing;

use blaze::Rng;
use blaze::autodiff::{Autodiff, track};
use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;
use mlp::Mlp;
use timing::median;

/// Median step time after 10 warm-up steps, on the backend's own thread as
/// `fit` runs its loop.
fn median_step(mut step: impl FnMut() + Send) -> f64 {
    CpuDevice.run(|| {
        for _ in 0..10 {
            step();
        }
        median(60, step)
    })
}

fn main() {
    blaze::cpu::tune_allocator_for_training();
    let x = Tensor::<Cpu, 2>::rand_normal([128, 784], &CpuDevice);
    let y = Tensor::<Cpu, 1>::from_vec((0..128).map(|i| i % 10).collect::<Vec<i64>>(), [128], &CpuDevice);

    let mut model = Mlp::<Cpu>::init(&mut Rng::seed_from_u64(0), &CpuDevice);
    let mut opt = Sgd::new(0.01);
    let mut ctx = Ctx::train(0);
    let generated = median_step(|| {
        let (logits, cache) = model.forward_train(&x, &mut ctx);
        let grads = model.backward_params(&cache, &cross_entropy(&logits, &y, 0.0).grad);
        opt.step(&mut model, &grads);
    });

    let mut taped = Mlp::<Autodiff<Cpu>>::init(&mut Rng::seed_from_u64(0), &CpuDevice);
    track(&mut taped);
    let mut opt = Sgd::new(0.01);
    let (xa, ya) = (Tensor::from_inner(x.clone()), Tensor::from_inner(y.clone()));
    let tape = median_step(|| {
        let loss = cross_entropy(&taped.forward(&xa), &ya, 0.0);
        loss.value.backward().step(&mut taped, &mut opt);
    });

    println!("generated backward: {:8.1} us per step", generated * 1e6);
    println!("tape (Autodiff):    {:8.1} us per step", tape * 1e6);
    println!("tape / generated:   {:8.2}", tape / generated);
}
