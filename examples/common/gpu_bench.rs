//! The GPU benchmarks' measurements, generic over the backend: the
//! tensor matmul in GFLOP/s on device-resident operands, and training
//! steps of the MLP, the CNN and the GPT example's model, each
//! synchronised by reading a number back.

use blaze::Backend;
use blaze::loss::cross_entropy;
use blaze::nn::{Block, Ctx};
use blaze::optim::{Optimizer, Sgd};
use blaze::prelude::*;

use crate::cnn::Cnn;
use crate::gpt_model::{CONTEXT, Gpt, VOCAB};
use crate::mlp::Mlp;
use crate::timing::median;

/// GFLOP/s of `reps` chained `[n, n]` products on `B`, synchronised by
/// reading one number back.
pub fn matmul_gflops<B: Backend>(n: usize, reps: usize, device: &B::Device) -> f64 {
    let a =
        Tensor::<B, 2>::from_data(Tensor::<Cpu, 2>::rand_normal([n, n], &CpuDevice).to_data(), device).expect("upload");
    let b = a.mul_scalar(1.0 / n as f64);
    let run = || {
        let mut c = a.clone();
        for _ in 0..reps {
            c = c.matmul(&b);
        }
        std::hint::black_box(c.narrow(0, 0, 1).narrow(1, 0, 1).sum().item());
    };
    run();
    2.0 * (n * n * n * reps) as f64 / median(5, run) / 1e9
}

/// Median seconds of one MLP training step (forward, loss, backward,
/// SGD) at batch 128 on `B`, synchronised by reading the loss.
pub fn mlp_step<B: Backend>(device: &B::Device) -> f64 {
    let mut model = <Mlp<B> as Block<B>>::init(&mut blaze::Rng::seed_from_u64(0), device);
    let x = Tensor::<B, 2>::from_data(Tensor::<Cpu, 2>::rand_normal([128, 784], &CpuDevice).to_data(), device)
        .expect("upload");
    let y = Tensor::<B, 1>::from_vec((0..128).map(|i| i % 10).collect::<Vec<i64>>(), [128], device);
    let mut sgd = Sgd::new(0.01);
    let mut step = || {
        let (out, cache) = model.forward_train(&x, &mut Ctx::train(0));
        let loss = cross_entropy(&out, &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        sgd.step(&mut model, &grads);
        std::hint::black_box(loss.item());
    };
    step();
    median(9, step)
}

/// One training step of the GPT example's model (batch 8, context 64,
/// AdamW) on `B`, synchronised by reading the loss: its median seconds,
/// and `count()` after one step less before it (dispatches on wgpu).
pub fn gpt_step<B: Backend>(device: &B::Device, count: impl Fn() -> u64) -> (f64, u64) {
    let mut model = <Gpt<B> as blaze::nn::Graph<B>>::init(&mut blaze::Rng::seed_from_u64(0), device);
    let (n, v) = (8, VOCAB as i64);
    let ids: Vec<i64> = (0..n * CONTEXT).map(|i| (i * 7 % VOCAB) as i64).collect();
    let x = Tensor::<B, 2>::from_vec(ids.clone(), [n, CONTEXT], device);
    let y = Tensor::<B, 1>::from_vec(ids.iter().map(|i| (i + 1) % v).collect::<Vec<i64>>(), [n * CONTEXT], device);
    let mut opt = blaze::optim::Adam::adamw(1e-3);
    let mut step = || {
        let (logits, cache) = model.forward_train(&x, &mut Ctx::train(0));
        let loss = cross_entropy(&logits.reshape([-1, v]), &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad.reshape(logits.shape()));
        opt.step(&mut model, &grads);
        std::hint::black_box(loss.item());
    };
    step();
    let before = count();
    step();
    let dispatches = count() - before;
    (median(3, step), dispatches)
}

/// Median seconds of one training step of the CNN (two 3x3
/// convolutions, pooling, a linear layer) at batch 64 on `B`.
pub fn cnn_step<B: Backend>(device: &B::Device) -> f64 {
    let mut model = <Cnn<B> as Block<B>>::init(&mut blaze::Rng::seed_from_u64(0), device);
    let x = Tensor::<B, 4>::from_data(Tensor::<Cpu, 4>::rand_normal([64, 1, 28, 28], &CpuDevice).to_data(), device)
        .expect("upload");
    let y = Tensor::<B, 1>::from_vec((0..64).map(|i| i % 10).collect::<Vec<i64>>(), [64], device);
    let mut sgd = Sgd::new(0.01);
    let mut step = || {
        let (out, cache) = model.forward_train(&x, &mut Ctx::train(0));
        let loss = cross_entropy(&out, &y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        sgd.step(&mut model, &grads);
        std::hint::black_box(loss.item());
    };
    step();
    median(5, step)
}
