//! The small CNN the training benchmarks time (batch 64 of 28x28 images).

use blaze::prelude::*;

/// Two 3x3 convolutions with ReLU and 2x2 max pooling, then a linear
/// layer, as in `bench/torch_train.py`.
#[model(input = [1, 28, 28])]
pub struct Cnn {
    conv1: Conv2d<1, 16, 3>,
    act1: Relu,
    pool1: MaxPool2d<2>,
    conv2: Conv2d<16, 32, 3>,
    act2: Relu,
    pool2: MaxPool2d<2>,
    flat: Flatten,
    fc: Linear<800, 10>,
}
