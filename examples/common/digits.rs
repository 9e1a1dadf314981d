//! The models `examples/mnist.rs` trains, shared with the ONNX export
//! tests: a CNN and an MLP for each image size (models are statically
//! shaped, so 8x8 digits and 28x28 MNIST each have their own structs).

use blaze::prelude::*;

/// For 8x8 digits: two 3x3 convolutions, each followed by 2x2 max pooling.
#[model(input = [1, 8, 8])]
pub struct DigitsCnn {
    #[layer(padding = 1)]
    conv1: Conv2d<1, 16, 3>, // -> [16, 8, 8]
    act1: Relu,
    pool1: MaxPool2d<2>, // -> [16, 4, 4]
    #[layer(padding = 1)]
    conv2: Conv2d<16, 32, 3>, // -> [32, 4, 4]
    act2: Relu,
    pool2: MaxPool2d<2>, // -> [32, 2, 2]
    flat: Flatten,
    fc: Linear<128, 10>,
}

/// For 8x8 digits: one hidden layer.
#[model(input = [1, 8, 8])]
pub struct DigitsMlp {
    flat: Flatten,
    fc1: Linear<64, 128>,
    act: Relu,
    fc2: Linear<128, 10>,
}

/// For 28x28 MNIST: the CNN of the speed benchmark.
#[model(input = [1, 28, 28])]
pub struct MnistCnn {
    conv1: Conv2d<1, 16, 3>, // -> [16, 26, 26]
    act1: Relu,
    pool1: MaxPool2d<2>,      // -> [16, 13, 13]
    conv2: Conv2d<16, 32, 3>, // -> [32, 11, 11]
    act2: Relu,
    pool2: MaxPool2d<2>, // -> [32, 5, 5]
    flat: Flatten,
    fc: Linear<800, 10>,
}

/// For 28x28 MNIST: the MLP 784-256-128-10.
#[model(input = [1, 28, 28])]
pub struct MnistMlp {
    flat: Flatten,
    fc1: Linear<784, 256>,
    act1: Relu,
    fc2: Linear<256, 128>,
    act2: Relu,
    fc3: Linear<128, 10>,
}
