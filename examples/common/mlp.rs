//! The MLP 784-256-128-10 the training benchmarks time.

use blaze::prelude::*;

/// 784-256-128-10 with ReLU, as in the PyTorch benchmark scripts.
#[model(input = [784])]
pub struct Mlp {
    fc1: Linear<784, 256>,
    act1: Relu,
    fc2: Linear<256, 128>,
    act2: Relu,
    fc3: Linear<128, 10>,
}
