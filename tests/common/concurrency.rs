//! One model serving many threads: inference from several threads at once
//! gives, bit for bit, what one thread gives.

use blaze::Backend;
use blaze::nn::{Block, Ctx, sgd_step};
use blaze::prelude::*;

/// A few SGD steps on `batches`, so the weights are a trained model's
/// rather than the initialisation.
pub fn train_a_little<B, M>(model: &mut M, batches: &[(Tensor<B, 4>, Tensor<B, 1>)])
where
    B: Backend,
    M: Block<B, Input = Tensor<B, 4>, Output = Tensor<B, 2>>,
{
    let mut ctx = Ctx::train(0);
    for (x, y) in batches {
        let (logits, cache) = model.forward_train(x, &mut ctx);
        let loss = blaze::loss::cross_entropy(&logits, y, 0.0);
        let grads = model.backward_params(&cache, &loss.grad);
        sgd_step(model, &grads, 0.05);
    }
}

/// Runs `model.forward` from `threads` threads at once, `rounds` times
/// each (each thread starting at another input), and checks every result
/// against the one-thread result, bit for bit.
pub fn serve_from_threads<B, M>(model: &M, inputs: &[Tensor<B, 4>], threads: usize, rounds: usize)
where
    B: Backend,
    M: Block<B, Input = Tensor<B, 4>, Output = Tensor<B, 2>> + Sync,
{
    let expected: Vec<Vec<u32>> = inputs.iter().map(|x| bits(&model.forward(x))).collect();
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (start, expected) = (&start, &expected);
            s.spawn(move || {
                start.wait();
                for r in 0..rounds {
                    let i = (t + r) % inputs.len();
                    let got = bits(&model.forward(&inputs[i]));
                    assert!(got == expected[i], "thread {t}, round {r}, input {i}: not what one thread computed");
                }
            });
        }
    });
}

fn bits<B: Backend>(t: &Tensor<B, 2>) -> Vec<u32> {
    t.to_vec::<f32>().iter().map(|v| v.to_bits()).collect()
}
