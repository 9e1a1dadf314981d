//! One trained model serves inference from 8 threads at once, with the
//! results one thread gets, bit for bit (the wgpu twin is in
//! `backends/wgpu/tests/integration/models.rs`).

use crate::common;
use crate::serving as concurrency;

use blaze::prelude::*;
use common::LeNet;

#[test]
fn one_model_serves_eight_threads_as_it_serves_one() {
    let mut rng = blaze::Rng::seed_from_u64(7);
    let mut model = LeNet::<Cpu>::new_seeded(0, &CpuDevice);
    let batches: Vec<(Tensor<Cpu, 4>, Tensor<Cpu, 1>)> = (0..4)
        .map(|_| {
            let x = Tensor::normal_with([16, 1, 28, 28], 0.0, 1.0, &mut rng, &CpuDevice);
            let y = Tensor::from_vec((0..16).map(|i| i % 10).collect::<Vec<i64>>(), [16], &CpuDevice);
            (x, y)
        })
        .collect();
    concurrency::train_a_little(&mut model, &batches);
    // Batch sizes from one sample (no parallel split) to enough for the
    // GEMM and the convolution to split their work across threads.
    let inputs: Vec<Tensor<Cpu, 4>> = [1, 3, 16, 64]
        .into_iter()
        .map(|n| Tensor::normal_with([n, 1, 28, 28], 0.0, 1.0, &mut rng, &CpuDevice))
        .collect();
    concurrency::serve_from_threads(&model, &inputs, 8, 12);
}
